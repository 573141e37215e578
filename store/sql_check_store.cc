#include "store/sql_check_store.h"

#include <unistd.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "feedback/report_limits.h"
#include "store/record_rows.h"
#include "store/schema_migrations.h"

namespace oomguard::store {
namespace {

// The queries, one text for both dialects (parameters $1, $2, ...).
constexpr absl::string_view kInsertCheck =
    "INSERT INTO checks (check_id, checked_at_micros, cluster, slurm_job_id, "
    "kubernetes_namespace, kubernetes_workload, record) VALUES ($1, $2, $3, $4, $5, $6, $7) "
    "ON CONFLICT (check_id) DO NOTHING";
constexpr absl::string_view kCheckExists = "SELECT 1 FROM checks WHERE check_id = $1";
// Sets the handle fields the report sets; matches one row when the check is
// stored.
constexpr absl::string_view kUpdateHandle =
    "UPDATE checks SET slurm_job_id = COALESCE(NULLIF(CAST($2 AS TEXT), ''), slurm_job_id), "
    "kubernetes_namespace = COALESCE(NULLIF(CAST($3 AS TEXT), ''), kubernetes_namespace), "
    "kubernetes_workload = COALESCE(NULLIF(CAST($4 AS TEXT), ''), kubernetes_workload) "
    "WHERE check_id = $1";
constexpr absl::string_view kInsertReport =
    "INSERT INTO reports (check_id, report) VALUES ($1, $2)";
// Records with their reports, in the order QueryRecords assembles them.
constexpr absl::string_view kSelectCheck =
    "SELECT c.check_id, c.record, c.slurm_job_id, c.kubernetes_namespace, "
    "c.kubernetes_workload, r.report FROM checks c LEFT JOIN reports r ON r.check_id = "
    "c.check_id WHERE c.check_id = $1 ORDER BY r.report_id";
// $1 cluster ('' any), $2 checked since, $3 with handle (0/1), $4 with
// reports (0/1), $5 at most.
constexpr absl::string_view kSelectRecords =
    "SELECT c.check_id, c.record, c.slurm_job_id, c.kubernetes_namespace, "
    "c.kubernetes_workload, r.report FROM (SELECT * FROM checks WHERE (CAST($1 AS TEXT) = '' "
    "OR cluster = $1) AND checked_at_micros >= $2 AND ($3 = 0 OR slurm_job_id <> '' OR "
    "kubernetes_workload <> '') AND ($4 = 0 OR EXISTS (SELECT 1 FROM reports x WHERE "
    "x.check_id = checks.check_id)) ORDER BY checked_at_micros DESC, check_id DESC LIMIT $5) c "
    "LEFT JOIN reports r ON r.check_id = c.check_id "
    "ORDER BY c.checked_at_micros DESC, c.check_id DESC, r.report_id";
constexpr absl::string_view kDeleteOlder = "DELETE FROM checks WHERE checked_at_micros < $1";
// $1 no limit, $2 how many to keep.
constexpr absl::string_view kDeleteBeyondCount =
    "DELETE FROM checks WHERE check_id IN (SELECT check_id FROM checks "
    "ORDER BY checked_at_micros DESC, check_id DESC LIMIT $1 OFFSET $2)";

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

absl::Status NotStored(absl::string_view check_id) {
  return absl::NotFoundError(absl::StrCat("check_id \"", check_id,
                                          "\": no check with this id is stored (unknown, or "
                                          "past the store's retention)"));
}

// One line on stderr in one write(2) (the store has no logger of its own).
void LogBackgroundFailure(absl::string_view check_id, const absl::Status& status) {
  const std::string line = absl::StrCat("msg=store_write_failed check_id=", check_id, " error=\"",
                                        status.message(), "\"\n");
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

// A pooled reader connection, returned to the pool when destroyed.
class SqlCheckStore::Reader {
 public:
  Reader(SqlCheckStore* store, std::unique_ptr<SqlConnection> connection)
      : store_(store), connection_(std::move(connection)) {}
  Reader(Reader&&) = default;
  ~Reader() {
    if (connection_ == nullptr) return;
    std::lock_guard<std::mutex> lock(store_->mutex_);
    store_->idle_readers_.push_back(std::move(connection_));
  }
  SqlConnection& operator*() { return *connection_; }
  SqlConnection* operator->() { return connection_.get(); }

 private:
  SqlCheckStore* store_;
  std::unique_ptr<SqlConnection> connection_;
};

absl::StatusOr<std::unique_ptr<SqlCheckStore>> SqlCheckStore::Open(Connect connect,
                                                                   std::string name,
                                                                   const StoreOptions& options) {
  OOMGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqlConnection> writer, connect());
  OOMGUARD_RETURN_IF_ERROR(MigrateSchema(*writer, name));
  return std::unique_ptr<SqlCheckStore>(
      new SqlCheckStore(std::move(connect), std::move(name), options, std::move(writer)));
}

SqlCheckStore::SqlCheckStore(Connect connect, std::string name, const StoreOptions& options,
                             std::unique_ptr<SqlConnection> writer_connection)
    : connect_(std::move(connect)),
      name_(std::move(name)),
      options_(options),
      writer_connection_(std::move(writer_connection)),
      writer_(std::make_unique<GroupCommitWriter>(writer_connection_.get())) {}

SqlCheckStore::~SqlCheckStore() { writer_.reset(); }

absl::StatusOr<SqlCheckStore::Reader> SqlCheckStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<SqlConnection> connection = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return Reader(this, std::move(connection));
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqlConnection> connection, connect_());
  return Reader(this, std::move(connection));
}

