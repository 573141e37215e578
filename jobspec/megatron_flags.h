// The flag table: every Megatron-LM `pretrain_gpt.py` flag oomguard reads,
// with its arity, how its values are read and written and the JobSpec
// field(s) it sets, each field named once by its path
// ("parallelism.tensor_model_parallel_size") and set and read from that
// name. It answers "is this a flag oomguard reads, and which JobSpec field
// does it set?" (FindMegatronFlag) and the reverse, "which flag sets this
// field?" (FindMegatronFlagForField); the writer over it
// (megatron_args_writer.h) spells a JobSpec back as the flags that parse
// to it. The refused flags (ignored_flags.h) are in it; the flags read without being
// modelled are in ignored_flags.h, and the argv grammar that applies the
// table is megatron_args.h.
#ifndef OOMGUARD_JOBSPEC_MEGATRON_FLAGS_H_
#define OOMGUARD_JOBSPEC_MEGATRON_FLAGS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobspec/flag_values.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

struct ParseState;  // flag_resolution.h

enum class FlagArity {
  kSwitch,  // No value (`store_true`).
  kOne,     // Exactly one value.
  kList,    // Zero or more values, up to the next flag (`nargs='*'`).
};

struct MegatronFlag {
  // Canonical: without "--", dashes ("tensor-model-parallel-size").
  std::string name = {};
  FlagArity arity = FlagArity::kSwitch;
  // The JobSpec fields it sets, by path, directly or through the resolution
  // of the flags that depend on each other (flag_resolution.h). Empty for a
  // flag read and ignored (--fp8-recipe) and for a refused one.
  std::vector<std::string> fields = {};
  // The enum words its values are (argparse `choices`); empty when its
  // values are not enum words.
  std::vector<FlagWord> words = {};
  // Refused: a job with it is Unimplemented (ignored_flags.h UnimplementedFlags).
  bool unimplemented = false;
  // Reads one use of the flag and sets its fields (or records it for the
  // resolution). Null for a refused flag.
  std::function<absl::Status(const FlagUse&, ParseState&)> apply = nullptr;
  // Writes the value `job` has in the field the flag writes (the first of
  // `fields`) as the flag's values, the words after its spelling (none for
  // a switch), which `apply` reads back as that value; nullopt when this
  // flag cannot give the field that value (a switch that sets another one,
  // a value none of its words stands for). Null for a flag that is not
  // written: refused, read without a field, or resolved with other flags
  // (flag_resolution.h).
  std::function<std::optional<std::vector<std::string>>(const v1::JobSpec&)> write = nullptr;

  // "--" and the name.
  std::string Spelling() const;
  // The first of `words` that stands for `value` ("selective" for
  // RECOMPUTE_GRANULARITY_SELECTIVE); empty when none does.
  absl::string_view WordFor(int value) const;
};

// `name` as the table spells it: without a leading "--", underscores as
// dashes (`--use_distributed_optimizer` is "use-distributed-optimizer").
std::string CanonicalFlagName(std::string_view name);

// The flag `name` (with or without "--", underscores or dashes); null when
// oomguard does not read it (unknown, or in ignored_flags.h).
const MegatronFlag* FindMegatronFlag(std::string_view name);

// Every flag of the table, in table order.
const std::vector<MegatronFlag>& MegatronFlags();

// The flag that sets the JobSpec field `field_path`
// ("parallelism.pipeline_model_parallel_size" -> --pipeline-model-parallel-size):
// the first in table order, which lists a field's main flag before its
// legacy spellings (--cuda-graph-impl before --enable-cuda-graph); null when
// no flag sets it.
const MegatronFlag* FindMegatronFlagForField(std::string_view field_path);

// The --recompute-modules word for `module` ("moe_act" for
// RECOMPUTE_MODULE_MOE_ACT), from the words the parser reads.
absl::string_view RecomputeModuleWord(v1::RecomputeModule module);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_MEGATRON_FLAGS_H_
