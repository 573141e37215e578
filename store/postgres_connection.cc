#include "store/postgres_connection.h"

#include <endian.h>
#include <libpq-fe.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace oomguard::store {
namespace {

// Any fixed number: the lock migrations hold (pg_advisory_xact_lock), so
// that replicas starting together migrate one after the other.
constexpr absl::string_view kBeginMigration = "BEGIN; SELECT pg_advisory_xact_lock(7400240029)";

// The owner of a PGresult.
struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

class PostgresRow : public SqlRow {
 public:
  PostgresRow(const PGresult* result, int row) : result_(result), row_(row) {}
  bool IsNull(int column) const override { return PQgetisnull(result_, row_, column) != 0; }
  // int2, int4 or int8, big-endian.
  int64_t Int64(int column) const override {
    const char* value = PQgetvalue(result_, row_, column);
    switch (PQgetlength(result_, row_, column)) {
      case 2: {
        uint16_t v;
        std::memcpy(&v, value, 2);
        return static_cast<int16_t>(be16toh(v));
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, value, 4);
        return static_cast<int32_t>(be32toh(v));
      }
      case 8: {
        uint64_t v;
        std::memcpy(&v, value, 8);
        return static_cast<int64_t>(be64toh(v));
      }
      default:
        return 0;
    }
  }
  absl::string_view Bytes(int column) const override {
    return absl::string_view(PQgetvalue(result_, row_, column),
                             static_cast<size_t>(PQgetlength(result_, row_, column)));
  }

 private:
  const PGresult* result_;
  int row_;
};

class PostgresConnection : public SqlConnection {
 public:
  PostgresConnection(std::string server, PGconn* connection)
      : server_(std::move(server)), connection_(connection) {}
  ~PostgresConnection() override { PQfinish(connection_); }

  SqlDialect dialect() const override { return SqlDialect::kPostgresql; }

  absl::Status Execute(absl::string_view sql) override {
    const std::string text(sql);
    Result result(PQexec(connection_, text.c_str()));
    return Check(result.get(), sql);
  }

  absl::StatusOr<int64_t> Run(absl::string_view sql,
                              std::initializer_list<SqlParam> params) override {
    OOMGUARD_ASSIGN_OR_RETURN(Result result, Exec(sql, params));
    int64_t changed = 0;
    const char* tuples = PQcmdTuples(result.get());
    if (*tuples != '\0' && !absl::SimpleAtoi(tuples, &changed)) changed = 0;
    return changed;
  }

  // Row by row (libpq's single-row mode): a query over every record does
  // not hold them all in memory.
  absl::Status Query(absl::string_view sql, std::initializer_list<SqlParam> params,
                     absl::FunctionRef<absl::Status(const SqlRow&)> visit) override {
    const Params bound(params);
    const std::string query(sql);
    if (!PQsendQueryParams(connection_, query.c_str(), bound.count(), nullptr, bound.values(),
                           bound.lengths(), bound.formats(), /*resultFormat=*/1) ||
        !PQsetSingleRowMode(connection_)) {
      absl::Status error = Check(nullptr, sql);
      Drain();
      return error;
    }
    absl::Status status;
    while (Result result = Result(PQgetResult(connection_))) {
      if (!status.ok()) continue;  // Drain what is left after a failure.
      if (PQresultStatus(result.get()) == PGRES_SINGLE_TUPLE) {
        status = visit(PostgresRow(result.get(), 0));
      } else {
        status = Check(result.get(), sql);  // The end (TUPLES_OK), or an error.
      }
    }
    return status;
  }

  absl::Status Begin() override { return Execute("BEGIN"); }
  absl::Status BeginExclusive() override { return Execute(kBeginMigration); }
  absl::Status Commit() override { return Execute("COMMIT"); }
  void Rollback() override {
    if (PQstatus(connection_) != CONNECTION_OK) PQreset(connection_);
    if (PQtransactionStatus(connection_) != PQTRANS_IDLE) Result(PQexec(connection_, "ROLLBACK"));
  }

 private:
  // Parameters as libpq takes them: integers in text form, text and bytes
  // in binary form (their bytes as they are: no NUL needed, none escaped).
  class Params {
   public:
    explicit Params(std::initializer_list<SqlParam> params) {
      text_.reserve(params.size());
      for (const SqlParam& param : params) {
        if (param.kind == SqlParam::Kind::kInt64) {
          text_.push_back(absl::StrCat(param.int64));
          values_.push_back(text_.back().c_str());
          lengths_.push_back(static_cast<int>(text_.back().size()));
          formats_.push_back(0);
        } else {
          values_.push_back(param.bytes.data());
          lengths_.push_back(static_cast<int>(param.bytes.size()));
          formats_.push_back(1);
        }
      }
    }
    int count() const { return static_cast<int>(values_.size()); }
    const char* const* values() const { return values_.data(); }
    const int* lengths() const { return lengths_.data(); }
    const int* formats() const { return formats_.data(); }

   private:
    std::vector<std::string> text_;  // The integers' text.
    std::vector<const char*> values_;
    std::vector<int> lengths_;
    std::vector<int> formats_;
  };

  absl::StatusOr<Result> Exec(absl::string_view sql, std::initializer_list<SqlParam> params) {
    const Params bound(params);
    const std::string query(sql);
    Result result(PQexecParams(connection_, query.c_str(), bound.count(), nullptr, bound.values(),
                               bound.lengths(), bound.formats(), /*resultFormat=*/1));
    OOMGUARD_RETURN_IF_ERROR(Check(result.get(), sql));
    return result;
  }

  // Reads and drops what a sent query still has to give.
  void Drain() {
    while (Result result = Result(PQgetResult(connection_))) {
    }
  }

  absl::Status Check(const PGresult* result, absl::string_view what) {
    const ExecStatusType status = PQresultStatus(result);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return absl::OkStatus();
    absl::Status error = absl::UnavailableError(absl::StrCat(
        "--store ", server_, ": ", absl::StripTrailingAsciiWhitespace(PQerrorMessage(connection_)),
        " (in: ", what.substr(0, 60), ")"));
    // A lost connection (the server restarted): connect again for the next
    // call; this one fails.
    if (PQstatus(connection_) == CONNECTION_BAD) PQreset(connection_);
    return error;
  }

  const std::string server_;
  PGconn* const connection_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& uri) {
  PGconn* connection = PQconnectdb(uri.c_str());
  // Named by host, port and database: the URI may hold a password.
  const std::string server =
      connection == nullptr
          ? std::string("postgresql://")
          : absl::StrCat("postgresql://", PQhost(connection) ? PQhost(connection) : "", ":",
                         PQport(connection) ? PQport(connection) : "", "/",
                         PQdb(connection) ? PQdb(connection) : "");
  if (connection == nullptr || PQstatus(connection) != CONNECTION_OK) {
    absl::Status status = absl::UnavailableError(absl::StrCat(
        "--store ", server, ": cannot connect: ",
        connection == nullptr ? "out of memory"
                              : absl::StripTrailingAsciiWhitespace(PQerrorMessage(connection))));
    PQfinish(connection);
    return status;
  }
  auto result = std::make_unique<PostgresConnection>(server, connection);
  // Quiet the server's notices (e.g. "relation already exists, skipping").
  OOMGUARD_RETURN_IF_ERROR(result->Execute("SET client_min_messages = warning"));
  return result;
}

}  // namespace oomguard::store
