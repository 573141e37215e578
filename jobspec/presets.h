// Built-in model presets: public model shapes, stored as HuggingFace
// config.json data and read through ParseHfConfig.
#ifndef OOMGUARD_JOBSPEC_PRESETS_H_
#define OOMGUARD_JOBSPEC_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

struct PresetInfo {
  std::string name;         // Lookup key, e.g. "deepseek-v3".
  std::string description;  // One line: family, total and active params.
};

// All presets, sorted by name.
const std::vector<PresetInfo>& ListPresets();

// The model of preset `name` (case-insensitive). NotFound (message lists
// the known names) for an unknown name.
absl::StatusOr<v1::ModelSpec> FindPreset(std::string_view name);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_PRESETS_H_
