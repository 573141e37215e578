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

  absl::Status Query(absl::string_view sql, std::initializer_list<SqlParam> params,
                     absl::FunctionRef<absl::Status(const SqlRow&)> visit) override {
    OOMGUARD_ASSIGN_OR_RETURN(Result result, Exec(sql, params));
    const int rows = PQntuples(result.get());
    for (int i = 0; i < rows; ++i) OOMGUARD_RETURN_IF_ERROR(visit(PostgresRow(result.get(), i)));
    return absl::OkStatus();
  }

  absl::Status Begin() override { return Execute("BEGIN"); }
  absl::Status BeginExclusive() override { return Execute(kBeginMigration); }
  absl::Status Commit() override { return Execute("COMMIT"); }
  void Rollback() override {
    if (PQstatus(connection_) != CONNECTION_OK) PQreset(connection_);
    if (PQtransactionStatus(connection_) != PQTRANS_IDLE) Result(PQexec(connection_, "ROLLBACK"));
  }

 private:
  absl::StatusOr<Result> Exec(absl::string_view sql, std::initializer_list<SqlParam> params) {
    std::vector<std::string> text;  // The integers' text.
    text.reserve(params.size());
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    for (const SqlParam& param : params) {
      if (param.kind == SqlParam::Kind::kInt64) {
        text.push_back(absl::StrCat(param.int64));
        values.push_back(text.back().c_str());
        lengths.push_back(static_cast<int>(text.back().size()));
        formats.push_back(0);
      } else {
        values.push_back(param.bytes.data());
        lengths.push_back(static_cast<int>(param.bytes.size()));
        // Text goes as binary too: its binary form is its bytes, no NUL needed.
        formats.push_back(1);
      }
    }
    const std::string query(sql);
    Result result(PQexecParams(connection_, query.c_str(), static_cast<int>(values.size()), nullptr,
                               values.data(), lengths.data(), formats.data(),
                               /*resultFormat=*/1));
    OOMGUARD_RETURN_IF_ERROR(Check(result.get(), sql));
    return result;
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
