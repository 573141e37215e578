// What every admission check shares, whatever the job (a Megatron-Core
// training step, admission.h; an RL step, rl_admission.h): its inputs
// validated, the usable capacity, the response's compared-peak fields, a
// measured recommendation, and the phrases of the summary that state the
// peak, the usable memory and the ladder's advice. One rule each.
#ifndef OOMGUARD_ADMISSION_CHECK_BASIS_H_
#define OOMGUARD_ADMISSION_CHECK_BASIS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "admission/admission.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard {

// InvalidArgument for a safety margin outside [0, 1), GPU memory of zero or
// over 2^50 bytes, a coverage outside [0.5, 0.999].
absl::Status ValidateCheckInputs(const v1::GpuSpec& gpu, const AdmissionOptions& options);

// The GPU's memory less the safety margin: what a verdict compares with.
uint64_t UsableBytes(const v1::GpuSpec& gpu, double safety_margin);

// The peak a verdict compares of a rank with peaks `point` and `upper`: the
// upper bound widened by options.learned_widening (rounded up), or the
// point estimate when the options compare it. The one rule for the verdict,
// the ladder's re-estimates and an RL step's binding phase.
uint64_t ComparedBytes(uint64_t point, uint64_t upper, const AdmissionOptions& options);

// The widening the options apply: learned_widening with the upper bound
// compared, else 0.
double AppliedWidening(const AdmissionOptions& options);

// Fills the verdict's peak fields of `out` (worst_pp_rank, both peaks, the
// bound compared and its label, capacity, usable, headroom, margin, GPU
// name) for the worst rank `pp_rank` with peaks `point` and `upper`.
void SetComparedPeak(uint32_t pp_rank, uint64_t point, uint64_t upper, const v1::GpuSpec& gpu,
                     const AdmissionOptions& options, v1::CheckResponse* out);

// The summary's last sentence when the verdict widened the bound
// (CheckResponse.learned_widening > 0): " The 95% bound is widened by 5.2%,
// learned from 42 measured jobs of cluster \"prod\"."; else empty.
std::string WideningSentence(const v1::CheckResponse& r);

// A recommendation measured by re-estimating: the compared peak `before`
// and `after` it, against `usable` (sufficient: after <= usable).
v1::Recommendation MeasuredRecommendation(v1::Recommendation::Kind kind, std::string id,
                                          std::string setting, std::string reason, uint64_t before,
                                          uint64_t after, uint64_t usable);

// "<usable> usable on <GPU>", then " (<capacity> less <margin>% kept free)"
// when a margin is kept.
std::string UsablePhrase(const v1::CheckResponse& r, const v1::GpuSpec& gpu);

// The compared peak first, with its label, then the other one:
// "<upper> (95% bound; point estimate <point>)", or with the point compared
// "<point> (point estimate; 95% bound <upper>)".
std::string PeakPhrase(const v1::CheckResponse& r);

// What a job that does not fit should try, from its ladder's steps (in
// order): "; first try X (saves Y)", then "; even with all N recommended
// changes it needs P: use more GPUs or larger ones" or "; it fits once the
// recommendations up to Z are applied"; "; no recommended change helps: use
// more GPUs or larger ones" without steps.
std::string LadderAdvice(const std::vector<const v1::Recommendation*>& ladder,
                         const v1::CheckResponse& r);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_CHECK_BASIS_H_
