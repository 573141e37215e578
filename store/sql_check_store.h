// The CheckStore on an SQL database, SQLite or PostgreSQL alike: writes go
// through one connection owned by a GroupCommitWriter (group commit: a
// report is durable when AddReport returns, and concurrent reports share a
// commit); reads through a pool of other connections, so they never wait
// for the writer. A check's record queued but not yet committed is served
// from memory.
#ifndef OOMGUARD_STORE_SQL_CHECK_STORE_H_
#define OOMGUARD_STORE_SQL_CHECK_STORE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/check_store.h"
#include "store/group_commit_writer.h"
#include "store/sql_connection.h"

namespace oomguard::store {

class SqlCheckStore : public CheckStore {
 public:
  // Opens a new connection to the database (called for the writer, and
  // for each reader the pool needs).
  using Connect = std::function<absl::StatusOr<std::unique_ptr<SqlConnection>>()>;

  // Connects, migrates the schema (schema_migrations.h) and starts the
  // writer. `name` names the store in messages (`sqlite:PATH`, the URI).
  static absl::StatusOr<std::unique_ptr<SqlCheckStore>> Open(Connect connect, std::string name,
                                                             const StoreOptions& options);
  // Commits what is queued.
  ~SqlCheckStore() override;

  absl::Status PutCheck(const v1::CheckRecord& record) override;
  absl::Status AddReport(absl::string_view check_id, const v1::StoredReport& report,
                         const v1::JobHandle& handle) override;
  absl::StatusOr<v1::CheckRecord> GetCheck(absl::string_view check_id) override;
  absl::Status ForEachRecord(const RecordFilter& filter,
                             absl::FunctionRef<void(const v1::CheckRecord&)> visit) override;
  absl::StatusOr<int64_t> ApplyRetention(absl::Time now) override;
  absl::Status Flush() override;

 private:
  class Reader;

  SqlCheckStore(Connect connect, std::string name, const StoreOptions& options,
                std::unique_ptr<SqlConnection> writer_connection);

  // A connection from the pool (a new one when none is idle).
  absl::StatusOr<Reader> AcquireReader();
  absl::StatusOr<bool> IsStored(absl::string_view check_id);
  // The records a query of the shape kRecordColumns selects, each visited
  // once its reports are read.
  absl::Status QueryRecords(SqlConnection& connection, absl::string_view sql,
                            std::initializer_list<SqlParam> params,
                            absl::FunctionRef<void(const v1::CheckRecord&)> visit);

  const Connect connect_;
  const std::string name_;
  const StoreOptions options_;
  const std::unique_ptr<SqlConnection> writer_connection_;
  std::unique_ptr<GroupCommitWriter> writer_;

  std::mutex mutex_;
  // Records queued by PutCheck, not yet committed.
  absl::flat_hash_map<std::string, v1::CheckRecord> pending_checks_;
  // The first failure of a background write since the last Flush.
  absl::Status background_error_;
  std::vector<std::unique_ptr<SqlConnection>> idle_readers_;
};

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_SQL_CHECK_STORE_H_
