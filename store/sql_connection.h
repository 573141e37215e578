// The few things the store asks of a database connection, so that one
// implementation of CheckStore (sql_check_store.h) runs on SQLite and on
// PostgreSQL. Queries are written once for both dialects, with parameters
// $1, $2, ... (sql_check_store.cc). A connection is used by one thread at a
// time; errors are Unavailable, naming the store and the database's message.
#ifndef OOMGUARD_STORE_SQL_CONNECTION_H_
#define OOMGUARD_STORE_SQL_CONNECTION_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/group_commit_writer.h"

namespace oomguard::store {

// A query parameter: an integer, text, or bytes (BLOB / BYTEA).
struct SqlParam {
  enum class Kind { kInt64, kText, kBytes };
  static SqlParam Int64(int64_t value) { return {Kind::kInt64, value, {}}; }
  static SqlParam Text(absl::string_view value) { return {Kind::kText, 0, value}; }
  static SqlParam Bytes(absl::string_view value) { return {Kind::kBytes, 0, value}; }

  Kind kind;
  int64_t int64;
  absl::string_view bytes;  // Borrowed for the call.
};

// One result row; columns count from 0.
class SqlRow {
 public:
  virtual ~SqlRow() = default;
  virtual bool IsNull(int column) const = 0;
  virtual int64_t Int64(int column) const = 0;
  // Text or bytes; valid during the visit.
  virtual absl::string_view Bytes(int column) const = 0;
};

enum class SqlDialect { kSqlite, kPostgresql };

// Begin/Commit/Rollback (TransactionRunner) open and end a transaction that
// writes.
class SqlConnection : public TransactionRunner {
 public:
  virtual SqlDialect dialect() const = 0;
  // Runs `sql`: one or more statements without parameters.
  virtual absl::Status Execute(absl::string_view sql) = 0;
  // Runs one statement; returns the rows it inserted, updated or deleted.
  virtual absl::StatusOr<int64_t> Run(absl::string_view sql,
                                      std::initializer_list<SqlParam> params) = 0;
  // Runs one query, calling `visit` per row; the first non-OK from `visit`
  // stops it and is returned.
  virtual absl::Status Query(absl::string_view sql, std::initializer_list<SqlParam> params,
                             absl::FunctionRef<absl::Status(const SqlRow&)> visit) = 0;
  // Begins a transaction that holds the database's schema lock (migrations:
  // replicas starting together migrate one at a time).
  virtual absl::Status BeginExclusive() = 0;
};

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_SQL_CONNECTION_H_
