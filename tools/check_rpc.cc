// The Check call of `oomguard check` and its failures (see check_rpc.h).
#include "tools/check_rpc.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "service/status_mapping.h"
#include "tools/check_command.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

absl::StatusOr<std::string> ReadPem(absl::string_view flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The service's error is about the request field `field`.
bool IsAboutField(const grpc::Status& status, absl::string_view field) {
  const std::vector<std::string> fields = service::BadRequestFields(status);
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

// Bound of the service's not-judged message as shown.
constexpr size_t kMaxNotJudgedBytes = 16384;

CheckFailure NotJudged(absl::string_view reason) {
  CheckFailure failure;
  failure.exit_code = kCheckNotJudged;
  failure.out = absl::StrCat("oomguard: not judged: ", reason, "\n");
  return failure;
}

CheckFailure Failed(CheckExitCode exit_code, std::string error) {
  CheckFailure failure;
  failure.exit_code = exit_code;
  failure.error = std::move(error);
  return failure;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& tls_ca, const std::string& tls_cert, const std::string& tls_key) {
  if (tls_ca.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  for (auto [flag, path, pem] : {std::tuple{"--tls-ca", &tls_ca, &ssl.pem_root_certs},
                                 std::tuple{"--tls-cert", &tls_cert, &ssl.pem_cert_chain},
                                 std::tuple{"--tls-key", &tls_key, &ssl.pem_private_key}}) {
    OOMGUARD_ASSIGN_OR_RETURN(*pem, ReadPem(flag, *path));
  }
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const CheckFlags& f) {
  return MakeChannelCredentials(f.tls_ca, f.tls_cert, f.tls_key);
}

grpc::Status CallCheck(const CheckFlags& flags,
                       const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                       const v1::CheckRequest& request, v1::CheckResponse* response) {
  std::unique_ptr<v1::Oomguard::Stub> stub =
      v1::Oomguard::NewStub(grpc::CreateChannel(flags.server, credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(flags.deadline_ms));
  return stub->Check(&context, request, response);
}

CheckFailure ClassifyCheckFailure(const grpc::Status& status, const CheckPlan& plan,
                                  absl::string_view server) {
  const std::string message = ShownValue(status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      // A job oomguard does not model, when oomguard says so; any other
      // UNIMPLEMENTED is a server that cannot answer (e.g. `server` names
      // another gRPC service), which the policy decides like any outage.
      // The message names every setting oomguard does not model, and why:
      // shown whole, up to the settings' own bound (64 of them).
      if (service::ErrorReason(status) == service::kJobNotModelledReason) {
        return NotJudged(ShownValue(status.error_message(), kMaxNotJudgedBytes));
      }
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      if (plan.gpu_from_scheduler && IsAboutField(status, "gpu_name")) {
        return NotJudged(absl::StrCat("the service does not know the GPU \"",
                                      ShownValue(plan.request.gpu_name()),
                                      "\" the scheduler allocates (", message, ")"));
      }
      if (!plan.unresolved.empty()) {
        // The job may be invalid only because words were left out.
        return NotJudged(absl::StrCat("without what the script leaves to run time (",
                                      absl::StrJoin(plan.unresolved, ", "),
                                      ") the job is incomplete: ", message));
      }
      [[fallthrough]];
    case grpc::StatusCode::OUT_OF_RANGE:
      return Failed(kCheckUsage, absl::StrCat("invalid job: ", message));
    default:
      // Everything else the server could not answer, RESOURCE_EXHAUSTED
      // (overloaded, or a request over its limit) included.
      break;
  }
  return Failed(
      kCheckUnavailable,
      absl::StrCat("service ", ShownValue(server), " unavailable: ",
                   absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                   ": ", message));
}

}  // namespace oomguard
