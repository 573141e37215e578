// The CheckStore's contract (check_store.h) on both kinds of store: SQLite
// in a temporary file, and a real PostgreSQL server started by the test.
#include "store/check_store.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/store_test_records.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::store {
namespace {

using ::oomguard::testing::TestCheckId;
using ::oomguard::testing::TestCheckRecord;
using ::oomguard::testing::TestReport;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'790'000'000);  // 2026-09-21.

enum class Kind { kSqlite, kPostgresql };

std::string KindName(const ::testing::TestParamInfo<Kind>& info) {
  return info.param == Kind::kSqlite ? "Sqlite" : "Postgresql";
}

// Names the kind in CTest's test names.
void PrintTo(Kind kind, std::ostream* os) {
  *os << (kind == Kind::kSqlite ? "sqlite" : "postgresql");
}

class CheckStoreTest : public ::testing::TestWithParam<Kind> {
 protected:
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() { postgres_.reset(); }

  void SetUp() override {
    if (GetParam() == Kind::kSqlite) {
      dir_ = testing::MakeTempDir();
      ASSERT_FALSE(dir_.empty());
      url_.kind = StoreUrl::Kind::kSqlite;
      url_.sqlite_path = dir_ + "/checks.db";
    } else {
      if (!testing::PostgresServer::BinDir().has_value()) {
        GTEST_SKIP() << "PostgreSQL is not installed (Debian's postgresql; CI installs it)";
      }
      if (postgres_ == nullptr) {
        absl::StatusOr<std::unique_ptr<testing::PostgresServer>> server =
            testing::PostgresServer::Start();
        ASSERT_TRUE(server.ok()) << server.status();
        postgres_ = *std::move(server);
      }
      absl::StatusOr<std::string> uri =
          postgres_->CreateDatabase(absl::StrCat("store_test_", ++databases_));
      ASSERT_TRUE(uri.ok()) << uri.status();
      url_.kind = StoreUrl::Kind::kPostgresql;
      url_.postgresql_uri = *uri;
    }
    Reopen();
  }

  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<CheckStore>> store = OpenCheckStore(url_, options_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  v1::CheckRecord Get(uint64_t n) {
    absl::StatusOr<v1::CheckRecord> record = store_->GetCheck(TestCheckId(n));
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? *record : v1::CheckRecord();
  }

  // The check ids ForEachRecord visits, in order.
  std::vector<std::string> Visited(const RecordFilter& filter) {
    std::vector<std::string> ids;
    EXPECT_TRUE(
        store_
            ->ForEachRecord(filter, [&](const v1::CheckRecord& r) { ids.push_back(r.check_id()); })
            .ok());
    return ids;
  }

  static inline std::unique_ptr<testing::PostgresServer> postgres_;
  static inline int databases_ = 0;
  std::string dir_;
  StoreUrl url_;
  StoreOptions options_;
  std::unique_ptr<CheckStore> store_;
};

TEST_P(CheckStoreTest, RecordReadBackAsPut) {
  const v1::CheckRecord record = TestCheckRecord(1, kT0);
  ASSERT_TRUE(store_->PutCheck(record).ok());
  // Found at once (queued, served from memory), and once committed.
  EXPECT_EQ(Get(1).SerializeAsString(), record.SerializeAsString());
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(Get(1).SerializeAsString(), record.SerializeAsString());
}

TEST_P(CheckStoreTest, ReportsAppendInOrderAndTheOutcomeIsTheMostTelling) {
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(1, kT0)).ok());
  const v1::StoredReport ran = TestReport(8, v1::JOB_OUTCOME_RAN, kT0 + absl::Minutes(5));
  const v1::StoredReport oom = TestReport(0, v1::JOB_OUTCOME_CUDA_OOM, kT0 + absl::Hours(1));
  const v1::StoredReport measured =
      TestReport(2, v1::JOB_OUTCOME_UNSPECIFIED, kT0 + absl::Hours(2), "dcgm");
  v1::JobHandle handle;
  handle.set_slurm_job_id("4242");
  // No Flush: the report's write is queued after the check's.
  ASSERT_TRUE(store_->AddReport(TestCheckId(1), ran, handle).ok());
  ASSERT_TRUE(store_->AddReport(TestCheckId(1), oom, v1::JobHandle()).ok());
  ASSERT_TRUE(store_->AddReport(TestCheckId(1), measured, v1::JobHandle()).ok());

