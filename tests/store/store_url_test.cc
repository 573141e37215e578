#include "store/store_url.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::store {
namespace {

using ::testing::HasSubstr;

TEST(StoreUrlTest, SqliteFile) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("sqlite:/var/lib/oomguard/checks.db");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->kind, StoreUrl::Kind::kSqlite);
  EXPECT_EQ(url->sqlite_path, "/var/lib/oomguard/checks.db");
}

TEST(StoreUrlTest, PostgresqlUriGoesToLibpqUnchanged) {
  for (const char* uri : {"postgresql://oomguard@db.internal:5432/oomguard?sslmode=verify-full",
                          "postgres://127.0.0.1/oomguard"}) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(uri);
    ASSERT_TRUE(url.ok()) << url.status();
    EXPECT_EQ(url->kind, StoreUrl::Kind::kPostgresql);
    EXPECT_EQ(url->postgresql_uri, uri);
  }
}

TEST(StoreUrlTest, NamesTheFlagAndTheValue) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("sqlite:");
  EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(url.status().message(), HasSubstr("--store: \"sqlite:\" names no file"));
  url = ParseStoreUrl("mysql://db/oomguard");
  EXPECT_THAT(url.status().message(),
              HasSubstr("--store: \"mysql://db/oomguard\" is neither an SQLite file"));
}

}  // namespace
}  // namespace oomguard::store
