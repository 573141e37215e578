// The `--store` flag's value: which database keeps the checks and their
// feedback. `sqlite:PATH` (a file; its directory must exist; the default
// state directory is /var/lib/oomguard, deploy/README.md) or a PostgreSQL
// connection URI, `postgresql://USER@HOST:PORT/DB?...` (libpq's own syntax,
// passed to it unchanged; `postgres://` too).
#ifndef OOMGUARD_STORE_STORE_URL_H_
#define OOMGUARD_STORE_STORE_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::store {

struct StoreUrl {
  enum class Kind { kSqlite, kPostgresql };
  Kind kind = Kind::kSqlite;
  // kSqlite: the database file.
  std::string sqlite_path;
  // kPostgresql: the URI as given (libpq's PQconnectdb reads it).
  std::string postgresql_uri;
};

// InvalidArgument naming `--store` and the value when it is neither form
// (an empty path, an unknown scheme, a NUL byte).
absl::StatusOr<StoreUrl> ParseStoreUrl(absl::string_view value);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_STORE_URL_H_
