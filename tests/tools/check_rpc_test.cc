// Tests of what `oomguard check` makes of a failed Check call
// (tools/check_rpc.h): classified by status code and the request field of
// the error details (as service/status_mapping.h sends them), never by the
// message text; and the TLS files.
#include "tools/check_rpc.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/status_mapping.h"
#include "tools/check_command.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A plan whose GPU "tesla" came from the scheduler (or, with
// `from_scheduler` false, from the user).
CheckPlan PlanOnTesla(bool from_scheduler) {
  CheckPlan plan;
  plan.request.set_gpu_name("tesla");
  plan.gpu_from_scheduler = from_scheduler;
  return plan;
}

// The status a client sees for `status` from the service.
grpc::Status Sent(const absl::Status& status) { return service::ToGrpcStatus(status); }

const absl::Status kUnknownGpu = service::WithBadField(
    absl::InvalidArgumentError("gpu_name: unknown GPU \"tesla\"; known: H100-SXM-80GB"),
    "gpu_name");

TEST(ClassifyCheckFailureTest, UnknownGpuOfTheSchedulerIsNotJudged) {
  const CheckFailure failure = ClassifyCheckFailure(Sent(kUnknownGpu), PlanOnTesla(true), "h:1");
  EXPECT_EQ(failure.exit_code, kCheckNotJudged);
  EXPECT_EQ(failure.out,
            "oomguard: not judged: the service does not know the GPU \"tesla\" the scheduler "
            "allocates (gpu_name: unknown GPU \"tesla\"; known: H100-SXM-80GB)\n");
  EXPECT_THAT(failure.error, IsEmpty());
}

TEST(ClassifyCheckFailureTest, UnknownGpuOfTheUserIsAnInvalidJob) {
  const CheckFailure failure = ClassifyCheckFailure(Sent(kUnknownGpu), PlanOnTesla(false), "h:1");
  EXPECT_EQ(failure.exit_code, kCheckUsage);
  EXPECT_THAT(failure.out, IsEmpty());
  EXPECT_EQ(failure.error, "invalid job: gpu_name: unknown GPU \"tesla\"; known: H100-SXM-80GB");
}

TEST(ClassifyCheckFailureTest, DecidesByTheDetailNotTheMessage) {
  // The message starts with "gpu_name" but no detail says so.
  const grpc::Status message_only(grpc::StatusCode::INVALID_ARGUMENT, "gpu_name: unknown GPU");
  EXPECT_EQ(ClassifyCheckFailure(message_only, PlanOnTesla(true), "h:1").exit_code, kCheckUsage);
  // A detail about another field.
  const grpc::Status other_field = Sent(service::WithBadField(
      absl::InvalidArgumentError("gpu_name looks fine; job.megatron: TP 3"), "job.megatron"));
  EXPECT_EQ(ClassifyCheckFailure(other_field, PlanOnTesla(true), "h:1").exit_code, kCheckUsage);
  // Details that are not an RpcStatus are ignored.
  const grpc::Status garbage(grpc::StatusCode::INVALID_ARGUMENT, "x", "\xff\xff\xff");
  EXPECT_EQ(ClassifyCheckFailure(garbage, PlanOnTesla(true), "h:1").exit_code, kCheckUsage);
  // The field alone, whatever the message says.
  const grpc::Status field_only =
      Sent(service::WithBadField(absl::InvalidArgumentError("no such accelerator"), "gpu_name"));
  EXPECT_EQ(ClassifyCheckFailure(field_only, PlanOnTesla(true), "h:1").exit_code, kCheckNotJudged);
}

TEST(ClassifyCheckFailureTest, InvalidWithRunTimeWordsIsNotJudged) {
  CheckPlan plan = PlanOnTesla(false);
  plan.unresolved = {"--micro-batch-size $MBS", "$EXTRA"};
  const grpc::Status status = Sent(service::WithBadField(
      absl::InvalidArgumentError("job.megatron: micro_batch_size = 0"), "job.megatron"));
  const CheckFailure failure = ClassifyCheckFailure(status, plan, "h:1");
  EXPECT_EQ(failure.exit_code, kCheckNotJudged);
  EXPECT_EQ(failure.out,
            "oomguard: not judged: without what the script leaves to run time (--micro-batch-size "
            "$MBS, $EXTRA) the job is incomplete: job.megatron: micro_batch_size = 0\n");
}

TEST(ClassifyCheckFailureTest, OtherCodes) {
  const CheckPlan plan = PlanOnTesla(false);
  // oomguard's own UNIMPLEMENTED: a job it does not model, not judged.
  CheckFailure failure =
      ClassifyCheckFailure(Sent(service::WithErrorReason(
                               absl::UnimplementedError("job.megatron: FSDP\n is not modelled"),
                               service::kJobNotModelledReason)),
                           plan, "h:1");
  EXPECT_EQ(failure.exit_code, kCheckNotJudged);
  EXPECT_EQ(failure.out, "oomguard: not judged: job.megatron: FSDP\\x0a is not modelled\n");

  // Any other UNIMPLEMENTED (another gRPC service at `server`: no such
  // method) and RESOURCE_EXHAUSTED (overloaded, or a request over the
  // server's limit): the server did not answer, and the policy decides.
  // Before, the first was "not judged" (admitted under policy=closed) and
  // the second an invalid job (refused under policy=open).
  for (const grpc::Status& status :
       {grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown service oomguard.v1.Oomguard"),
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too big")}) {
    failure = ClassifyCheckFailure(status, plan, "h:1");
    EXPECT_EQ(failure.exit_code, kCheckUnavailable) << status.error_message();
    EXPECT_THAT(failure.out, IsEmpty());
  }
  EXPECT_EQ(failure.error, "service h:1 unavailable: RESOURCE_EXHAUSTED: too big");

  failure =
      ClassifyCheckFailure(grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "too big"), plan, "h:1");
  EXPECT_EQ(failure.exit_code, kCheckUsage);
  EXPECT_EQ(failure.error, "invalid job: too big");

  failure = ClassifyCheckFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connect failed"),
                                 plan, "h:1");
  EXPECT_EQ(failure.exit_code, kCheckUnavailable);
  EXPECT_THAT(failure.out, IsEmpty());
  EXPECT_EQ(failure.error, "service h:1 unavailable: UNAVAILABLE: connect failed");
}

TEST(MakeChannelCredentialsTest, InsecureWithoutCaAndNamesAMissingFile) {
  CheckFlags flags;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(flags);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_NE(*credentials, nullptr);

  flags.tls_ca = "/nonexistent/ca.pem";
  credentials = MakeChannelCredentials(flags);
  ASSERT_FALSE(credentials.ok());
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(credentials.status().message(), "--tls-ca: cannot read \"/nonexistent/ca.pem\"");
}

}  // namespace
}  // namespace oomguard
