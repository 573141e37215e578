// The oomguard.v1.Oomguard service (see oomguard_service.h).
#include "service/oomguard_service.h"

#include <chrono>
#include <string>
#include <utility>

#include "common/status_macros.h"
#include "grpcpp/security/auth_context.h"
#include "service/wire_message.h"

namespace oomguard::service {
namespace {

absl::Time CallDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// A request as received: its bytes are the cache key as they are.
class WireRequest final : public CallRequest {
 public:
  WireRequest(const grpc::ByteBuffer& request, const grpc::ServerContext& context)
      : request_(request), context_(context) {}

  absl::Status Parse(google::protobuf::Message& request) const override {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string bytes, Bytes());
    return ParseRequest(bytes, request);
  }
  absl::StatusOr<std::string> Bytes() const override { return RequestBytes(request_); }
  // The `authorization` metadata, and the common name of the client
  // certificate the server's mutual TLS verified.
  CallerCredentials Credentials() const override {
    CallerCredentials credentials;
    const auto& metadata = context_.client_metadata();
    if (const auto found = metadata.find("authorization"); found != metadata.end()) {
      credentials.authorization.assign(found->second.data(), found->second.size());
    }
    const std::shared_ptr<const grpc::AuthContext> auth = context_.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      for (const grpc::string_ref& name : auth->FindPropertyValues("x509_common_name")) {
        credentials.client_identity.assign(name.data(), name.size());
      }
    }
    return credentials;
  }

 private:
  const grpc::ByteBuffer& request_;
  const grpc::ServerContext& context_;
};

class WireResponses final : public CallResponses {
 public:
  explicit WireResponses(std::vector<grpc::ByteBuffer>& responses) : responses_(responses) {}

  void Add(const google::protobuf::Message& response) override {
    responses_.push_back(SerializeResponse(response));
  }
  void AddSerialized(const grpc::Slice& response) override {
    responses_.emplace_back(&response, 1);
  }

 private:
  std::vector<grpc::ByteBuffer>& responses_;
};

}  // namespace

OomguardService::OomguardService(ServiceConfig config, ServiceMetrics* metrics)
    : handlers_(std::move(config), metrics) {}

grpc::Status OomguardService::Serve(const RpcMethod& method, grpc::ServerContext& context,
                                    const grpc::ByteBuffer& request,
                                    std::vector<grpc::ByteBuffer>* responses) {
  const std::string peer = context.peer();
  const WireRequest wire_request(request, context);
  WireResponses wire_responses(*responses);
  return handlers_.Handle(Call{.method = method.name,
                               .transport = Transport::kGrpc,
                               .deadline = CallDeadline(context),
                               .peer = peer},
                          [&](absl::Time deadline, CallOutcome& outcome) {
                            return method.handler(handlers_, wire_request, deadline, outcome,
                                                  wire_responses);
                          });
}

}  // namespace oomguard::service
