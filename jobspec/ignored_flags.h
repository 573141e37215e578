// The Megatron-LM flags oomguard reads without modelling them: those that do
// not change per-rank GPU memory (accepted silently), those that may change
// it in ways oomguard does not model (accepted with a note saying why), and
// the features oomguard refuses (a removed FSDP spelling). Flag names here are canonical: no
// leading "--", dashes for underscores.
#ifndef OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_
#define OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"

namespace oomguard {

// Megatron-LM features oomguard cannot estimate: a job with any of them is
// refused as Unimplemented, with UnimplementedFlagReason.
std::vector<absl::string_view> UnimplementedFlags();

// Why `name` is refused; nullopt when it is not such a flag.
std::optional<absl::string_view> UnimplementedFlagReason(absl::string_view name);

// Whether `name` does not change per-rank GPU memory (or by a negligible
// amount): logging, data paths, learning rates, seeds, ... It is accepted
// with its values and no note.
bool IsSilentFlag(absl::string_view name);

// Why `name` is not modelled although it may change memory (e.g. "TP
// communication overlap user buffers are not modelled"); nullopt when it is
// not such a flag.
std::optional<absl::string_view> UnmodelledFlagReason(absl::string_view name);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_IGNORED_FLAGS_H_
