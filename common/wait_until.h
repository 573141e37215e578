// Waiting on a std::condition_variable until a predicate holds or an
// absl::Time deadline passes (absl::InfiniteFuture() waits without end).
// The server code uses std::mutex rather than absl::Mutex so that
// ThreadSanitizer, which cannot see inside Debian's Abseil, sees its locks.
#ifndef OOMGUARD_COMMON_WAIT_UNTIL_H_
#define OOMGUARD_COMMON_WAIT_UNTIL_H_

#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace oomguard {

// Whether `ready()` held (true) or the deadline passed first (false).
template <typename Predicate>
bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, absl::Time deadline,
               Predicate ready) {
  if (deadline == absl::InfiniteFuture()) {
    cv.wait(lock, ready);
    return true;
  }
  return cv.wait_until(lock, absl::ToChronoTime(deadline), ready);
}

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_WAIT_UNTIL_H_
