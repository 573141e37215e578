#include "store/store_url.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace oomguard::store {

absl::StatusOr<StoreUrl> ParseStoreUrl(absl::string_view value) {
  const absl::string_view given = value;
  auto invalid = [given](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store: \"", given, "\" ", why,
                     "; expected sqlite:PATH or postgresql://USER@HOST:PORT/DATABASE"));
  };
  if (absl::StrContains(value, absl::string_view("\0", 1))) {
    return invalid("holds a NUL byte");
  }
  StoreUrl url;
  if (absl::ConsumePrefix(&value, "sqlite:")) {
    if (value.empty()) return invalid("names no file");
    url.kind = StoreUrl::Kind::kSqlite;
    url.sqlite_path = std::string(value);
    return url;
  }
  if (absl::StartsWith(value, "postgresql://") || absl::StartsWith(value, "postgres://")) {
    url.kind = StoreUrl::Kind::kPostgresql;
    url.postgresql_uri = std::string(value);
    return url;
  }
  return invalid("is neither an SQLite file nor a PostgreSQL URI");
}

}  // namespace oomguard::store
