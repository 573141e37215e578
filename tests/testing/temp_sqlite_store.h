// A real SQLite check store in a fresh temporary directory, removed with
// it: for the tests of what reads the store (the learned widening,
// `oomguard calibrate --store`).
#ifndef OOMGUARD_TESTS_TESTING_TEMP_SQLITE_STORE_H_
#define OOMGUARD_TESTS_TESTING_TEMP_SQLITE_STORE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "store/check_store.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::testing {

class TempSqliteStore {
 public:
  TempSqliteStore() : dir_(MakeTempDir()), path_(dir_ + "/checks.db") {
    EXPECT_FALSE(dir_.empty());
    absl::StatusOr<store::StoreUrl> url = store::ParseStoreUrl("sqlite:" + path_);
    EXPECT_TRUE(url.ok()) << url.status();
    absl::StatusOr<std::unique_ptr<store::CheckStore>> opened = store::OpenCheckStore(*url, {});
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (opened.ok()) store_ = *std::move(opened);
  }
  ~TempSqliteStore() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  TempSqliteStore(const TempSqliteStore&) = delete;
  TempSqliteStore& operator=(const TempSqliteStore&) = delete;

  store::CheckStore& store() { return *store_; }
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

  // Stores `record` under the next test id (00..01, 00..02, ...) for
  // `cluster`, committed, then `report` for it; returns the id.
  std::string PutWithReport(const std::string& cluster, v1::CheckRecord record,
                            const v1::StoredReport& report) {
    record.set_check_id(absl::StrFormat("%032x", ++checks_));
    record.set_cluster(cluster);
    EXPECT_TRUE(store_->PutCheck(record).ok());
    EXPECT_TRUE(store_->Flush().ok());
    EXPECT_TRUE(store_->AddReport(record.check_id(), report, {}).ok());
    return record.check_id();
  }

 private:
  std::string dir_, path_;
  std::unique_ptr<store::CheckStore> store_;
  int checks_ = 0;
};

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_TEMP_SQLITE_STORE_H_