  const v1::CheckRecord record = Get(1);
  ASSERT_EQ(record.reports_size(), 3);
  EXPECT_EQ(record.reports(0).SerializeAsString(), ran.SerializeAsString());
  EXPECT_EQ(record.reports(1).SerializeAsString(), oom.SerializeAsString());
  EXPECT_EQ(record.reports(2).SerializeAsString(), measured.SerializeAsString());
  EXPECT_EQ(record.reports(0).ranks_size(), 8);
  EXPECT_EQ(record.reports(0).ranks(7).max_allocated_bytes(), (uint64_t{20} << 30) + (7 << 20));
  EXPECT_EQ(record.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_EQ(record.handle().slurm_job_id(), "4242");
}

TEST_P(CheckStoreTest, AReportSetsOnlyTheHandleFieldsItSets) {
  v1::CheckRecord checked = TestCheckRecord(1, kT0);
  checked.mutable_handle()->set_kubernetes_namespace("team-a");
  checked.mutable_handle()->set_kubernetes_workload("gpt-pretrain");
  ASSERT_TRUE(store_->PutCheck(checked).ok());
  v1::JobHandle slurm;
  slurm.set_slurm_job_id("77");
  ASSERT_TRUE(
      store_->AddReport(TestCheckId(1), TestReport(1, v1::JOB_OUTCOME_RAN, kT0), slurm).ok());
  const v1::JobHandle handle = Get(1).handle();
  EXPECT_EQ(handle.slurm_job_id(), "77");
  EXPECT_EQ(handle.kubernetes_namespace(), "team-a");
  EXPECT_EQ(handle.kubernetes_workload(), "gpt-pretrain");
}

TEST_P(CheckStoreTest, AReportForAnUnknownCheckIsNotFoundNamingTheId) {
  const absl::Status status =
      store_->AddReport(TestCheckId(9), TestReport(1, v1::JOB_OUTCOME_RAN, kT0), v1::JobHandle());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(TestCheckId(9)));
  EXPECT_EQ(store_->GetCheck(TestCheckId(9)).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(CheckStoreTest, AMalformedCheckIdIsInvalidArgument) {
  EXPECT_EQ(store_->GetCheck("ABC").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_->AddReport("x'; DROP TABLE checks; --", v1::StoredReport(), v1::JobHandle()).code(),
      absl::StatusCode::kInvalidArgument);
  v1::CheckRecord record = TestCheckRecord(1, kT0);
  record.set_check_id("");
  EXPECT_EQ(store_->PutCheck(record).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(CheckStoreTest, ACheckIdIsStoredOnce) {
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(1, kT0)).ok());
  EXPECT_EQ(store_->PutCheck(TestCheckRecord(1, kT0, "beta")).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(store_->PutCheck(TestCheckRecord(1, kT0, "beta")).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Get(1).cluster(), "alpha");
}

TEST_P(CheckStoreTest, RecordsSurviveReopening) {
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(1, kT0)).ok());
  ASSERT_TRUE(
      store_->AddReport(TestCheckId(1), TestReport(8, v1::JOB_OUTCOME_RAN, kT0), v1::JobHandle())
          .ok());
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(2, kT0)).ok());  // Queued: committed on close.
  Reopen();
  EXPECT_EQ(Get(1).reports_size(), 1);
  EXPECT_EQ(Get(1).outcome(), v1::JOB_OUTCOME_RAN);
  EXPECT_EQ(Get(2).check_id(), TestCheckId(2));
}

