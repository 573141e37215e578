// How many calls of a guarded HTTP server (the HTTP/JSON API's calls, the
// webhook's checks) run at once: a fixed number of turns, a bounded number of
// calls waiting for one. A call beyond both is refused at once (UNAVAILABLE,
// HTTP 503: overloaded) instead of queueing without bound; a waiting call
// whose deadline passes gets DEADLINE_EXCEEDED (HTTP 504). Thread-safe.
#ifndef OOMGUARD_NET_CALL_LIMITER_H_
#define OOMGUARD_NET_CALL_LIMITER_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace oomguard::net {

class CallLimiter {
 public:
  // `running` >= 1 calls at once, `waiting` >= 0 more waiting for a turn.
  CallLimiter(int running, int waiting) : max_running_(running), max_waiting_(waiting) {}

  // A turn, by `deadline`; give it back with Release() when OK.
  absl::Status Acquire(absl::Time deadline);
  void Release();

 private:
  bool TurnFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ < max_running_; }

  const int max_running_;
  const int max_waiting_;
  // std::mutex, not absl::Mutex: Debian's Abseil is not built with
  // ThreadSanitizer annotations, so TSan (CI's server tests) could not see
  // an absl::Mutex and would report every access it guards.
  std::mutex mu_;
  std::condition_variable turn_freed_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_CALL_LIMITER_H_
