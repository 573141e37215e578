// What the four RL readers (rl_verl_config.h, rl_nemo_rl_config.h,
// rl_slime_args.h, rl_megatron_args.h) share: the actor's model from the
// caller's source or the config's model path, the world size, a setting
// that is not modelled, and the notes for YAML keys a reader does not read.
#ifndef OOMGUARD_JOBSPEC_RL_READER_H_
#define OOMGUARD_JOBSPEC_RL_READER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "jobspec/rl_config_yaml.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// One key a YAML reader reads, with what it sets (documentation and tests).
struct RlConfigKey {
  absl::string_view key;
  absl::string_view sets;
};

// A config key (or its part under a block) that is a Megatron-LM setting,
// and the flag table's entry for it ("tensor-model-parallel-size").
struct RlMegatronKey {
  absl::string_view key;
  absl::string_view flag;
};

// How a YAML framework's config gives a Megatron-LM setting of its actor
// (what its reader reads, written back for a recommendation).
struct RlMegatronKeyWriting {
  // The key; empty where the reader sets the flag itself, to
  // `implied_value`, from another key (NeMo-RL's full recompute is uniform
  // over one layer).
  std::string key;
  std::string implied_value = {};
  // A switch the reader reads first, set true with the key (NeMo-RL's
  // activation_checkpointing before recompute_granularity); may be empty.
  std::string enabled_by = {};
};

// The actor's model: the caller's preset or HF config (RlJob.model), else
// the preset whose name or model name is the last part of the config's
// model path (`path_key` = `model_path`, e.g. "Qwen/Qwen3-30B-A3B" ->
// qwen3-30b-a3b). InvalidArgument naming `path_key` and saying to pass
// --preset or --hf-config when neither gives one. The model is bf16 (presets
// and HF configs describe bf16 training).
absl::StatusOr<v1::ModelSpec> RlActorModel(const v1::RlJob& job, absl::string_view path_key,
                                           const std::optional<std::string>& model_path);

// The world size: RlJob.num_gpus when set, else `config_gpus` (0 = none);
// InvalidArgument naming `config_keys` when neither gives one.
absl::StatusOr<uint32_t> RlWorldSize(const v1::RlJob& job, uint32_t config_gpus,
                                     absl::string_view config_keys);

// Megatron-LM settings a config gives under its own keys, applied to the
// actor's JobSpec through the flag table's entries (megatron_flags.h: their
// value checks, words and fields), not through argv text: an error names
// the config's key ("policy.megatron_cfg.tensor_model_parallel_size:
// expected ...").
class RlMegatronSettings {
 public:
  // `flag` as the table names it ("tensor-model-parallel-size"); `values`
  // empty for a switch.
  void Set(absl::string_view flag, absl::string_view key, std::vector<std::string> values);
  // Applies the settings in order, then the resolution of the flags that
  // depend on each other (flag_resolution.h), over `job` (kOverrides: the
  // model is already there).
  absl::Status ApplyTo(v1::JobSpec* job, std::vector<std::string>* notes) const;

 private:
  struct Setting {
    std::string flag;
    std::string key;
    std::vector<std::string> values;
  };
  std::vector<Setting> settings_;
};

// `key`'s value, or `fallback` when the config leaves it unset.
absl::StatusOr<bool> RlBool(const RlConfigYaml& config, absl::string_view key, bool fallback);
absl::StatusOr<uint32_t> RlUint(const RlConfigYaml& config, absl::string_view key,
                                uint32_t fallback);
absl::StatusOr<double> RlReal(const RlConfigYaml& config, absl::string_view key, double fallback);

// A whole number of `key` given as a Megatron-LM setting `flag` (the
// table's check of the value, naming `key`), when the config sets it.
absl::Status RlSetFromKey(const RlConfigYaml& config, absl::string_view key, absl::string_view flag,
                          RlMegatronSettings& settings);

