#include "jobspec/flag_classification.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/rl_megatron_args.h"

namespace oomguard {

absl::string_view FlagClassName(FlagClass flag_class) {
  switch (flag_class) {
    case FlagClass::kModelled:
      return "modelled";
    case FlagClass::kNoMemoryEffect:
      return "no memory effect";
    case FlagClass::kNotModelled:
      return "not modelled";
    case FlagClass::kRefused:
      return "refused";
    case FlagClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

FlagClassification ClassifyFlag(std::string_view std_name) {
  const std::string name = CanonicalFlagName(std_name);
  FlagClassification out;
  out.spelling = absl::StrCat("--", name);
  if (std::optional<absl::string_view> reason = UnimplementedFlagReason(name)) {
    out.flag_class = FlagClass::kRefused;
    out.reason = std::string(*reason);
  } else if (const MegatronFlag* flag = FindMegatronFlag(name); flag != nullptr) {
    out.flag_class = FlagClass::kModelled;
    out.fields = flag->fields;
    for (const UnmodelledChoice& choice : UnmodelledChoices()) {
      if (choice.flag == name) out.unmodelled_choices.push_back(choice);
    }
  } else if (IsMegatronRlReaderFlag(name)) {
    // Read by the RL reader into the RL job (RlJobSpec's fields).
    out.flag_class = FlagClass::kModelled;
    for (const RlArgvFlag& flag : MegatronRlFlags()) {
      if (flag.name == name) out.fields.push_back(absl::StrCat("RlJobSpec.", flag.sets));
    }
  } else if (std::optional<absl::string_view> reason = UnmodelledFlagReason(name)) {
    out.flag_class = FlagClass::kNotModelled;
    out.reason = std::string(*reason);
  } else if (std::optional<absl::string_view> reason = NoMemoryEffectReason(name)) {
    out.flag_class = FlagClass::kNoMemoryEffect;
    out.reason = std::string(*reason);
  } else {
    out.reason = std::string(UnknownFlagReason());
  }
  return out;
}

std::vector<std::string> ClassifiedFlags() {
  std::vector<std::string> names;
  for (const MegatronFlag& flag : MegatronFlags()) names.push_back(flag.Spelling());
  for (const RlArgvFlag& flag : MegatronRlFlags()) names.push_back(absl::StrCat("--", flag.name));
  for (absl::string_view name : UnmodelledFlags()) names.push_back(absl::StrCat("--", name));
  for (absl::string_view name : NoMemoryEffectFlags()) names.push_back(absl::StrCat("--", name));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace oomguard
