// Turns for HTTP/JSON calls (see call_limiter.h).
#include "http/call_limiter.h"

#include "absl/strings/str_cat.h"

namespace oomguard::http {

absl::Status CallLimiter::Acquire(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (!TurnFree()) {
    if (waiting_ >= max_waiting_) {
      return absl::UnavailableError(absl::StrCat("server overloaded: ", running_,
                                                 " calls running and ", waiting_,
                                                 " waiting; try again later"));
    }
    ++waiting_;
    const bool turn =
        mu_.AwaitWithDeadline(absl::Condition(this, &CallLimiter::TurnFree), deadline);
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
  absl::MutexLock lock(&mu_);
  --running_;
}

}  // namespace oomguard::http
