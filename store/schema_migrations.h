// The store's schema, as the migrations that build it, one per version, in
// both dialects side by side. Opening a store applies the ones its database
// lacks (oomguard_schema_version holds the version reached) in one
// transaction; a database newer than kSchemaVersion is refused. Add a
// migration at the end; never change one that has shipped.
//
// Tables: checks (one row per check: the columns queries select on, the
// rest of the CheckRecord as protobuf bytes, record_rows.h) and reports (one
// row per report, StoredReport bytes, in the order received); deleting a
// check deletes its reports.
#ifndef OOMGUARD_STORE_SCHEMA_MIGRATIONS_H_
#define OOMGUARD_STORE_SCHEMA_MIGRATIONS_H_

#include <array>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "store/sql_connection.h"

namespace oomguard::store {

struct SchemaMigration {
  // The version the database has after it.
  int version;
  absl::string_view sqlite;
  absl::string_view postgresql;
};

inline constexpr std::array<SchemaMigration, 1> kSchemaMigrations = {{
    {1,
     R"sql(
CREATE TABLE checks (
  check_id TEXT PRIMARY KEY NOT NULL,
  checked_at_micros INTEGER NOT NULL,
  cluster TEXT NOT NULL,
  slurm_job_id TEXT NOT NULL DEFAULT '',
  kubernetes_namespace TEXT NOT NULL DEFAULT '',
  kubernetes_workload TEXT NOT NULL DEFAULT '',
  record BLOB NOT NULL
);
CREATE INDEX checks_by_time ON checks (checked_at_micros);
CREATE INDEX checks_by_cluster ON checks (cluster, checked_at_micros);
CREATE TABLE reports (
  report_id INTEGER PRIMARY KEY,
  check_id TEXT NOT NULL REFERENCES checks (check_id) ON DELETE CASCADE,
  report BLOB NOT NULL
);
CREATE INDEX reports_by_check ON reports (check_id, report_id);
)sql",
     R"sql(
CREATE TABLE checks (
  check_id TEXT PRIMARY KEY NOT NULL,
  checked_at_micros BIGINT NOT NULL,
  cluster TEXT NOT NULL,
  slurm_job_id TEXT NOT NULL DEFAULT '',
  kubernetes_namespace TEXT NOT NULL DEFAULT '',
  kubernetes_workload TEXT NOT NULL DEFAULT '',
  record BYTEA NOT NULL
);
CREATE INDEX checks_by_time ON checks (checked_at_micros);
CREATE INDEX checks_by_cluster ON checks (cluster, checked_at_micros);
CREATE TABLE reports (
  report_id BIGSERIAL PRIMARY KEY,
  check_id TEXT NOT NULL REFERENCES checks (check_id) ON DELETE CASCADE,
  report BYTEA NOT NULL
);
CREATE INDEX reports_by_check ON reports (check_id, report_id);
)sql"},
}};

inline constexpr int kSchemaVersion = kSchemaMigrations.back().version;

// Brings the database of `connection` to kSchemaVersion. FailedPrecondition
// when it is newer (a later oomguard wrote it): `store` names it.
absl::Status MigrateSchema(SqlConnection& connection, absl::string_view store);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_SCHEMA_MIGRATIONS_H_
