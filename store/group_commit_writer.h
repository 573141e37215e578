// The one writer of a store: a thread that takes every write queued since
// its last commit and commits them in one transaction (group commit), so
// that many concurrent reports share one fsync. A write's caller either
// waits for its commit (a report: durable on return) or does not (a check's
// record: written in the background, but committed before any write queued
// after it). Used by both kinds of store (SQLite, PostgreSQL).
#ifndef OOMGUARD_STORE_GROUP_COMMIT_WRITER_H_
#define OOMGUARD_STORE_GROUP_COMMIT_WRITER_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

namespace oomguard::store {

// The database side: one connection, used by the writer's thread only.
class TransactionRunner {
 public:
  virtual ~TransactionRunner() = default;
  virtual absl::Status Begin() = 0;
  virtual absl::Status Commit() = 0;
  // Called after a failed Begin, write or Commit; must leave no transaction open.
  virtual void Rollback() = 0;
};

class GroupCommitWriter {
 public:
  // A write: runs inside a transaction (its outputs, if any, go where the
  // closure points); a non-OK status fails the transaction. It may run more
  // than once (after a failed batch, each write is retried alone), so it
  // must set, not accumulate, its outputs.
  using Write = absl::AnyInvocable<absl::Status()>;
  // Called once the write's transaction committed (OK) or failed.
  using Done = absl::AnyInvocable<void(absl::Status)>;

  // Starts the thread; `runner` must outlive the writer.
  explicit GroupCommitWriter(TransactionRunner* runner);
  // Commits what is queued, then stops the thread.
  ~GroupCommitWriter();

  GroupCommitWriter(const GroupCommitWriter&) = delete;
  GroupCommitWriter& operator=(const GroupCommitWriter&) = delete;

  // Queues `write`; `done` runs on the writer's thread after its commit.
  void Enqueue(Write write, Done done);

  // Queues `write` and returns its commit's status.
  absl::Status Run(Write write);

 private:
  struct Queued {
    Write write;
    Done done;
  };

  void Loop();
  // Runs `batch` in one transaction; OK when it committed.
  absl::Status CommitBatch(std::deque<Queued>& batch, size_t begin, size_t end);

  TransactionRunner* const runner_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Queued> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_GROUP_COMMIT_WRITER_H_
