#include "estimator/reported_count.h"

#include <algorithm>

namespace oomguard {
namespace {

constexpr double kLimit = static_cast<double>(kMaxReportedCount);  // Exact: a power of two.

}  // namespace

uint64_t RoundedCount(double value) {
  if (!(value < kLimit)) return kMaxReportedCount;
  if (!(value > 0)) return 0;
  // std::llround, without its library call (the estimator rounds every count
  // of every rank): below 2^50 the truncation and the fraction it leaves
  // are exact, and a half rounds up.
  const uint64_t whole = static_cast<uint64_t>(value);
  const uint64_t rounded = whole + (value - static_cast<double>(whole) >= 0.5 ? 1 : 0);
  return std::min(rounded, kMaxReportedCount);
}

uint64_t TruncatedCount(double value) {
  if (!(value < kLimit)) return kMaxReportedCount;
  return static_cast<uint64_t>(std::max(0.0, value));
}

uint64_t AddCounts(uint64_t a, uint64_t b) {
  // Both at most 2^50: the sum cannot wrap.
  return std::min(std::min(a, kMaxReportedCount) + std::min(b, kMaxReportedCount),
                  kMaxReportedCount);
}

uint64_t MultiplyCount(uint64_t count, uint64_t times) {
  count = std::min(count, kMaxReportedCount);
  if (count == 0 || times == 0) return 0;
  if (times > kMaxReportedCount / count) return kMaxReportedCount;
  return count * times;  // At most kMaxReportedCount.
}

}  // namespace oomguard
