// The Megatron-Core and Transformer Engine versions a job runs, read from
// RuntimeSpec.megatron_core_version / transformer_engine_version
// ("MAJOR.MINOR"), for the memory terms whose source changed between
// releases (te_weight_gradients.h).
#ifndef OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_
#define OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/supported_megatron.h"

namespace oomguard {

struct SoftwareVersion {
  int64_t major = 0;
  int64_t minor = 0;
  auto operator<=>(const SoftwareVersion&) const = default;
};

// Newest releases modelled, the defaults of an empty field: the supported
// Megatron-Core (common/supported_megatron.h; the terms that depend on the
// version are the same from 0.19, whose package_info.py they were read at)
// and TransformerEngine tag v2.18.
inline constexpr SoftwareVersion kNewestMegatronCore{kSupportedMegatronCoreMajor,
                                                     kSupportedMegatronCoreMinor};
inline constexpr SoftwareVersion kNewestTransformerEngine{2, 18};
// Oldest releases modelled.
inline constexpr SoftwareVersion kOldestMegatronCore{0, 12};
inline constexpr SoftwareVersion kOldestTransformerEngine{2, 0};

// Parses "MAJOR.MINOR" (a ".PATCH" or pre-release suffix such as "0.14.0rc7"
// is accepted and ignored); empty gives `newest`. InvalidArgument naming
// `field` and the value when it is not a version or lies outside
// [oldest, newest].
absl::StatusOr<SoftwareVersion> ParseSoftwareVersion(absl::string_view field,
                                                     absl::string_view text, SoftwareVersion oldest,
                                                     SoftwareVersion newest);

// runtime.megatron_core_version: as ParseSoftwareVersion from
// kOldestMegatronCore to kNewestMegatronCore, except that a newer release is
// estimated as the newest, with a note in `notes` (when not null) saying
// that what it changed (its new flags among them) is unknown to oomguard.
absl::StatusOr<SoftwareVersion> ParseMegatronCoreVersion(absl::string_view text,
                                                         std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_