TEST_P(CheckStoreTest, ForEachRecordSelectsNewestFirst) {
  // 1: alpha, oldest, reported; 2: beta, with a handle; 3: alpha, newest.
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(1, kT0)).ok());
  v1::CheckRecord two = TestCheckRecord(2, kT0 + absl::Hours(1), "beta");
  two.mutable_handle()->set_slurm_job_id("12");
  ASSERT_TRUE(store_->PutCheck(two).ok());
  ASSERT_TRUE(store_->PutCheck(TestCheckRecord(3, kT0 + absl::Hours(2))).ok());
  ASSERT_TRUE(
      store_->AddReport(TestCheckId(1), TestReport(2, v1::JOB_OUTCOME_RAN, kT0), v1::JobHandle())
          .ok());
  ASSERT_TRUE(
      store_->AddReport(TestCheckId(1), TestReport(3, v1::JOB_OUTCOME_FAILED, kT0), v1::JobHandle())
          .ok());
  ASSERT_TRUE(store_->Flush().ok());

  EXPECT_THAT(Visited({}), ElementsAre(TestCheckId(3), TestCheckId(2), TestCheckId(1)));
  RecordFilter alpha;
  alpha.cluster = "alpha";
  EXPECT_THAT(Visited(alpha), ElementsAre(TestCheckId(3), TestCheckId(1)));
  RecordFilter reported;
  reported.with_reports = true;
  EXPECT_THAT(Visited(reported), ElementsAre(TestCheckId(1)));
  RecordFilter handled;
  handled.with_handle = true;
  EXPECT_THAT(Visited(handled), ElementsAre(TestCheckId(2)));
  RecordFilter recent;
  recent.checked_since = kT0 + absl::Hours(1);
  EXPECT_THAT(Visited(recent), ElementsAre(TestCheckId(3), TestCheckId(2)));
  RecordFilter newest_two;
  newest_two.limit = 2;
  EXPECT_THAT(Visited(newest_two), ElementsAre(TestCheckId(3), TestCheckId(2)));

  // Each record comes with its reports.
  std::vector<int> reports;
  ASSERT_TRUE(store_
                  ->ForEachRecord({},
                                  [&](const v1::CheckRecord& r) {
                                    reports.push_back(r.reports_size());
                                    if (r.check_id() == TestCheckId(1)) {
                                      EXPECT_EQ(r.outcome(), v1::JOB_OUTCOME_FAILED);
                                    }
                                  })
                  .ok());
  EXPECT_THAT(reports, ElementsAre(0, 0, 2));
}

TEST_P(CheckStoreTest, RetentionDeletesByAgeThenByCount) {
  options_.retention.max_age = absl::Hours(24);
  options_.retention.max_records = 2;
  Reopen();
  // Checks 1..4, an hour apart; check 1 has a report.
  for (uint64_t n = 1; n <= 4; ++n) {
    ASSERT_TRUE(store_->PutCheck(TestCheckRecord(n, kT0 + absl::Hours(n))).ok());
  }
  ASSERT_TRUE(
      store_->AddReport(TestCheckId(1), TestReport(8, v1::JOB_OUTCOME_RAN, kT0), v1::JobHandle())
          .ok());

  // A day after check 1 (and an hour before check 2 is a day old): check 1
  // goes by age, check 2 by count (3 left, 2 kept).
  absl::StatusOr<int64_t> deleted =
      store_->ApplyRetention(kT0 + absl::Hours(25) + absl::Minutes(1));
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ(store_->GetCheck(TestCheckId(1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetCheck(TestCheckId(2)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Visited({}), ElementsAre(TestCheckId(4), TestCheckId(3)));
  // Its reports went with it: a report for it is refused.
  EXPECT_EQ(
      store_->AddReport(TestCheckId(1), TestReport(1, v1::JOB_OUTCOME_RAN, kT0), v1::JobHandle())
          .code(),
      absl::StatusCode::kNotFound);
  // Nothing more to delete.
  EXPECT_EQ(*store_->ApplyRetention(kT0 + absl::Hours(25) + absl::Minutes(1)), 0);
}

TEST_P(CheckStoreTest, ConcurrentReportsAreAllKept) {
  constexpr int kThreads = 16;
  constexpr int kReportsPerThread = 25;
  for (uint64_t n = 0; n < kThreads; ++n) {
    ASSERT_TRUE(store_->PutCheck(TestCheckRecord(n, kT0)).ok());
  }
  std::atomic<int> failed = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kReportsPerThread; ++i) {
        // Each thread's reports go to its own check and to check 0.
        const uint64_t check = i % 2 == 0 ? uint64_t(t) : 0;
        if (!store_
                 ->AddReport(TestCheckId(check), TestReport(8, v1::JOB_OUTCOME_RAN, kT0),
                             v1::JobHandle())
                 .ok()) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed, 0);
  int total = 0;
  ASSERT_TRUE(
      store_->ForEachRecord({}, [&](const v1::CheckRecord& r) { total += r.reports_size(); }).ok());
  EXPECT_EQ(total, kThreads * kReportsPerThread);
  // Thread 0's 25 reports and the other 15 threads' 12 odd-numbered ones each.
  EXPECT_EQ(Get(0).reports_size(), 25 + 15 * 12);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CheckStoreTest, ::testing::Values(Kind::kSqlite, Kind::kPostgresql),
                         KindName);

}  // namespace
}  // namespace oomguard::store
