// The writer's group commit on a real SQLite connection: writes queued
// while a commit is under way share the next one, and a write that fails
// does not fail the others of its batch.
#include "store/group_commit_writer.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "store/sqlite_connection.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::store {
namespace {

class GroupCommitWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    absl::StatusOr<std::unique_ptr<SqlConnection>> connection =
        OpenSqliteConnection(dir_ + "/w.db");
    ASSERT_TRUE(connection.ok()) << connection.status();
    connection_ = *std::move(connection);
    ASSERT_TRUE(connection_->Execute("CREATE TABLE t (v INTEGER NOT NULL)").ok());
  }
  void TearDown() override {
    connection_.reset();
    std::filesystem::remove_all(dir_);
  }

  int64_t Rows() {
    int64_t rows = -1;
    EXPECT_TRUE(connection_
                    ->Query("SELECT count(*) FROM t", {},
                            [&](const SqlRow& row) {
                              rows = row.Int64(0);
                              return absl::OkStatus();
                            })
                    .ok());
    return rows;
  }

  std::string dir_;
  std::unique_ptr<SqlConnection> connection_;
};

TEST_F(GroupCommitWriterTest, AFailingWriteFailsAloneInItsBatch) {
  std::vector<absl::Status> results(5);
  {
    GroupCommitWriter writer(connection_.get());
    // The first write holds the writer until the other four are queued: they
    // form one batch.
    absl::Notification release;
    absl::Notification first_done;
    writer.Enqueue(
        [&] {
          release.WaitForNotification();
          return absl::OkStatus();
        },
        [&](absl::Status) { first_done.Notify(); });
    for (int i = 0; i < 4; ++i) {
      writer.Enqueue(
          [&, i] {
            return connection_
                ->Run(i == 2 ? "INSERT INTO missing_table (v) VALUES (1)"
                             : "INSERT INTO t (v) VALUES ($1)",
                      {SqlParam::Int64(i)})
                .status();
          },
          [&, i](absl::Status status) { results[i + 1] = std::move(status); });
    }
    release.Notify();
    first_done.WaitForNotification();
  }  // The destructor commits what is queued.
  EXPECT_TRUE(results[1].ok()) << results[1];
  EXPECT_TRUE(results[2].ok()) << results[2];
  EXPECT_EQ(results[3].code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(results[4].ok()) << results[4];
  EXPECT_EQ(Rows(), 3);
}

TEST_F(GroupCommitWriterTest, RunReturnsOnceCommitted) {
  GroupCommitWriter writer(connection_.get());
  ASSERT_TRUE(
      writer.Run([&] { return connection_->Run("INSERT INTO t (v) VALUES (7)", {}).status(); })
          .ok());
  EXPECT_EQ(Rows(), 1);
}

}  // namespace
}  // namespace oomguard::store
