// The point after which a request's work is abandoned: its own deadline, or
// the end of the server's shutdown grace period, whichever comes first.
// Core code (estimator, admission, planner, parsers) checks it inside its
// long loops without knowing anything of gRPC or HTTP: the service builds
// one per call and the server moves the shutdown point when it drains.
#ifndef OOMGUARD_COMMON_DEADLINE_H_
#define OOMGUARD_COMMON_DEADLINE_H_

#include <atomic>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace oomguard {

// A shared stop point (e.g. "the server's grace period ends at T"), moved by
// one thread and read by every call in flight. Starts at "never".
class StopPoint {
 public:
  void StopAt(absl::Time when) { unix_nanos_.store(ToNanos(when), std::memory_order_relaxed); }
  absl::Time When() const {
    const int64_t nanos = unix_nanos_.load(std::memory_order_relaxed);
    return nanos == kNever ? absl::InfiniteFuture() : absl::FromUnixNanos(nanos);
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  static int64_t ToNanos(absl::Time when) {
    return when == absl::InfiniteFuture() ? kNever : absl::ToUnixNanos(when);
  }
  std::atomic<int64_t> unix_nanos_{kNever};
};

class Deadline {
 public:
  // A deadline that never passes (the command line, tests).
  Deadline() = default;
  explicit Deadline(absl::Time at) : at_(at) {}
  // Also passes once `stop` does; `stop` must outlive the deadline.
  Deadline(absl::Time at, const StopPoint* stop) : at_(at), stop_(stop) {}

  // Reads the clock once (estimates check it for every pipeline rank).
  bool Passed() const {
    if (Never()) return false;
    const absl::Time now = absl::Now();
    return now >= at_ || Stopped(now);
  }

  // OK while time is left; otherwise DEADLINE_EXCEEDED (the request's own
  // deadline) or UNAVAILABLE (the server is shutting down), naming `doing`,
  // e.g. "estimating pipeline rank 12 of 64".
  absl::Status Check(absl::string_view doing) const {
    if (Never()) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (Stopped(now)) {
      return absl::UnavailableError(
          absl::StrCat("the server is shutting down; stopped while ", doing));
    }
    if (now >= at_) {
      return absl::DeadlineExceededError(absl::StrCat("deadline passed while ", doing));
    }
    return absl::OkStatus();
  }

  // Check(), but reading the clock only at the last of every 2^16 calls
  // (iterations 65535, 131071, ...): for the inner loops of the estimator,
  // whose iterations take nanoseconds, and which their callers enter after a
  // Check() of their own, so a short loop reads no clock at all.
  absl::Status CheckEvery(int64_t iteration, absl::string_view doing) const {
    if ((iteration & 0xFFFF) != 0xFFFF || Never()) {
      return absl::OkStatus();
    }
    return Check(doing);
  }

 private:
  bool Never() const { return at_ == absl::InfiniteFuture() && stop_ == nullptr; }
  bool Stopped(absl::Time now) const { return stop_ != nullptr && now >= stop_->When(); }

  absl::Time at_ = absl::InfiniteFuture();
  const StopPoint* stop_ = nullptr;
};

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_DEADLINE_H_
