// The server's learned widening of the bound (see learned_widening.h).
#include "service/learned_widening.h"

#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "service/request_log.h"

namespace oomguard::service {
namespace {

// A refresh that failed (the store unreachable): logged, the last widening
// kept.
void LogRefreshError(const absl::Status& status) {
  if (status.ok()) return;
  WriteLogLine(FormatEventLine("learned_widening_refresh_failed",
                               {{"error", std::string(status.message())}}, absl::Now()));
}

}  // namespace

LearnedWidening::LearnedWidening(store::CheckStore& store, std::string cluster,
                                 LearnedWideningOptions options, FeedbackMetrics* metrics)
    : store_(store), cluster_(std::move(cluster)), options_(options), metrics_(metrics) {}

LearnedWidening::~LearnedWidening() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (refresher_.joinable()) refresher_.join();
}

absl::Status LearnedWidening::Refresh() {
  store::RecordFilter filter;
  filter.cluster = cluster_;
  filter.with_reports = true;
  filter.limit = options_.max_records;
  std::vector<double> needed;
  absl::Status read = store_.ForEachRecord(filter, [&needed](const v1::CheckRecord& record) {
    if (std::optional<double> w = feedback::NeededWidening(record)) needed.push_back(*w);
  });
  if (!read.ok()) return read;
  const feedback::LearnedWidening learned = feedback::LearnWidening(needed, options_.widening);
  {
    absl::MutexLock lock(&mu_);
    current_ = learned;
  }
  if (metrics_ != nullptr) metrics_->SetLearnedWidening(learned.widening);
  return absl::OkStatus();
}

void LearnedWidening::Start() {
  LogRefreshError(Refresh());
  refresher_ = std::thread([this] { RefreshLoop(); });
}

void LearnedWidening::RefreshLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.refresh_interval)) return;
    }
    LogRefreshError(Refresh());
  }
}

feedback::LearnedWidening LearnedWidening::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

void LearnedWidening::ApplyTo(std::optional<bool> requested, AdmissionOptions& options) const {
  if (!requested.value_or(options_.apply_by_default)) return;
  const feedback::LearnedWidening current = Current();
  if (current.widening <= 0) return;
  options.learned_widening = current.widening;
  options.learned_widening_jobs = static_cast<uint32_t>(current.measured_jobs);
  options.learned_widening_cluster = cluster_;
}

}  // namespace oomguard::service
