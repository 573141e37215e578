// The newest Megatron-Core oomguard supports: the release whose command-line
// flags are all classified (jobspec/flag_classification.h, against
// tests/data/megatron_lm_arguments.txt, generated at the commit below) and
// the newest whose memory the estimator models
// (estimator/software_versions.h kNewestMegatronCore). One place, read by
// both layers; moving it means regenerating the snapshot and classifying the
// new flags.
#ifndef OOMGUARD_COMMON_SUPPORTED_MEGATRON_H_
#define OOMGUARD_COMMON_SUPPORTED_MEGATRON_H_

#include "absl/strings/string_view.h"

namespace oomguard {

// Megatron-Core 0.20.0 (megatron/core/package_info.py).
inline constexpr int kSupportedMegatronCoreMajor = 0;
inline constexpr int kSupportedMegatronCoreMinor = 20;
inline constexpr absl::string_view kSupportedMegatronCoreVersion = "0.20.0";
// The NVIDIA/Megatron-LM commit its flags were read at (2026-08-22).
inline constexpr absl::string_view kSupportedMegatronLmCommit = "d98e8a64dd";

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_SUPPORTED_MEGATRON_H_
