// Megatron-Core changes of an RL job's trainer in its framework's keys (see
// rl_megatron_setting.h).
#include "admission/rl_megatron_setting.h"

#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "jobspec/megatron_args_writer.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/rl_nemo_rl_config.h"
#include "jobspec/rl_verl_config.h"

namespace oomguard {
namespace {

// The key the framework's reader reads for the Megatron-LM flag `flag`
// (canonical name); nullopt when none.
std::optional<RlMegatronKeyWriting> KeyFor(v1::RlFramework framework, RlTrainer trainer,
                                           const std::string& flag) {
  switch (framework) {
    case v1::RL_FRAMEWORK_VERL:
      return VerlMegatronKeyFor(flag, trainer == RlTrainer::kCritic);
    case v1::RL_FRAMEWORK_NEMO_RL:
      if (trainer == RlTrainer::kCritic) return std::nullopt;  // GRPO: no critic.
      return NemoRlMegatronKeyFor(flag);
    default:
      return std::nullopt;
  }
}

// A flag's values as a Hydra override's value: "true" for a switch, the
// value, or a list "[a,b]" for a flag that takes several.
std::string YamlValue(std::string_view flag, const std::vector<std::string>& values) {
  const MegatronFlag* entry = FindMegatronFlag(flag);
  if (entry != nullptr && entry->arity == FlagArity::kSwitch) return "true";
  if (entry != nullptr && entry->arity == FlagArity::kList) {
    return absl::StrCat("[", absl::StrJoin(values, ","), "]");
  }
  return absl::StrJoin(values, " ");
}

// The Hydra overrides that set each of `change`'s fields and drop its
// switches; nullopt when one has no key.
std::optional<std::string> YamlSetting(v1::RlFramework framework, RlTrainer trainer,
                                       const v1::JobSpec& changed, const JobChange& change) {
  std::vector<std::string> overrides;
  auto add = [&](std::string text) {
    for (const std::string& o : overrides) {
      if (o == text) return;
    }
    overrides.push_back(std::move(text));
  };
  for (std::string_view path : change.fields) {
    const std::vector<std::string> words = WriteJobFields(changed, {path});
    if (words.empty()) continue;  // Unset: Megatron-LM's default.
    const std::string flag(absl::StripPrefix(words.front(), "--"));
    const std::vector<std::string> values(words.begin() + 1, words.end());
    const std::optional<RlMegatronKeyWriting> key = KeyFor(framework, trainer, flag);
    if (!key) return std::nullopt;
    if (key->key.empty()) {
      // Set by the reader from another key: only to that value.
      if (values.size() != 1 || values.front() != key->implied_value) return std::nullopt;
      continue;
    }
    if (!key->enabled_by.empty()) add(absl::StrCat(key->enabled_by, "=true"));
    add(absl::StrCat(key->key, "=", YamlValue(flag, values)));
  }
  for (const JobChange::Dropped& dropped : change.dropped) {
    const std::string flag(absl::StripPrefix(DroppedFlagFor(dropped.field), "--"));
    const std::optional<RlMegatronKeyWriting> key = KeyFor(framework, trainer, flag);
    const MegatronFlag* entry = FindMegatronFlag(flag);
    if (!key || key->key.empty() || entry == nullptr || entry->arity != FlagArity::kSwitch) {
      return std::nullopt;
    }
    add(absl::StrCat(key->key, "=false"));
  }
  if (overrides.empty()) return std::nullopt;
  return absl::StrJoin(overrides, " ");
}

}  // namespace

std::optional<std::string> RlMegatronSetting(v1::RlFramework framework, RlTrainer trainer,
                                             const v1::JobSpec& changed, const JobChange& change) {
  if (!change.environment.empty()) return std::nullopt;
  switch (framework) {
    case v1::RL_FRAMEWORK_VERL:
    case v1::RL_FRAMEWORK_NEMO_RL:
      return YamlSetting(framework, trainer, changed, change);
    case v1::RL_FRAMEWORK_SLIME:
    case v1::RL_FRAMEWORK_MEGATRON_RL:
      // Their trainer reads Megatron-LM's own flags.
      if (trainer == RlTrainer::kCritic) return std::nullopt;
      return SettingText(changed, change);
    default:
      return std::nullopt;
  }
}

}  // namespace oomguard
