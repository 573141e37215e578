#include "estimator/software_versions.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/quoted_value.h"

namespace oomguard {
namespace {

std::string Shown(SoftwareVersion v) { return absl::StrCat(v.major, ".", v.minor); }

// The leading decimal digits of `part` ("0rc7" -> "0"); empty when none.
absl::string_view LeadingDigits(absl::string_view part) {
  size_t n = 0;
  while (n < part.size() && n < 6 && absl::ascii_isdigit(static_cast<unsigned char>(part[n]))) {
    ++n;
  }
  return part.substr(0, n);
}

}  // namespace

absl::StatusOr<SoftwareVersion> ParseSoftwareVersion(absl::string_view field,
                                                     absl::string_view text, SoftwareVersion oldest,
                                                     SoftwareVersion newest) {
  if (text.empty()) return newest;
  const std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits('.', 2));
  SoftwareVersion v;
  const bool parsed = parts.size() >= 2 && parts[0].size() <= 6 &&
                      absl::SimpleAtoi(parts[0], &v.major) && !LeadingDigits(parts[1]).empty() &&
                      (parts.size() == 3 || LeadingDigits(parts[1]).size() == parts[1].size()) &&
                      absl::SimpleAtoi(LeadingDigits(parts[1]), &v.minor);
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " = ", Quote(text), ": expected MAJOR.MINOR, e.g. \"", Shown(newest), "\""));
  }
  if (v < oldest || v > newest) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quote(text),
                                                   ": outside the versions modelled, ",
                                                   Shown(oldest), " to ", Shown(newest)));
  }
  return v;
}

absl::StatusOr<SoftwareVersion> ParseMegatronCoreVersion(absl::string_view text,
                                                         std::vector<std::string>* notes) {
  constexpr absl::string_view kField = "runtime.megatron_core_version";
  absl::StatusOr<SoftwareVersion> version =
      ParseSoftwareVersion(kField, text, kOldestMegatronCore, kNewestMegatronCore);
  if (version.ok()) return version;
  constexpr SoftwareVersion kAny{std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::max()};
  if (!ParseSoftwareVersion(kField, text, kNewestMegatronCore, kAny).ok()) return version;
  if (notes != nullptr) {
    notes->push_back(absl::StrCat(
        kField, " = ", Quote(text), ": newer than Megatron-Core ", kSupportedMegatronCoreVersion,
        ", the newest oomguard supports (its flags classified at NVIDIA/Megatron-LM ",
        kSupportedMegatronLmCommit, "); estimated as ", Shown(kNewestMegatronCore),
        ": memory changes and flags added since are unknown to oomguard"));
  }
  return kNewestMegatronCore;
}

}  // namespace oomguard
