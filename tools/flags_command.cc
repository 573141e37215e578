// `oomguard flags` (see flags_command.h).
#include "tools/flags_command.h"

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jobspec/flag_classification.h"
#include "nlohmann/json.hpp"

namespace oomguard {
namespace {

constexpr char kUsage[] =
    "usage: oomguard flags [--json] [--class modelled|no-memory-effect|not-modelled|refused|"
    "unknown] [--FLAG ...] [-- --FLAG ...]";

// The class a `--class` value names ("no-memory-effect").
std::optional<FlagClass> ClassNamed(const std::string& value) {
  for (FlagClass c : {FlagClass::kModelled, FlagClass::kNoMemoryEffect, FlagClass::kNotModelled,
                      FlagClass::kRefused, FlagClass::kUnknown}) {
    std::string name(FlagClassName(c));
    for (char& ch : name) {
      if (ch == ' ') ch = '-';
    }
    if (name == value) return c;
  }
  return std::nullopt;
}

// The JobSpec fields a modelled flag sets, or what it does without one.
std::string FieldsOrReason(const FlagClassification& flag) {
  if (flag.flag_class != FlagClass::kModelled) return flag.reason;
  if (flag.fields.empty())
    return "read and checked with the other flags; sets no JobSpec field of its own";
  return absl::StrJoin(flag.fields, ", ");
}

std::string FormatText(const std::vector<FlagClassification>& flags) {
  std::string out = absl::StrCat("# Megatron-LM flags classified at Megatron-Core ",
                                 kSupportedMegatronCoreVersion, " (NVIDIA/Megatron-LM ",
                                 kSupportedMegatronLmCommit, ")\n");
  std::map<std::string, int> counts;
  for (const FlagClassification& flag : flags) {
    absl::StrAppendFormat(&out, "%-48s  %-16s  %s\n", flag.spelling, FlagClassName(flag.flag_class),
                          FieldsOrReason(flag));
    for (const UnmodelledChoice& choice : flag.unmodelled_choices) {
      absl::StrAppendFormat(&out, "%-48s  %-16s  %s\n", absl::StrCat("  ", choice.value),
                            "not modelled", choice.reason);
    }
    ++counts[std::string(FlagClassName(flag.flag_class))];
  }
  std::vector<std::string> parts;
  for (const auto& [name, count] : counts) parts.push_back(absl::StrCat(count, " ", name));
  absl::StrAppend(&out, "# ", flags.size(), flags.size() == 1 ? " flag" : " flags",
                  parts.empty() ? "" : ": ", absl::StrJoin(parts, ", "), "\n");
  return out;
}

std::string FormatJson(const std::vector<FlagClassification>& flags) {
  nlohmann::json list = nlohmann::json::array();
  for (const FlagClassification& flag : flags) {
    nlohmann::json entry = {{"flag", flag.spelling},
                            {"class", std::string(FlagClassName(flag.flag_class))}};
    if (flag.flag_class == FlagClass::kModelled) {
      entry["fields"] = flag.fields;
      nlohmann::json choices = nlohmann::json::array();
      for (const UnmodelledChoice& choice : flag.unmodelled_choices) {
        choices.push_back(
            {{"value", std::string(choice.value)}, {"reason", std::string(choice.reason)}});
      }
      if (!choices.empty()) entry["unmodelled_choices"] = std::move(choices);
    } else {
      entry["reason"] = flag.reason;
    }
    list.push_back(std::move(entry));
  }
  const nlohmann::json doc = {{"megatron_core_version", std::string(kSupportedMegatronCoreVersion)},
                              {"megatron_lm_commit", std::string(kSupportedMegatronLmCommit)},
                              {"flags", std::move(list)}};
  return doc.dump(2) + "\n";
}

}  // namespace

int RunFlagsCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  bool json = false;
  std::optional<FlagClass> only;
  std::vector<std::string> names;
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_ended) {
      names.push_back(a);
    } else if (a == "--") {
      options_ended = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      out = absl::StrCat(kUsage, "\n");
      return 0;
    } else if (a == "--class" || a.rfind("--class=", 0) == 0) {
      std::string value;
      if (a == "--class") {
        if (i + 1 == args.size()) {
          err = absl::StrCat("--class: missing value\n", kUsage);
          return 2;
        }
        value = args[++i];
      } else {
        value = a.substr(8);
      }
      only = ClassNamed(value);
      if (!only.has_value()) {
        err = absl::StrCat(
            "--class: expected modelled, no-memory-effect, not-modelled, refused or "
            "unknown, got \"",
            value, "\"");
        return 2;
      }
    } else if (a.rfind("--", 0) == 0) {
      names.push_back(a);
    } else {
      err = absl::StrCat("unexpected argument \"", a, "\" (flags start with \"--\")\n", kUsage);
      return 2;
    }
  }
  if (names.empty()) names = ClassifiedFlags();
  std::vector<FlagClassification> flags;
  for (const std::string& name : names) {
    FlagClassification flag = ClassifyFlag(name.substr(0, name.find('=')));
    if (!only.has_value() || flag.flag_class == *only) flags.push_back(std::move(flag));
  }
  out = json ? FormatJson(flags) : FormatText(flags);
  return 0;
}

}  // namespace oomguard
