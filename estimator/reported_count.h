// The range of every byte and element count an EstimateReport carries, and
// the one way the memory model's double-precision numbers become such counts.
//
// A count is in [0, kMaxReportedCount], kMaxReportedCount = 2^50: as bytes,
// 1 PiB on one GPU, far above the memory of any GPU or host. A count that
// reaches the limit is not estimated further: the field holds exactly
// kMaxReportedCount, which reads "this much or more", and the estimator flags
// the rank that holds it (RankReport.exceeds_limit, EstimateReport.
// exceeds_limit) and says so in a note. Nothing is clamped without that flag,
// and no count wraps or saturates at 2^63: sums and products of counts stop at
// the limit too, so a total is min(kMaxReportedCount, exact total), a capped
// part always caps its total, and every invariant between the fields (parts
// sum to totals, peak >= static, monotone in batch and sequence) still holds.
// The admission check answers VERDICT_DOES_NOT_FIT for a flagged rank.
#ifndef OOMGUARD_ESTIMATOR_REPORTED_COUNT_H_
#define OOMGUARD_ESTIMATOR_REPORTED_COUNT_H_

#include <cstdint>

namespace oomguard {

inline constexpr uint64_t kMaxReportedCount = uint64_t{1} << 50;

// What a rank over the limit needs, as the estimator's note and the
// admission summary word it.
inline constexpr char kOverLimitWording[] = "1 PiB (2^50 bytes) or more per GPU";

// `value` rounded to the nearest integer (negative values count 0);
// kMaxReportedCount when it is that or more, or not a number.
uint64_t RoundedCount(double value);

// Same, rounded down (the module tree's nodes).
uint64_t TruncatedCount(double value);

// a + b, capped at the limit. Both are counts (at most kMaxReportedCount).
uint64_t AddCounts(uint64_t a, uint64_t b);

// count x times, capped at the limit. `count` is a count.
uint64_t MultiplyCount(uint64_t count, uint64_t times);

// The count stands for kMaxReportedCount or more.
inline bool IsCapped(uint64_t count) { return count >= kMaxReportedCount; }

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_REPORTED_COUNT_H_
