// A PostgreSQL connection (sql_connection.h) through libpq, for the store
// that replicas share. Parameters go in text form (bytes in binary), results
// come in binary form (integers big-endian, bytes as they are).
#ifndef OOMGUARD_STORE_POSTGRES_CONNECTION_H_
#define OOMGUARD_STORE_POSTGRES_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/sql_connection.h"

namespace oomguard::store {

// Connects to `uri` (libpq's connection URI, passed unchanged). Unavailable
// naming the server (not the password) and libpq's message when it cannot.
absl::StatusOr<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& uri);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_POSTGRES_CONNECTION_H_
