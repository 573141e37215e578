// The server's learned widening of the bound (feedback/bound_widening.h):
// learned from its cluster's records in the store (the checks of the
// server's --cluster whose jobs reported measured peaks or an OOM) and
// refreshed in the background, so that a Check never reads the store; read
// by every Check, applied where the server's --learned_widening says (off by
// default) or the request's Policy.learned_widening asks.
//
// Learned against the estimator's own bound: the records keep the estimate's
// unwidened upper bounds (RankEstimate), so a widening applied to earlier
// verdicts never feeds back into the next one.
#ifndef OOMGUARD_SERVICE_LEARNED_WIDENING_H_
#define OOMGUARD_SERVICE_LEARNED_WIDENING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admission/admission.h"
#include "feedback/bound_widening.h"
#include "service/feedback_metrics.h"
#include "store/check_store.h"

namespace oomguard::service {

struct LearnedWideningOptions {
  // --learned_widening on: apply it to a Check whose Policy leaves
  // learned_widening unset.
  bool apply_by_default = false;
  // The rule's bounds (--learned_widening_max: widening.max_widening).
  feedback::WideningOptions widening;
  // How often the background thread relearns it.
  absl::Duration refresh_interval = absl::Minutes(5);
  // The newest records with reports read per refresh (bounds its cost).
  int64_t max_records = 10'000;
};

// Thread-safe.
class LearnedWidening {
 public:
  // `store` outlives this; `metrics` (may be null) gets the gauge.
  LearnedWidening(store::CheckStore& store, std::string cluster, LearnedWideningOptions options,
                  FeedbackMetrics* metrics);
  // Stops the background thread, if started.
  ~LearnedWidening();
  LearnedWidening(const LearnedWidening&) = delete;
  LearnedWidening& operator=(const LearnedWidening&) = delete;

  // Relearns it from the store now; on a store error keeps the last one.
  absl::Status Refresh();

  // Refreshes now, then every refresh_interval until destroyed.
  void Start();

  feedback::LearnedWidening Current() const;

  // Sets `options`' learned_widening and its basis for a Check whose policy
  // says `requested` (nullopt: unset, the server's default).
  void ApplyTo(std::optional<bool> requested, AdmissionOptions& options) const;

  const std::string& cluster() const { return cluster_; }

 private:
  void RefreshLoop();

  store::CheckStore& store_;
  const std::string cluster_;
  const LearnedWideningOptions options_;
  FeedbackMetrics* const metrics_;

  mutable absl::Mutex mu_;
  feedback::LearnedWidening current_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread refresher_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_LEARNED_WIDENING_H_