// ceil(a / b), 0 when b is 0.
uint32_t RlCeilDiv(uint64_t a, uint64_t b);

// How an RL argv reader's own flag takes values (slime's and Megatron-LM's
// RL flags, argparse's actions).
enum class RlFlagArity {
  kSwitch,     // store_true.
  kOne,        // One value.
  kList,       // nargs='*' / '+': the values up to the next flag.
  kNegatable,  // BooleanOptionalAction: "--name" or "--no-name".
};

struct RlArgvFlag {
  absl::string_view name;  // Canonical: no "--", dashes.
  RlFlagArity arity;
  // The RlJobSpec fields it sets (`oomguard flags` shows them); empty for a
  // flag taken out and not read.
  absl::string_view sets = {};
};

// An RL reader's flags taken out of an argv, the last use of each winning,
// and the words left for the Megatron-LM parser (megatron_args.h).
struct RlArgvSplit {
  struct Use {
    std::vector<std::string> values = {};
    bool negated = false;  // "--no-name".
  };
  std::map<std::string, Use, std::less<>> flags;
  std::vector<std::string> rest;
  // Flags taken because they start with one of the reader's prefixes
  // ("sglang-") and are not in its table: "--name", in order.
  std::vector<std::string> unread;

  bool Has(absl::string_view name) const { return flags.count(name) > 0; }
  // The value of a one-value flag; nullopt when absent.
  std::optional<std::string> Value(absl::string_view name) const;
  // A switch or negatable flag: true when given (not negated), false when
  // negated, `fallback` when absent.
  bool On(absl::string_view name, bool fallback) const;
};

// Takes `own` flags (and flags starting with one of `own_prefixes`, with the
// words after them up to the next flag) out of `argv`. InvalidArgument for
// a one-value flag without its value, a value given to a switch.
absl::StatusOr<RlArgvSplit> SplitRlArgv(absl::Span<const std::string> argv,
                                        absl::Span<const RlArgvFlag> own,
                                        absl::Span<const absl::string_view> own_prefixes);

// A flag's value as a whole number (InvalidArgument naming "--name" and
// the value); `fallback` when absent.
absl::StatusOr<uint32_t> RlFlagUint(const RlArgvSplit& split, absl::string_view name,
                                    uint32_t fallback);
absl::StatusOr<std::optional<double>> RlFlagReal(const RlArgvSplit& split, absl::string_view name);

// The actor of an argv framework: the Megatron-LM words `megatron_args`
// (BuildJob, job_builder.h) over the caller's model (RlJob.model), else the
// preset `model_path` names (`path_flag`: slime's --hf-checkpoint), else
// the argv's own model flags (a whole command line with --num-layers);
// InvalidArgument naming `path_flag` and --preset / --hf-config when none
// gives the model.
absl::StatusOr<v1::JobSpec> RlActorFromArgv(const v1::RlJob& job,
                                            std::vector<std::string> megatron_args,
                                            absl::string_view path_flag,
                                            const std::optional<std::string>& model_path,
                                            uint32_t num_gpus, std::vector<std::string>* notes);

// Records `key` as a setting that changes memory and is not modelled.
void AddRlUnmodelled(v1::RlJobSpec* spec, absl::string_view key, absl::string_view reason);

// One note per leaf of `config` that is not in `read` and not under one of
// `silent` (prefixes of keys with no memory effect: learning rates,
// logging, data files, ...): "KEY: not read by oomguard"; then the
// config's own notes (unresolved interpolations).
void NoteUnreadKeys(const RlConfigYaml& config, absl::Span<const RlConfigKey> read,
                    absl::Span<const absl::string_view> silent, std::vector<std::string>* notes);

// The actor's unmodelled Megatron settings (JobSpec.unmodelled_settings)
// copied into the RL job's, after its own.
void CopyActorUnmodelled(v1::RlJobSpec* spec);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_READER_H_
