// The Megatron-Core and Transformer Engine versions a job runs, read from
// RuntimeSpec.megatron_core_version / transformer_engine_version
// ("MAJOR.MINOR"), for the memory terms whose source changed between
// releases (te_weight_gradients.h).
#ifndef OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_
#define OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_

#include <compare>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

struct SoftwareVersion {
  int64_t major = 0;
  int64_t minor = 0;
  auto operator<=>(const SoftwareVersion&) const = default;
};

// Newest releases modelled (megatron/core/package_info.py of core_v0.19.0;
// TransformerEngine tag v2.18), the defaults of an empty field.
inline constexpr SoftwareVersion kNewestMegatronCore{0, 19};
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

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_SOFTWARE_VERSIONS_H_
