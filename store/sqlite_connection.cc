#include "store/sqlite_connection.h"

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace oomguard::store {
namespace {

// Milliseconds a connection waits for another's lock before failing.
constexpr int kBusyTimeoutMs = 10'000;

class SqliteRow : public SqlRow {
 public:
  explicit SqliteRow(sqlite3_stmt* statement) : statement_(statement) {}
  bool IsNull(int column) const override {
    return sqlite3_column_type(statement_, column) == SQLITE_NULL;
  }
  int64_t Int64(int column) const override { return sqlite3_column_int64(statement_, column); }
  absl::string_view Bytes(int column) const override {
    const void* data = sqlite3_column_blob(statement_, column);
    if (data == nullptr) return {};
    return absl::string_view(static_cast<const char*>(data),
                             static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
  }

 private:
  sqlite3_stmt* statement_;
};

class SqliteConnection : public SqlConnection {
 public:
  SqliteConnection(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  ~SqliteConnection() override {
    for (auto& [sql, statement] : statements_) sqlite3_finalize(statement);
    sqlite3_close(db_);
  }

  SqlDialect dialect() const override { return SqlDialect::kSqlite; }

  absl::Status Execute(absl::string_view sql) override {
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Error(sql);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> Run(absl::string_view sql,
                              std::initializer_list<SqlParam> params) override {
    OOMGUARD_RETURN_IF_ERROR(Query(sql, params, [](const SqlRow&) { return absl::OkStatus(); }));
    return sqlite3_changes64(db_);
  }

  absl::Status Query(absl::string_view sql, std::initializer_list<SqlParam> params,
                     absl::FunctionRef<absl::Status(const SqlRow&)> visit) override {
    OOMGUARD_ASSIGN_OR_RETURN(sqlite3_stmt * statement, Prepared(sql));
    // Reset on every way out, so the statement holds no read lock.
    struct Reset {
      sqlite3_stmt* statement;
      ~Reset() {
        sqlite3_reset(statement);
        sqlite3_clear_bindings(statement);
      }
    } reset{statement};
    int number = 1;
    for (const SqlParam& param : params) {
      const int index =
          sqlite3_bind_parameter_index(statement, absl::StrCat("$", number++).c_str());
      if (index == 0) continue;  // The query does not use it.
      switch (param.kind) {
        case SqlParam::Kind::kInt64:
          sqlite3_bind_int64(statement, index, param.int64);
          break;
        case SqlParam::Kind::kText:
          sqlite3_bind_text64(statement, index, param.bytes.data(), param.bytes.size(),
                              SQLITE_STATIC, SQLITE_UTF8);
          break;
        case SqlParam::Kind::kBytes:
          sqlite3_bind_blob64(statement, index, param.bytes.data(), param.bytes.size(),
                              SQLITE_STATIC);
          break;
      }
    }
    const SqliteRow row(statement);
    for (;;) {
      const int rc = sqlite3_step(statement);
      if (rc == SQLITE_DONE) return absl::OkStatus();
      if (rc != SQLITE_ROW) return Error(sql);
      OOMGUARD_RETURN_IF_ERROR(visit(row));
    }
  }

  // IMMEDIATE: takes the write lock at once (no deadlock upgrading a read).
  absl::Status Begin() override { return Execute("BEGIN IMMEDIATE"); }
  absl::Status BeginExclusive() override { return Execute("BEGIN IMMEDIATE"); }
  absl::Status Commit() override { return Execute("COMMIT"); }
  void Rollback() override {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  absl::StatusOr<sqlite3_stmt*> Prepared(absl::string_view sql) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) return it->second;
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &statement, nullptr) != SQLITE_OK) {
      return Error(sql);
    }
    statements_.emplace(std::string(sql), statement);
    return statement;
  }

  absl::Status Error(absl::string_view what) const {
    return absl::UnavailableError(absl::StrCat("--store sqlite:", path_, ": ", sqlite3_errmsg(db_),
                                               " (in: ", what.substr(0, 60), ")"));
  }

  const std::string path_;
  sqlite3* const db_;
  // Prepared once per connection, by query text.
  absl::flat_hash_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = absl::UnavailableError(absl::StrCat(
        "--store sqlite:", path,
        ": cannot open the database: ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return status;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(path, db);
  // WAL: readers do not block the writer nor it them; FULL: the WAL is
  // fsynced at every commit, so a commit survives a power cut, not only a
  // crash; foreign keys: deleting a check deletes its reports.
  std::string journal_mode;
  OOMGUARD_RETURN_IF_ERROR(
      connection->Query("PRAGMA journal_mode = WAL", {}, [&](const SqlRow& row) {
        journal_mode = std::string(row.Bytes(0));
        return absl::OkStatus();
      }));
  if (journal_mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("--store sqlite:", path, ": the database cannot use write-ahead logging (",
                     "journal mode \"", journal_mode, "\"); put it on a local file system"));
  }
  OOMGUARD_RETURN_IF_ERROR(
      connection->Execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"));
  return connection;
}

}  // namespace oomguard::store
