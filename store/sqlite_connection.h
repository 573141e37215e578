// An SQLite connection (sql_connection.h) on one database file, in WAL mode
// with synchronous=FULL: a committed transaction is on disk (the WAL is
// fsynced at each commit) and readers never wait for the writer.
#ifndef OOMGUARD_STORE_SQLITE_CONNECTION_H_
#define OOMGUARD_STORE_SQLITE_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/sql_connection.h"

namespace oomguard::store {

// Opens (creating it if need be) the database file `path`. Unavailable
// naming `--store sqlite:PATH` when it cannot.
absl::StatusOr<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_SQLITE_CONNECTION_H_
