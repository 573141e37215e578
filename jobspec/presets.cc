// Built-in presets: public HuggingFace config.json texts (preset_configs.inc)
// read through ParseHfConfig once, on first use.
#include "jobspec/presets.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "jobspec/hf_config.h"

namespace oomguard {
namespace {

struct PresetEntry {
  std::string_view name;          // Lookup key, lower case with '-'.
  std::string_view display_name;  // ModelSpec.name.
  std::string_view description;
  std::string_view config_json;  // The model's HF config.json.
};

#include "jobspec/preset_configs.inc"

// Lookup form: lower case, with '_' and '.' read as '-', surrounding
// whitespace dropped.
std::string NormalizeName(std::string_view name) {
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front())))
    name.remove_prefix(1);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.remove_suffix(1);
  std::string normalized;
  normalized.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == '.') c = '-';
    normalized.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return normalized;
}

const PresetEntry* FindEntry(std::string_view name) {
  const std::string wanted = NormalizeName(name);
  for (const PresetEntry& entry : kPresetTable) {
    if (NormalizeName(entry.name) == wanted || NormalizeName(entry.display_name) == wanted) {
      return &entry;
    }
  }
  return nullptr;
}

std::vector<PresetInfo> BuildPresetList() {
  std::vector<PresetInfo> presets;
  for (const PresetEntry& entry : kPresetTable) {
    presets.push_back({std::string(entry.name), std::string(entry.description)});
  }
  std::sort(presets.begin(), presets.end(),
            [](const PresetInfo& a, const PresetInfo& b) { return a.name < b.name; });
  return presets;
}

std::string KnownNames() {
  std::vector<std::string> names;
  for (const PresetInfo& preset : ListPresets()) names.push_back(preset.name);
  return absl::StrJoin(names, ", ");
}

// Every preset's ModelSpec, parsed once (index = position in kPresetTable),
// so lookups on the service's hot path copy instead of re-parsing JSON.
const std::vector<absl::StatusOr<v1::ModelSpec>>& ParsedPresets() {
  static const auto* const kParsed = [] {
    auto* parsed = new std::vector<absl::StatusOr<v1::ModelSpec>>();
    for (const PresetEntry& entry : kPresetTable) {
      absl::StatusOr<v1::ModelSpec> model = ParseHfConfig(entry.config_json);
      if (model.ok()) {
        model->set_name(std::string(entry.display_name));
      } else {
        // Preset data is compiled in; a failure here is a bug in the table.
        model = absl::InternalError(
            absl::StrCat("preset \"", std::string(entry.name), "\": ", model.status().message()));
      }
      parsed->push_back(std::move(model));
    }
    return parsed;
  }();
  return *kParsed;
}

}  // namespace

const std::vector<PresetInfo>& ListPresets() {
  static const std::vector<PresetInfo>* const kPresets =
      new std::vector<PresetInfo>(BuildPresetList());
  return *kPresets;
}

absl::StatusOr<v1::ModelSpec> FindPreset(std::string_view name) {
  const PresetEntry* entry = FindEntry(name);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown preset ",
                                            Quote(absl::string_view(name.data(), name.size())),
                                            "; known presets: ", KnownNames()));
  }
  return ParsedPresets()[entry - kPresetTable];
}

}  // namespace oomguard