absl::StatusOr<bool> SqlCheckStore::IsStored(absl::string_view check_id) {
  OOMGUARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
  bool stored = false;
  OOMGUARD_RETURN_IF_ERROR(
      reader->Query(kCheckExists, {SqlParam::Text(check_id)}, [&](const SqlRow&) {
        stored = true;
        return absl::OkStatus();
      }));
  return stored;
}

absl::Status SqlCheckStore::PutCheck(const v1::CheckRecord& record) {
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateCheckId(record.check_id()));
  const std::string& check_id = record.check_id();
  auto taken = [&] {
    return absl::AlreadyExistsError(
        absl::StrCat("check_id \"", check_id, "\": a check with this id is already stored"));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_checks_.size() >= static_cast<size_t>(options_.max_pending_checks)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the store ", name_, " has ", pending_checks_.size(),
          " checks waiting to be written; the record of check ", check_id, " is dropped"));
    }
    if (!pending_checks_.emplace(check_id, record).second) return taken();
  }
  absl::StatusOr<bool> stored = IsStored(check_id);
  if (!stored.ok() || *stored) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_checks_.erase(check_id);
    return stored.ok() ? taken() : stored.status();
  }
  auto row = std::make_shared<const CheckRow>(ToCheckRow(record));
  writer_->Enqueue(
      [this, row] {
        return writer_connection_
            ->Run(kInsertCheck,
                  {SqlParam::Text(row->check_id), SqlParam::Int64(row->checked_at_micros),
                   SqlParam::Text(row->cluster), SqlParam::Text(row->handle.slurm_job_id()),
                   SqlParam::Text(row->handle.kubernetes_namespace()),
                   SqlParam::Text(row->handle.kubernetes_workload()),
                   SqlParam::Bytes(row->record_bytes)})
            .status();
      },
      [this, row](absl::Status status) {
        if (!status.ok()) LogBackgroundFailure(row->check_id, status);
        std::lock_guard<std::mutex> lock(mutex_);
        pending_checks_.erase(row->check_id);
        if (!status.ok() && background_error_.ok()) background_error_ = status;
      });
  return absl::OkStatus();
}

absl::Status SqlCheckStore::AddReport(absl::string_view check_id, const v1::StoredReport& report,
                                      const v1::JobHandle& handle) {
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateCheckId(check_id));
  const std::string report_bytes = ReportBytes(report);
  bool stored = false;
  OOMGUARD_RETURN_IF_ERROR(writer_->Run([&]() -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(
        const int64_t matched,
        writer_connection_->Run(kUpdateHandle,
                                {SqlParam::Text(check_id), SqlParam::Text(handle.slurm_job_id()),
                                 SqlParam::Text(handle.kubernetes_namespace()),
                                 SqlParam::Text(handle.kubernetes_workload())}));
    stored = matched > 0;
    if (!stored) return absl::OkStatus();
    return writer_connection_
        ->Run(kInsertReport, {SqlParam::Text(check_id), SqlParam::Bytes(report_bytes)})
        .status();
  }));
  return stored ? absl::OkStatus() : NotStored(check_id);
}

