// The store of checks and what came back for them (feedback.proto's
// CheckRecord): one record per check a server with `--store` answered, the
// reports of its measured peaks and outcome appended to it. Two kinds
// (store_url.h): SQLite, embedded, the default for one server; PostgreSQL,
// shared by the replicas that serve one cluster, each seeing the others'
// records. Thread-safe: the server's handlers call it concurrently.
#ifndef OOMGUARD_STORE_CHECK_STORE_H_
#define OOMGUARD_STORE_CHECK_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "oomguard/v1/feedback.pb.h"
#include "store/store_url.h"

namespace oomguard::store {

// How long records are kept (documented in deploy/README.md, "The store").
struct RetentionOptions {
  // Records whose check is older go (0: no age limit).
  absl::Duration max_age = absl::Hours(24 * 180);
  // Beyond this many records the oldest go (0: no count limit).
  int64_t max_records = 1'000'000;
};

struct StoreOptions {
  RetentionOptions retention;
  // A check's record is written in the background (a Check does not wait
  // for the disk); it is committed before any write queued after it, so a
  // report for it that this server acknowledges finds it. At most this many
  // records wait; beyond, PutCheck drops the record and says so
  // (ResourceExhausted), the Check itself still answered.
  int max_pending_checks = 10'000;
};

// Which records ForEachRecord visits.
struct RecordFilter {
  // Only this cluster's (empty: every cluster's).
  std::string cluster;
  // Only records with at least one report.
  bool with_reports = false;
  // Only records with a Slurm job id or a Kubernetes workload (the DCGM
  // reader's candidates).
  bool with_handle = false;
  // Only checks made at or after this time.
  absl::Time checked_since = absl::InfinitePast();
  // At most this many, newest first (0: all).
  int64_t limit = 0;
};

class CheckStore {
 public:
  virtual ~CheckStore() = default;

  // Queues `record` (check_id set, no reports) for writing; see
  // StoreOptions::max_pending_checks. AlreadyExists when its id is taken.
  virtual absl::Status PutCheck(const v1::CheckRecord& record) = 0;

  // Appends `report` to the record of `check_id`, and sets the record's
  // handle fields that `handle` sets; returns once it is durable (SQLite:
  // committed with synchronous=FULL in WAL mode; PostgreSQL: committed).
  // NotFound naming the check id when no record has it.
  virtual absl::Status AddReport(absl::string_view check_id, const v1::StoredReport& report,
                                 const v1::JobHandle& handle) = 0;

  // The record with its reports, in the order received. NotFound naming the
  // check id.
  virtual absl::StatusOr<v1::CheckRecord> GetCheck(absl::string_view check_id) = 0;

  // Calls `visit` for each record `filter` selects, with its reports.
  virtual absl::Status ForEachRecord(const RecordFilter& filter,
                                     absl::FunctionRef<void(const v1::CheckRecord&)> visit) = 0;

  // Deletes what the retention options say is past keeping, as of `now`;
  // returns how many records went. The server calls it periodically.
  virtual absl::StatusOr<int64_t> ApplyRetention(absl::Time now) = 0;

  // Waits until every queued write is committed (tests, shutdown).
  virtual absl::Status Flush() = 0;
};

// Opens (creating and migrating to the current schema) the store `url`
// names (store_url.h). InvalidArgument naming `--store` for a bad URL;
// Unavailable when the database cannot be reached or opened;
// FailedPrecondition when its schema is newer than this oomguard knows.
absl::StatusOr<std::unique_ptr<CheckStore>> OpenCheckStore(const StoreUrl& url,
                                                           const StoreOptions& options);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_CHECK_STORE_H_
