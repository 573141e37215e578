#include "store/group_commit_writer.h"

#include <utility>

#include "absl/synchronization/notification.h"

namespace oomguard::store {

GroupCommitWriter::GroupCommitWriter(TransactionRunner* runner)
    : runner_(runner), thread_([this] { Loop(); }) {}

GroupCommitWriter::~GroupCommitWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  thread_.join();
}

void GroupCommitWriter::Enqueue(Write write, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Queued{std::move(write), std::move(done)});
  }
  queued_.notify_one();
}

absl::Status GroupCommitWriter::Run(Write write) {
  absl::Status result;
  absl::Notification committed;
  Enqueue(std::move(write), [&](absl::Status status) {
    result = std::move(status);
    committed.Notify();
  });
  committed.WaitForNotification();
  return result;
}

absl::Status GroupCommitWriter::CommitBatch(std::deque<Queued>& batch, size_t begin, size_t end) {
  absl::Status status = runner_->Begin();
  for (size_t i = begin; status.ok() && i < end; ++i) status = batch[i].write();
  if (status.ok()) status = runner_->Commit();
  if (!status.ok()) runner_->Rollback();
  return status;
}

void GroupCommitWriter::Loop() {
  for (;;) {
    std::deque<Queued> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // Stopping with nothing left.
      batch.swap(queue_);
    }
    absl::Status status = CommitBatch(batch, 0, batch.size());
    if (status.ok() || batch.size() == 1) {
      for (Queued& queued : batch) queued.done(status);
      continue;
    }
    // One write's failure must not fail the others: each alone.
    for (size_t i = 0; i < batch.size(); ++i) batch[i].done(CommitBatch(batch, i, i + 1));
  }
}

}  // namespace oomguard::store
