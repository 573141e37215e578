// The Check RPC of `oomguard check`: the channel to --server (TLS from
// --tls-ca/--tls-cert/--tls-key), the call within --deadline-ms, and what a
// failed call means for the job. A failure is classified by its status code
// and the request field its error details name (a google.rpc.BadRequest,
// see proto/oomguard/v1/error.proto), never by its message text.
#ifndef OOMGUARD_TOOLS_CHECK_RPC_H_
#define OOMGUARD_TOOLS_CHECK_RPC_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/status.h"
#include "oomguard/v1/admission.pb.h"
#include "tools/check_flags.h"
#include "tools/check_plan.h"

namespace oomguard {

// Insecure without --tls-ca; InvalidArgument when a PEM file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& tls_ca, const std::string& tls_cert, const std::string& tls_key);
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const CheckFlags& flags);

// Calls Check on flags.server with the deadline flags.deadline_ms.
grpc::Status CallCheck(const CheckFlags& flags,
                       const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                       const v1::CheckRequest& request, v1::CheckResponse* response);

// What `oomguard check` makes of a failed call.
struct CheckFailure {
  int exit_code = 0;  // A CheckExitCode.
  std::string out;    // stdout: "oomguard: not judged: ...\n", or empty.
  std::string error;  // One stderr message (without "oomguard check: "), or empty.
};

// UNIMPLEMENTED (a job oomguard does not model): not judged.
// INVALID_ARGUMENT about gpu_name when the scheduler chose the GPU: not
// judged (the service does not know the GPU the scheduler allocates); other
// INVALID_ARGUMENTs: not judged when the script left words to run time,
// else an invalid job, as are RESOURCE_EXHAUSTED and OUT_OF_RANGE. Anything
// else: the service `server` is unavailable.
CheckFailure ClassifyCheckFailure(const grpc::Status& status, const CheckPlan& plan,
                                  absl::string_view server);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CHECK_RPC_H_
