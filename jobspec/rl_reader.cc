#include "jobspec/rl_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "jobspec/flag_resolution.h"
#include "jobspec/flag_values.h"
#include "jobspec/hf_config.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/job_builder.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/presets.h"

namespace oomguard {

absl::StatusOr<v1::ModelSpec> RlActorModel(const v1::RlJob& job, absl::string_view path_key,
                                           const std::optional<std::string>& model_path) {
  v1::ModelSpec model;
  if (job.has_preset()) {
    OOMGUARD_ASSIGN_OR_RETURN(model, FindPreset(job.preset()));
  } else if (job.has_hf_config_json()) {
    OOMGUARD_ASSIGN_OR_RETURN(model, ParseHfConfig(job.hf_config_json()));
  } else {
    absl::string_view name = model_path.has_value() ? absl::string_view(*model_path) : "";
    while (!name.empty() && name.back() == '/') name.remove_suffix(1);
    if (const size_t slash = name.rfind('/'); slash != absl::string_view::npos) {
      name = name.substr(slash + 1);
    }
    absl::StatusOr<v1::ModelSpec> preset =
        name.empty() ? absl::NotFoundError("") : FindPreset(std::string(name));
    if (!preset.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_key, ": ",
          model_path.has_value() ? absl::StrCat(Quote(*model_path), " names no preset's model")
                                 : "not given",
          "; pass the model with --preset NAME or --hf-config config.json"));
    }
    model = *std::move(preset);
  }
  return model;
}

absl::StatusOr<uint32_t> RlWorldSize(const v1::RlJob& job, uint32_t config_gpus,
                                     absl::string_view config_keys) {
  if (job.num_gpus() > 0) return job.num_gpus();
  if (config_gpus > 0) return config_gpus;
  return absl::InvalidArgumentError(absl::StrCat("the number of GPUs: the config gives none (",
                                                 config_keys, "); pass it with --gpus N"));
}

void RlMegatronSettings::Set(absl::string_view flag, absl::string_view key,
                             std::vector<std::string> values) {
  settings_.push_back({std::string(flag), std::string(key), std::move(values)});
}

absl::Status RlMegatronSettings::ApplyTo(v1::JobSpec* job, std::vector<std::string>* notes) const {
  ParseState state{.mode = ArgsMode::kOverrides, .job = job, .notes = notes};
  for (const Setting& setting : settings_) {
    const MegatronFlag* flag = FindMegatronFlag(setting.flag);
    if (flag == nullptr || flag->apply == nullptr) {
      return absl::InternalError(absl::StrCat("no flag-table entry --", setting.flag));
    }
    FlagUse use{setting.key, {}, {}};
    bool modelled = true;
    for (const std::string& value : setting.values) {
      use.values.push_back(value);
      // A choice the flag table reads but oomguard does not model
      // (ignored_flags.h): not applied, recorded under the config's key.
      if (std::optional<absl::string_view> reason = UnmodelledChoiceReason(flag->name, value)) {
        state.Unmodelled(setting.key, value, *reason);
        modelled = false;
      }
    }
    if (modelled) OOMGUARD_RETURN_IF_ERROR(flag->apply(use, state));
  }
  return ResolveFlags(state);
}

absl::StatusOr<bool> RlBool(const RlConfigYaml& config, absl::string_view key, bool fallback) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<bool> value, config.Bool(key));
  return value.value_or(fallback);
}

absl::StatusOr<uint32_t> RlUint(const RlConfigYaml& config, absl::string_view key,
                                uint32_t fallback) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> value, config.Uint(key));
  return value.value_or(fallback);
}

absl::StatusOr<double> RlReal(const RlConfigYaml& config, absl::string_view key, double fallback) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> value, config.Real(key));
  return value.value_or(fallback);
}

absl::Status RlSetFromKey(const RlConfigYaml& config, absl::string_view key, absl::string_view flag,
                          RlMegatronSettings& settings) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> value, config.Word(key));
  if (value.has_value()) settings.Set(flag, key, {*value});
  return absl::OkStatus();
}

uint32_t RlCeilDiv(uint64_t a, uint64_t b) {
  if (b == 0) return 0;
  const uint64_t q = (a + b - 1) / b;
  return q > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(q);
}

std::optional<std::string> RlArgvSplit::Value(absl::string_view name) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.values.empty()) return std::nullopt;
  return it->second.values.back();
}

bool RlArgvSplit::On(absl::string_view name, bool fallback) const {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  return !it->second.negated;
}

