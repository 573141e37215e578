// OpenCheckStore (check_store.h): the URL's kind of database behind the one
// SQL implementation.
#include "absl/strings/str_cat.h"
#include "store/check_store.h"
#include "store/postgres_connection.h"
#include "store/sql_check_store.h"
#include "store/sqlite_connection.h"

namespace oomguard::store {

absl::StatusOr<std::unique_ptr<CheckStore>> OpenCheckStore(const StoreUrl& url,
                                                           const StoreOptions& options) {
  if (options.max_pending_checks <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_pending_checks: ", options.max_pending_checks, " is not positive"));
  }
  SqlCheckStore::Connect connect;
  std::string name;
  switch (url.kind) {
    case StoreUrl::Kind::kSqlite:
      connect = [path = url.sqlite_path] { return OpenSqliteConnection(path); };
      name = absl::StrCat("sqlite:", url.sqlite_path);
      break;
    case StoreUrl::Kind::kPostgresql:
      connect = [uri = url.postgresql_uri] { return OpenPostgresConnection(uri); };
      name = "postgresql";
      break;
  }
  absl::StatusOr<std::unique_ptr<SqlCheckStore>> store =
      SqlCheckStore::Open(std::move(connect), std::move(name), options);
  if (!store.ok()) return store.status();
  return std::unique_ptr<CheckStore>(*std::move(store));
}

}  // namespace oomguard::store
