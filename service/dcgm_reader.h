// The DCGM reader of `oomguard serve --prometheus_url`: a thread that, every
// interval, takes the stored checks with a handle (a Slurm job id or a
// Kubernetes workload) made within the lookback, asks Prometheus for the
// peak framebuffer use of each of their GPUs since the check (dcgm_query.h:
// DCGM_FI_DEV_FB_USED, max_over_time), and adds a DCGM report through the
// service's own Report path (reporter "dcgm") to each record whose peaks
// changed. It reads the store and Prometheus on its own thread, each query
// bounded in time and size, so a Check never waits on it.
#ifndef OOMGUARD_SERVICE_DCGM_READER_H_
#define OOMGUARD_SERVICE_DCGM_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "oomguard/v1/feedback.pb.h"
#include "service/prometheus_client.h"
#include "store/check_store.h"

namespace oomguard::service {

// The reporter the DCGM reader's reports are stored with (StoredReport.reporter).
inline constexpr char kDcgmReporter[] = "dcgm";

struct DcgmReaderOptions {
  // Prometheus's base URL (prometheus_client.h); empty: no reader.
  std::string prometheus_url;
  // Time between two rounds (>= 1 s). The exporter samples every 30 s by
  // default and Prometheus scrapes it every 15 to 60 s.
  absl::Duration interval = absl::Minutes(1);
  // Checks made longer ago are no longer read (their jobs have ended).
  absl::Duration lookback = absl::Hours(24 * 14);
  // At most this many records (the newest) are read per round.
  int64_t max_records_per_round = 1000;
  // Longest time one query may take.
  absl::Duration query_timeout = absl::Seconds(10);
  // Largest answer read.
  size_t max_answer_bytes = size_t{8} << 20;
  // Only this cluster's records (the server's --cluster; "" every record).
  std::string cluster;
};

// Adds one report through the service's Report path (RequestHandlers::Report
// with reporter kDcgmReporter), by `deadline`.
using DcgmReportSink =
    std::function<absl::Status(const v1::ReportRequest& report, absl::Time deadline)>;

// What one round did.
struct DcgmRound {
  int records = 0;    // Records with a handle read from the store.
  int reported = 0;   // Reports added.
  int unchanged = 0;  // Read, nothing new (or no GPU found yet).
  int failed = 0;     // Query or report failed (first_error says why).
  absl::Status first_error;
};

class DcgmReader {
 public:
  // InvalidArgument naming the option for bad options (prometheus_url
  // empty or not a URL, interval under 1 s, ...). `store` must outlive the
  // reader; so must what `sink` calls.
  static absl::StatusOr<std::unique_ptr<DcgmReader>> Create(DcgmReaderOptions options,
                                                            store::CheckStore* store,
                                                            DcgmReportSink sink);
  ~DcgmReader();  // Stop().

  // One round as of `now`, on the caller's thread (the thread's rounds and
  // tests).
  DcgmRound RunRound(absl::Time now);

  // Runs a round now and then every interval on a thread of its own, each
  // round with any failure or report logged in one line, until Stop.
  void Start();
  // Ends the thread: a query in flight is cut off at once. Idempotent.
  void Stop();

 private:
  DcgmReader(DcgmReaderOptions options, store::CheckStore* store, DcgmReportSink sink,
             std::unique_ptr<PrometheusClient> prometheus);
  // Reads `record`'s peaks and reports them if they changed: true when
  // reported, false when unchanged.
  absl::StatusOr<bool> ReadRecord(const v1::CheckRecord& record, absl::Time now);

  const DcgmReaderOptions options_;
  store::CheckStore* const store_;
  const DcgmReportSink sink_;
  const std::unique_ptr<PrometheusClient> prometheus_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_DCGM_READER_H_
