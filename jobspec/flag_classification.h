// What each Megatron-LM flag means to oomguard: modelled (an entry of the
// flag table, megatron_flags.h, with the JobSpec fields it sets, or a flag
// of Megatron-LM's RL loop that the RL reader reads, rl_megatron_args.h,
// with the RlJobSpec fields it sets), no memory
// effect, not modelled, refused (ignored_flags.h, each with its reason), or
// unknown (not a flag of Megatron-LM up to the supported version,
// common/supported_megatron.h). Every
// flag of Megatron-LM's parser at the supported version is in exactly one of
// the first four (tests/jobspec/flag_classification_test.cc, against
// tests/data/megatron_lm_arguments.txt); `oomguard flags` prints it.
#ifndef OOMGUARD_JOBSPEC_FLAG_CLASSIFICATION_H_
#define OOMGUARD_JOBSPEC_FLAG_CLASSIFICATION_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/supported_megatron.h"
#include "jobspec/ignored_flags.h"

namespace oomguard {

enum class FlagClass {
  kModelled,
  kNoMemoryEffect,
  kNotModelled,
  kRefused,
  kUnknown,
};

// "modelled", "no memory effect", "not modelled", "refused", "unknown".
absl::string_view FlagClassName(FlagClass flag_class);

struct FlagClassification {
  std::string spelling;  // "--name".
  FlagClass flag_class = FlagClass::kUnknown;
  // The JobSpec fields a modelled flag sets ("RlJobSpec.<path>" for an RL
  // flag the RL reader reads; none for one read and checked
  // without a field of its own: --rampup-batch-size, --spec).
  std::vector<std::string> fields;
  // Why, for every other class.
  std::string reason;
  // A modelled flag's choice values that are not modelled.
  std::vector<UnmodelledChoice> unmodelled_choices;
};

// The class of `name` (with or without "--", underscores or dashes).
FlagClassification ClassifyFlag(std::string_view name);

// Every flag oomguard classifies, "--name", sorted: the flag table's and
// ignored_flags.h's.
std::vector<std::string> ClassifiedFlags();

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_FLAG_CLASSIFICATION_H_
