// The writer beside the flag table: a JobSpec's fields written back as the
// Megatron-LM arguments that parse to them. Each field is written by the
// first flag of the table (megatron_flags.h) that sets it and can give it its
// value, with the same entry's spelling, words and number format that parse
// it, so what is written reads back as the field's value
// (ApplyMegatronArgs). A planned candidate's arguments (planner/) and a
// recommendation's flags (admission/) are written here; a JobSpec is the
// change, its text derived from it.
#ifndef OOMGUARD_JOBSPEC_MEGATRON_ARGS_WRITER_H_
#define OOMGUARD_JOBSPEC_MEGATRON_ARGS_WRITER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// The words that give the field at `path` the value it has in `job`:
// {"--tensor-model-parallel-size", "4"}, {"--sequence-parallel"},
// {"--recompute-modules", "core_attn", "layernorm"}. Empty when the field is
// unset in `job` (Megatron-LM's default takes no flag). NotFound when no flag
// of the table sets the field (parallelism.num_gpus); FailedPrecondition when
// none gives it that value (model.activation GELU, Megatron-LM's default with
// no flag of its own; an optional switch field set to the value its switch
// does not give); both name the field.
absl::StatusOr<std::vector<std::string>> WriteJobField(const v1::JobSpec& job,
                                                       std::string_view path);

// The words of WriteJobField for each of `paths`, in that order. The paths
// are the caller's constants: one the table cannot write is a bug, which
// aborts naming it.
std::vector<std::string> WriteJobFields(const v1::JobSpec& job,
                                        const std::vector<std::string_view>& paths);

// The switch that turns on the bool field at `path`: "--use-nccl-ub" for
// runtime.use_nccl_ub, what a job that turns the field off drops. `path` is
// the caller's constant: a field no switch turns on is a bug, which aborts
// naming it.
std::string SwitchFlagFor(std::string_view path);

// The flag a job drops when it clears the field at `path`: SwitchFlagFor for
// a bool field, the first flag that writes any other field
// ("--cpu-offloading-num-layers" for recompute.cpu_offloading_num_layers).
// `path` is the caller's constant: a field no flag writes is a bug, which
// aborts naming it.
std::string DroppedFlagFor(std::string_view path);

struct WrittenArgs {
  // The flags and their values, in table order.
  std::vector<std::string> args;
  // The fields, by path, that changed but no flag could write: unset in the
  // job where the base sets them, a value no flag gives, a field only the
  // resolution of several flags sets (model.num_query_groups,
  // training.cross_entropy_fusion).
  std::vector<std::string> unwritten;
};

// The arguments that turn `base` into `job`: every field of the table whose
// value in `job` differs from `base`'s, each at its first flag, in table
// order (a flag that sets several fields writes them together). Fields no
// flag sets (parallelism.num_gpus, the environment's) are not arguments and
// are left out.
WrittenArgs WriteMegatronArgs(const v1::JobSpec& job,
                              const v1::JobSpec& base = v1::JobSpec::default_instance());

// The fields of the table, by path, whose values differ between `base` and
// `job`, in table order.
std::vector<std::string> ChangedFlagFields(const v1::JobSpec& base, const v1::JobSpec& job);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_MEGATRON_ARGS_WRITER_H_