absl::StatusOr<RlArgvSplit> SplitRlArgv(absl::Span<const std::string> argv,
                                        absl::Span<const RlArgvFlag> own,
                                        absl::Span<const absl::string_view> own_prefixes) {
  RlArgvSplit split;
  const auto is_flag = [](absl::string_view word) { return absl::StartsWith(word, "--"); };
  size_t i = 0;
  while (i < argv.size()) {
    const std::string& word = argv[i];
    if (!is_flag(word)) {
      split.rest.push_back(word);
      ++i;
      continue;
    }
    absl::string_view body = absl::string_view(word).substr(2);
    std::optional<std::string> inline_value;
    if (const size_t eq = body.find('='); eq != absl::string_view::npos) {
      inline_value = std::string(body.substr(eq + 1));
      body = body.substr(0, eq);
    }
    std::string name = CanonicalFlagName(std::string(body));
    bool negated = false;
    const RlArgvFlag* flag = nullptr;
    for (const RlArgvFlag& f : own) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr && absl::StartsWith(name, "no-")) {
      for (const RlArgvFlag& f : own) {
        if (f.arity == RlFlagArity::kNegatable && f.name == absl::string_view(name).substr(3)) {
          flag = &f;
          negated = true;
        }
      }
    }
    const bool prefixed =
        std::any_of(own_prefixes.begin(), own_prefixes.end(),
                    [&](absl::string_view p) { return absl::StartsWith(name, p); });
    if (flag == nullptr && !prefixed) {
      split.rest.push_back(word);
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < argv.size() && !is_flag(argv[end])) ++end;
    RlArgvSplit::Use use{.negated = negated};
    const std::string shown = absl::StrCat("--", negated ? "no-" : "", flag ? flag->name : name);
    if (flag == nullptr) {
      // A prefixed flag not in the table: its values are the words before
      // the next flag.
      split.unread.push_back(absl::StrCat("--", name));
      if (inline_value.has_value()) use.values.push_back(*inline_value);
      for (size_t j = i + 1; j < end; ++j) use.values.push_back(argv[j]);
      split.flags[name] = std::move(use);
      i = end;
      continue;
    }
    switch (flag->arity) {
      case RlFlagArity::kSwitch:
      case RlFlagArity::kNegatable:
        if (inline_value.has_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat(shown, " takes no value, got ", Quote(*inline_value)));
        }
        end = i + 1;
        break;
      case RlFlagArity::kOne:
        if (inline_value.has_value()) {
          use.values.push_back(*inline_value);
          end = i + 1;
        } else if (i + 1 < argv.size() && (!is_flag(argv[i + 1]) || argv[i + 1] == "--")) {
          use.values.push_back(argv[i + 1]);
          end = i + 2;
        } else {
          return absl::InvalidArgumentError(absl::StrCat(shown, ": missing value"));
        }
        break;
      case RlFlagArity::kList:
        if (inline_value.has_value()) use.values.push_back(*inline_value);
        for (size_t j = i + 1; j < end; ++j) use.values.push_back(argv[j]);
        break;
    }
    split.flags[std::string(flag->name)] = std::move(use);
    i = end;
  }
  return split;
}

absl::StatusOr<uint32_t> RlFlagUint(const RlArgvSplit& split, absl::string_view name,
                                    uint32_t fallback) {
  std::optional<std::string> value = split.Value(name);
  if (!value.has_value()) return fallback;
  uint32_t n = 0;
  if (!IsDigits(*value) || !absl::SimpleAtoi(*value, &n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, ": expected a whole number from 0 to 4294967295, got ", Quote(*value)));
  }
  return n;
}

absl::StatusOr<std::optional<double>> RlFlagReal(const RlArgvSplit& split, absl::string_view name) {
  std::optional<std::string> value = split.Value(name);
  if (!value.has_value()) return std::optional<double>();
  double x = 0;
  if (!absl::SimpleAtod(*value, &x) || !std::isfinite(x)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected a number, got ", Quote(*value)));
  }
  return std::optional<double>(x);
}

absl::StatusOr<v1::JobSpec> RlActorFromArgv(const v1::RlJob& job,
                                            std::vector<std::string> megatron_args,
                                            absl::string_view path_flag,
                                            const std::optional<std::string>& model_path,
                                            uint32_t num_gpus, std::vector<std::string>* notes) {
  JobInputs inputs;
  inputs.megatron_args = std::move(megatron_args);
  inputs.num_gpus = num_gpus;
  if (job.has_preset()) {
    inputs.preset = job.preset();
  } else if (job.has_hf_config_json()) {
    inputs.hf_config_json = job.hf_config_json();
  } else {
    const bool whole_line = std::any_of(
        inputs.megatron_args.begin(), inputs.megatron_args.end(), [](const std::string& w) {
          return w == "--num-layers" || absl::StartsWith(w, "--num-layers=") || w == "--num_layers";
        });
    if (!whole_line) {
      OOMGUARD_ASSIGN_OR_RETURN(v1::ModelSpec model, RlActorModel(job, path_flag, model_path));
      inputs.preset = model.name();
    }
  }
  return BuildJob(inputs, notes);
}

void AddRlUnmodelled(v1::RlJobSpec* spec, absl::string_view key, absl::string_view reason) {
  for (const v1::UnmodelledSetting& s : spec->unmodelled_settings()) {
    if (s.flag() == key) return;
  }
  v1::UnmodelledSetting* setting = spec->add_unmodelled_settings();
  setting->set_flag(std::string(key));
  setting->set_reason(std::string(reason));
}

void NoteUnreadKeys(const RlConfigYaml& config, absl::Span<const RlConfigKey> read,
                    absl::Span<const absl::string_view> silent, std::vector<std::string>* notes) {
  if (notes == nullptr) return;
  for (const std::string& key : config.Keys()) {
    const bool is_read =
        std::any_of(read.begin(), read.end(), [&](const RlConfigKey& k) { return k.key == key; });
    const bool is_silent = std::any_of(silent.begin(), silent.end(), [&](absl::string_view p) {
      return key == p || absl::StartsWith(key, absl::StrCat(p, "."));
    });
    if (!is_read && !is_silent) notes->push_back(absl::StrCat(key, ": not read by oomguard"));
  }
  for (std::string& note : config.Notes()) notes->push_back(std::move(note));
}

void CopyActorUnmodelled(v1::RlJobSpec* spec) {
  for (const v1::UnmodelledSetting& s : spec->actor().unmodelled_settings()) {
    *spec->add_unmodelled_settings() = s;
  }
}

}  // namespace oomguard
