// Turns for the calls of a guarded HTTP server (see call_limiter.h).
#include "net/call_limiter.h"

#include "absl/strings/str_cat.h"
#include "common/wait_until.h"

namespace oomguard::net {

absl::Status CallLimiter::Acquire(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!TurnFree()) {
    if (waiting_ >= max_waiting_) {
      return absl::UnavailableError(absl::StrCat("server overloaded: ", running_,
                                                 " calls running and ", waiting_,
                                                 " waiting; try again later"));
    }
    ++waiting_;
    const bool turn = WaitUntil(turn_freed_, lock, deadline,
                                [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return TurnFree(); });
    --waiting_;
    if (!turn) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the deadline passed while waiting for one of ", max_running_, " turns to run"));
    }
  }
  ++running_;
  return absl::OkStatus();
}

void CallLimiter::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  turn_freed_.notify_one();
}

}  // namespace oomguard::net
