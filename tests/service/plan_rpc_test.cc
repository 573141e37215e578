// The Plan RPC against a real server on a loopback port: candidates streamed
// best first (at most `limit`), then the summary; bad requests name their
// field; a deadline too short for the plan is DEADLINE_EXCEEDED.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "service/status_mapping.h"

namespace oomguard {
namespace {

class PlanRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Oomguard::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  // Reads the whole stream.
  grpc::Status Plan(const v1::PlanRequest& request, std::vector<v1::PlanResponse>* messages,
                    absl::Duration timeout = absl::Seconds(30)) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    std::unique_ptr<grpc::ClientReader<v1::PlanResponse>> reader = stub_->Plan(&context, request);
    v1::PlanResponse message;
    while (reader->Read(&message)) messages->push_back(message);
    return reader->Finish();
  }

  static v1::PlanRequest Llama8bOn16H100() {
    v1::PlanRequest request;
    v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
    job->set_preset("llama3-8b");
    job->set_num_gpus(16);
    for (const char* word : {"--seq-length", "4096", "--global-batch-size", "256"}) {
      job->add_argv(word);
    }
    request.set_gpu_name("H100-SXM-80GB");
    return request;
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(PlanRpcTest, StreamsCandidatesBestFirstThenTheSummary) {
  v1::PlanRequest request = Llama8bOn16H100();
  request.set_limit(4);
  std::vector<v1::PlanResponse> messages;
  const grpc::Status status = Plan(request, &messages);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_GE(messages.size(), 2u);
  ASSERT_LE(messages.size(), 5u);
  double previous = 1e300;
  for (size_t i = 0; i + 1 < messages.size(); ++i) {
    ASSERT_TRUE(messages[i].has_candidate());
    const v1::PlanCandidate& c = messages[i].candidate();
    EXPECT_LE(c.tokens_per_gpu_per_second(), previous);
    previous = c.tokens_per_gpu_per_second();
    EXPECT_GT(c.peak_device_bytes(), 0u);
    EXPECT_FALSE(c.megatron_args().empty());
  }
  ASSERT_TRUE(messages.back().has_summary());
  EXPECT_GT(messages.back().summary().candidates_fitting(), 0u);
}

TEST_F(PlanRpcTest, UnknownGpuNamesTheField) {
  v1::PlanRequest request = Llama8bOn16H100();
  request.set_gpu_name("Z80");
  std::vector<v1::PlanResponse> messages;
  const grpc::Status status = Plan(request, &messages);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("Z80"), std::string::npos) << status.error_message();
  EXPECT_TRUE(messages.empty());
}

TEST_F(PlanRpcTest, LimitOverTheBoundIsRefused) {
  v1::PlanRequest request = Llama8bOn16H100();
  request.set_limit(5000);
  std::vector<v1::PlanResponse> messages;
  const grpc::Status status = Plan(request, &messages);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("limit"), std::string::npos) << status.error_message();
}

// PlanConstraints.no_expert_parallel_overlap reaches the search; an overlap
// the job sets that Megatron-Core refuses is INVALID_ARGUMENT naming it.
TEST_F(PlanRpcTest, ExpertParallelOverlapConstraintAndRefusal) {
  v1::PlanRequest request;
  v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_preset("qwen3-30b-a3b");
  job->set_num_gpus(64);
  for (const char* word : {"--seq-length", "4096", "--global-batch-size", "512",
                           "--moe-grouped-gemm", "--moe-token-dispatcher-type", "flex"}) {
    job->add_argv(word);
  }
  request.set_gpu_name("H100");
  request.set_limit(5);
  std::vector<v1::PlanResponse> messages;
  ASSERT_TRUE(Plan(request, &messages).ok());
  ASSERT_TRUE(messages.front().has_candidate());
  EXPECT_TRUE(messages.front().candidate().expert_parallel_overlap());
  request.mutable_constraints()->set_no_expert_parallel_overlap(true);
  messages.clear();
  ASSERT_TRUE(Plan(request, &messages).ok());
  ASSERT_GE(messages.size(), 2u);
  for (const v1::PlanResponse& m : messages) {
    EXPECT_FALSE(m.candidate().expert_parallel_overlap()) << m.candidate().megatron_args();
  }
  job->set_argv(6, "allgather");
  job->add_argv("--overlap-moe-expert-parallel-comm");
  messages.clear();
  const grpc::Status status = Plan(request, &messages);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("parallelism.overlap_moe_expert_parallel_comm = true"),
            std::string::npos)
      << status.error_message();
  EXPECT_TRUE(messages.empty());
}

