// Work is bounded in time (issue 12): a call past its deadline stops its
// work, so the worker is free for the next call; and a shutdown ends within
// its grace period even with a call in flight that would run for minutes.
// The real server in-process on 127.0.0.1:0 with one worker thread, called
// with the generated stub.
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"

namespace oomguard {
namespace {

// A job whose estimate walks its interleaved pipeline schedule for about
// 2^31 steps per rank (micro-batch groups of 2^30): minutes of work for
// the admission check's dozen estimates unless the walk checks the deadline.
v1::CheckRequest SlowCheck() {
  v1::CheckRequest request;
  request.set_gpu_name("H100-SXM-80GB");
  v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_num_gpus(2);
  for (const char* word : {"--num-layers",
                           "8",
                           "--hidden-size",
                           "64",
                           "--num-attention-heads",
                           "1",
                           "--vocab-size",
                           "1000",
                           "--seq-length",
                           "128",
                           "--micro-batch-size",
                           "1",
                           "--global-batch-size",
                           "1073741824",
                           "--pipeline-model-parallel-size",
                           "2",
                           "--num-virtual-stages-per-pipeline-rank",
                           "2",
                           "--microbatch-group-size-per-virtual-pipeline-stage",
                           "1073741824"}) {
    job->add_argv(word);
  }
  return request;
}

v1::CheckRequest QuickCheck() {
  v1::CheckRequest request;
  request.set_gpu_name("H100-SXM-80GB");
  v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_preset("llama3-8b");
  job->set_num_gpus(8);
  for (const char* word : {"--micro-batch-size", "1", "--seq-length", "4096"}) job->add_argv(word);
  return request;
}

class WorkBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.threads = 1;
    options.service.log_requests = false;
    options.service.response_cache_bytes = 0;  // Every Check computes.
    options.service.check_result_cache_bytes = 0;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Oomguard::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Check(const v1::CheckRequest& request, absl::Duration deadline,
                     v1::CheckResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return stub_->Check(&context, request, response);
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(WorkBoundsTest, SlowJobTakesLongerThanTheDeadlines) {
  // The premise of the tests below: the slow job really is slow (3 s of
  // work at least), so a worker that kept at it would miss their deadlines.
  v1::CheckResponse response;
  const absl::Time start = absl::Now();
  EXPECT_EQ(Check(SlowCheck(), absl::Seconds(3), &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_GE(absl::Now() - start, absl::Seconds(3));
}

TEST_F(WorkBoundsTest, CallPastItsDeadlineFreesTheWorker) {
  v1::CheckResponse response;
  EXPECT_EQ(Check(SlowCheck(), absl::Milliseconds(200), &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The only worker must be free again: the slow call's work stopped at its
  // deadline instead of running on for minutes.
  const grpc::Status quick = Check(QuickCheck(), absl::Seconds(10), &response);
  ASSERT_TRUE(quick.ok()) << quick.error_message();
  EXPECT_NE(response.verdict(), v1::VERDICT_UNSPECIFIED);
}

TEST_F(WorkBoundsTest, ShutdownEndsWithinItsGraceWithWorkInFlight) {
  grpc::Status slow;
  std::thread caller([&] {
    v1::CheckResponse response;
    slow = Check(SlowCheck(), absl::Seconds(120), &response);
  });
  absl::SleepFor(absl::Milliseconds(300));  // The call is being worked on.
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Milliseconds(500));
  const absl::Duration took = absl::Now() - start;
  caller.join();
  EXPECT_LT(took, absl::Seconds(3)) << "Shutdown(500ms) took " << took;
  EXPECT_FALSE(slow.ok());
}

}  // namespace
}  // namespace oomguard
