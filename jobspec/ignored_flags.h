// The Megatron-LM flags oomguard reads without modelling them, each with its
// reason: those that do not change per-rank GPU memory (accepted silently),
// those that may change it in ways oomguard does not model, the choice
// values of modelled flags that are not modelled, and the flags it does not
// know (each of these three a JobSpec.unmodelled_settings entry with its
// reason: a Check does not judge such a job unless its policy says to), and
// the features oomguard refuses (a removed FSDP spelling, old
// flags Megatron-LM refuses). Together with the flag table
// (megatron_flags.h) they classify every flag of Megatron-LM's parser at the
// supported version (flag_classification.h). Flag names here are canonical:
// no leading "--", dashes for underscores.
#ifndef OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_
#define OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace oomguard {

// Megatron-LM features oomguard cannot estimate: a job with any of them is
// refused as Unimplemented, with UnimplementedFlagReason.
std::vector<absl::string_view> UnimplementedFlags();

// Why `name` is refused; nullopt when it is not such a flag.
std::optional<absl::string_view> UnimplementedFlagReason(absl::string_view name);

// Whether Megatron-LM itself refuses `name` (an old flag its validate_args
// rejects): such a job never trains, so it is invalid (InvalidArgument), not
// one oomguard does not model.
bool MegatronRefusesFlag(absl::string_view name);

// Whether `name` does not change per-rank GPU memory (or by a negligible
// amount): logging, data paths, learning rates, seeds, ... It is accepted
// with its values and no note.
bool IsSilentFlag(absl::string_view name);

// Why `name` does not change per-rank GPU memory in training (the reason of
// its group); nullopt when it is not such a flag.
std::optional<absl::string_view> NoMemoryEffectReason(absl::string_view name);

// Every flag IsSilentFlag accepts.
std::vector<absl::string_view> NoMemoryEffectFlags();

// Why `name` is not modelled although it may change memory (e.g. "TP
// communication overlap user buffers are not modelled"); nullopt when it is
// not such a flag.
std::optional<absl::string_view> UnmodelledFlagReason(absl::string_view name);

// Every flag UnmodelledFlagReason names.
std::vector<absl::string_view> UnmodelledFlags();

// A choice value of a modelled flag that oomguard does not model
// (`--fp8-recipe custom`).
struct UnmodelledChoice {
  absl::string_view flag;  // Canonical.
  absl::string_view value;
  absl::string_view reason;
};

// Why `value` of the modelled flag `flag` (canonical) is not modelled;
// nullopt when it is modelled or no choice of it.
std::optional<absl::string_view> UnmodelledChoiceReason(absl::string_view flag,
                                                        absl::string_view value);

// Every not-modelled choice value.
absl::Span<const UnmodelledChoice> UnmodelledChoices();

// Why a flag in none of the classes (not in the flag table, not silent,
// not modelled, not refused) is not modelled: it is not a flag of
// Megatron-LM up to the supported version (common/supported_megatron.h).
absl::string_view UnknownFlagReason();

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_