absl::Status SqlCheckStore::QueryRecords(SqlConnection& connection, absl::string_view sql,
                                         std::initializer_list<SqlParam> params,
                                         absl::FunctionRef<void(const v1::CheckRecord&)> visit) {
  // Rows come ordered by check, then report: a record is complete when the
  // next check's row (or the end) comes.
  std::optional<v1::CheckRecord> record;
  OOMGUARD_RETURN_IF_ERROR(connection.Query(sql, params, [&](const SqlRow& row) -> absl::Status {
    const absl::string_view check_id = row.Bytes(0);
    if (!record.has_value() || record->check_id() != check_id) {
      if (record.has_value()) {
        FinishRecord(&*record);
        visit(*record);
      }
      v1::JobHandle handle;
      handle.set_slurm_job_id(std::string(row.Bytes(2)));
      handle.set_kubernetes_namespace(std::string(row.Bytes(3)));
      handle.set_kubernetes_workload(std::string(row.Bytes(4)));
      OOMGUARD_ASSIGN_OR_RETURN(record, FromCheckRow(check_id, row.Bytes(1), handle));
    }
    if (row.IsNull(5)) return absl::OkStatus();
    return AppendReportBytes(check_id, row.Bytes(5), &*record);
  }));
  if (record.has_value()) {
    FinishRecord(&*record);
    visit(*record);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::CheckRecord> SqlCheckStore::GetCheck(absl::string_view check_id) {
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateCheckId(check_id));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_checks_.find(check_id);
    if (it != pending_checks_.end()) {
      v1::CheckRecord record = it->second;
      FinishRecord(&record);
      return record;
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
  std::optional<v1::CheckRecord> found;
  OOMGUARD_RETURN_IF_ERROR(QueryRecords(*reader, kSelectCheck, {SqlParam::Text(check_id)},
                                        [&](const v1::CheckRecord& record) { found = record; }));
  if (!found.has_value()) return NotStored(check_id);
  return *std::move(found);
}

absl::Status SqlCheckStore::ForEachRecord(const RecordFilter& filter,
                                          absl::FunctionRef<void(const v1::CheckRecord&)> visit) {
  OOMGUARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
  const int64_t since = filter.checked_since == absl::InfinitePast()
                            ? std::numeric_limits<int64_t>::min()
                            : ToMicros(filter.checked_since);
  return QueryRecords(
      *reader, kSelectRecords,
      {SqlParam::Text(filter.cluster), SqlParam::Int64(since),
       SqlParam::Int64(filter.with_handle ? 1 : 0), SqlParam::Int64(filter.with_reports ? 1 : 0),
       SqlParam::Int64(filter.limit > 0 ? filter.limit : kNoLimit)},
      visit);
}

absl::StatusOr<int64_t> SqlCheckStore::ApplyRetention(absl::Time now) {
  const RetentionOptions& retention = options_.retention;
  int64_t deleted = 0;
  OOMGUARD_RETURN_IF_ERROR(writer_->Run([&]() -> absl::Status {
    deleted = 0;
    if (retention.max_age > absl::ZeroDuration()) {
      OOMGUARD_ASSIGN_OR_RETURN(
          const int64_t old,
          writer_connection_->Run(kDeleteOlder,
                                  {SqlParam::Int64(ToMicros(now - retention.max_age))}));
      deleted += old;
    }
    if (retention.max_records > 0) {
      OOMGUARD_ASSIGN_OR_RETURN(
          const int64_t beyond,
          writer_connection_->Run(kDeleteBeyondCount, {SqlParam::Int64(kNoLimit),
                                                       SqlParam::Int64(retention.max_records)}));
      deleted += beyond;
    }
    return absl::OkStatus();
  }));
  return deleted;
}

absl::Status SqlCheckStore::Flush() {
  OOMGUARD_RETURN_IF_ERROR(writer_->Run([] { return absl::OkStatus(); }));
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(background_error_, absl::OkStatus());
}

}  // namespace oomguard::store
