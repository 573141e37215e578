#include "store/schema_migrations.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace oomguard::store {
namespace {

constexpr absl::string_view kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS oomguard_schema_version (version BIGINT NOT NULL)";

absl::Status MigrateInTransaction(SqlConnection& connection, absl::string_view store) {
  OOMGUARD_RETURN_IF_ERROR(connection.Execute(kCreateVersionTable));
  int64_t version = -1;
  OOMGUARD_RETURN_IF_ERROR(
      connection.Query("SELECT version FROM oomguard_schema_version", {}, [&](const SqlRow& row) {
        version = row.Int64(0);
        return absl::OkStatus();
      }));
  if (version < 0) {
    version = 0;
    OOMGUARD_RETURN_IF_ERROR(
        connection.Run("INSERT INTO oomguard_schema_version (version) VALUES (0)", {}).status());
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--store ", store, ": the database's schema is version ", version,
        ", newer than this oomguard's ", kSchemaVersion, "; run the oomguard that wrote it"));
  }
  for (const SchemaMigration& migration : kSchemaMigrations) {
    if (migration.version <= version) continue;
    OOMGUARD_RETURN_IF_ERROR(connection.Execute(
        connection.dialect() == SqlDialect::kSqlite ? migration.sqlite : migration.postgresql));
    OOMGUARD_RETURN_IF_ERROR(connection
                                 .Run("UPDATE oomguard_schema_version SET version = $1",
                                      {SqlParam::Int64(migration.version)})
                                 .status());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MigrateSchema(SqlConnection& connection, absl::string_view store) {
  OOMGUARD_RETURN_IF_ERROR(connection.BeginExclusive());
  absl::Status status = MigrateInTransaction(connection, store);
  if (status.ok()) status = connection.Commit();
  if (!status.ok()) connection.Rollback();
  return status;
}

}  // namespace oomguard::store
