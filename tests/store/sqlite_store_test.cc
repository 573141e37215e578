// What is particular to the SQLite store: the file's settings (WAL, FULL
// sync), its schema version and migrations, what a rank's measurement costs
// on disk, and the messages when the file cannot serve.
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/check_store.h"
#include "store/schema_migrations.h"
#include "tests/testing/store_test_records.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::store {
namespace {

using ::oomguard::testing::TestCheckId;
using ::oomguard::testing::TestCheckRecord;
using ::oomguard::testing::TestReport;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'790'000'000);

// Runs `sql` on the file directly and returns the first column of its last
// row ("" when none).
std::string Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string value;
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(
                db, sql.c_str(),
                [](void* out, int, char** values, char**) {
                  *static_cast<std::string*>(out) = values[0] != nullptr ? values[0] : "";
                  return 0;
                },
                &value, &error),
            SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return value;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    path_ = dir_ + "/checks.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<std::unique_ptr<CheckStore>> Open(StoreOptions options = {}) {
    StoreUrl url;
    url.sqlite_path = path_;
    return OpenCheckStore(url, options);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, TheFileIsInWalModeAtTheCurrentSchemaVersion) {
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(Sql(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(Sql(path_, "SELECT version FROM oomguard_schema_version"),
            absl::StrCat(kSchemaVersion));
  EXPECT_EQ(Sql(path_, "SELECT count(*) FROM oomguard_schema_version"), "1");
}

TEST_F(SqliteStoreTest, ReopeningMigratesNothingTwice) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(Open().ok());  // The tables exist: applying migration 1 again would fail.
  EXPECT_EQ(Sql(path_, "SELECT version FROM oomguard_schema_version"),
            absl::StrCat(kSchemaVersion));
}

TEST_F(SqliteStoreTest, ANewerSchemaIsRefused) {
  ASSERT_TRUE(Open().ok());
  Sql(path_, "UPDATE oomguard_schema_version SET version = 99");
  absl::StatusOr<std::unique_ptr<CheckStore>> store = Open();
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("version 99"));
  EXPECT_THAT(store.status().message(), HasSubstr(path_));
}

TEST_F(SqliteStoreTest, AFileThatCannotBeOpenedIsUnavailableNamingIt) {
  path_ = dir_ + "/no/such/dir/checks.db";
  absl::StatusOr<std::unique_ptr<CheckStore>> store = Open();
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr("--store sqlite:" + path_));
}

TEST_F(SqliteStoreTest, AFileThatIsNotADatabaseIsUnavailable) {
  testing::WriteFile(path_, std::string(8192, 'x'));
  absl::StatusOr<std::unique_ptr<CheckStore>> store = Open();
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr("not a database"));
}

// The bound: under 1 KB per rank-record. 500 checks with one
// report of 8 ranks each (Megatron's log: max allocated and reserved per
// rank), the file measured after a checkpoint, less the same file with the
// checks but no reports.
TEST_F(SqliteStoreTest, ARankRecordTakesUnderOneKilobyte) {
  constexpr int kChecks = 500;
  constexpr int kRanks = 8;
  auto file_bytes = [&] {
    Sql(path_, "PRAGMA wal_checkpoint(TRUNCATE)");
    return std::filesystem::file_size(path_);
  };
  {
    absl::StatusOr<std::unique_ptr<CheckStore>> store = Open();
    ASSERT_TRUE(store.ok());
    for (int n = 0; n < kChecks; ++n) {
      ASSERT_TRUE((*store)->PutCheck(TestCheckRecord(n, kT0)).ok());
    }
    ASSERT_TRUE((*store)->Flush().ok());
  }
  const uintmax_t without_reports = file_bytes();
  {
    absl::StatusOr<std::unique_ptr<CheckStore>> store = Open();
    ASSERT_TRUE(store.ok());
    for (int n = 0; n < kChecks; ++n) {
      ASSERT_TRUE((*store)
                      ->AddReport(TestCheckId(n), TestReport(kRanks, v1::JOB_OUTCOME_RAN, kT0),
                                  v1::JobHandle())
                      .ok());
    }
  }
  const double per_rank = double(file_bytes() - without_reports) / double(kChecks * kRanks);
  std::cout << "bytes per rank-record: " << per_rank << "\n";
  EXPECT_LT(per_rank, 1024);
  EXPECT_GT(per_rank, 8);  // It was measured: each holds two 8-byte values at least.
}

}  // namespace
}  // namespace oomguard::store