// PlanConstraints.allow_cross_node_expert_parallel's three states: unset
// and true search EP x ETP across nodes too; false keeps it inside the node
// of 8, and the summary says so.
TEST_F(PlanRpcTest, CrossNodeExpertParallelThreeStates) {
  v1::PlanRequest request;
  v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_preset("qwen3-30b-a3b");
  job->set_num_gpus(32);
  for (const char* word :
       {"--seq-length", "4096", "--global-batch-size", "256", "--moe-grouped-gemm",
        "--tensor-model-parallel-size", "1", "--micro-batch-size", "1"}) {
    job->add_argv(word);
  }
  request.set_gpu_name("H100");
  request.set_limit(200);
  for (const std::optional<bool> allowed :
       {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    if (allowed) request.mutable_constraints()->set_allow_cross_node_expert_parallel(*allowed);
    std::vector<v1::PlanResponse> messages;
    ASSERT_TRUE(Plan(request, &messages).ok());
    ASSERT_GE(messages.size(), 2u);
    uint32_t widest = 0;
    for (const v1::PlanResponse& m : messages) {
      if (m.has_candidate()) widest = std::max(widest, m.candidate().ep() * m.candidate().etp());
    }
    const bool across = !allowed.has_value() || *allowed;
    EXPECT_EQ(widest > 8, across) << "EP x ETP up to " << widest;
    EXPECT_EQ(
        messages.back().summary().search_space().find("crossing it forbidden") != std::string::npos,
        !across)
        << messages.back().summary().search_space();
  }
}

// PlanConstraints' size ranges reach the search; a bad range is
// INVALID_ARGUMENT with the field in the BadRequest details.
TEST_F(PlanRpcTest, SizeRangesBoundTheCandidates) {
  v1::PlanRequest request = Llama8bOn16H100();
  request.set_limit(10);
  request.mutable_constraints()->mutable_tensor_model_parallel_size()->set_max(2);
  request.mutable_constraints()->mutable_pipeline_model_parallel_size()->set_min(2);
  std::vector<v1::PlanResponse> messages;
  ASSERT_TRUE(Plan(request, &messages).ok());
  ASSERT_GE(messages.size(), 2u);
  for (size_t i = 0; i + 1 < messages.size(); ++i) {
    EXPECT_LE(messages[i].candidate().tp(), 2u);
    EXPECT_GE(messages[i].candidate().pp(), 2u);
  }
  EXPECT_NE(messages.back().summary().search_space().find("bounded: TP [1, 2], PP [2, any]"),
            std::string::npos);
  request.mutable_constraints()->mutable_pipeline_model_parallel_size()->set_max(1);
  messages.clear();
  const grpc::Status status = Plan(request, &messages);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "constraints.pipeline_model_parallel_size: min 2 > max 1");
  EXPECT_THAT(service::BadRequestFields(status),
              ::testing::ElementsAre("constraints.pipeline_model_parallel_size"));
}

TEST_F(PlanRpcTest, ShortDeadlineIsDeadlineExceeded) {
  v1::PlanRequest request;
  v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_preset("qwen3-30b-a3b");
  job->set_num_gpus(32);
  for (const char* word : {"--seq-length", "10240", "--moe-grouped-gemm"}) job->add_argv(word);
  request.set_gpu_name("H100");
  std::vector<v1::PlanResponse> messages;
  const grpc::Status status = Plan(request, &messages, absl::Milliseconds(5));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  // The server's handler stops at the same deadline but may return a moment
  // after the client gave up; tearing the server down before it has would
  // finish the call on a queue already shut down.
  absl::SleepFor(absl::Milliseconds(300));
}

}  // namespace
}  // namespace oomguard
