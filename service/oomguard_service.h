// The oomguard.v1.Oomguard gRPC handlers: the bytes of a call -> the
// transport-free handlers (request_handlers.h, which time, count and log
// every call) -> the bytes of the answer. Thin: resolution lives in
// request_resolution, estimation and admission in the core; call_loop feeds
// the calls in. Thread-safe.
#ifndef OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
#define OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_

#include <vector>

#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "oomguard/v1/service.pb.h"
#include "service/metrics.h"
#include "service/request_handlers.h"

namespace oomguard::service {

class OomguardService {
 public:
  // `metrics` must outlive the service.
  OomguardService(ServiceConfig config, ServiceMetrics* metrics);

  // Every handler works on serialized messages and parses its request
  // itself (see wire_message.h); Check also so that a response cache hit is
  // sent as stored.
  grpc::Status Estimate(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                        grpc::ByteBuffer* response);
  grpc::Status Check(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                     grpc::ByteBuffer* response);
  grpc::Status ListPresets(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                           grpc::ByteBuffer* response);
  grpc::Status ListGpus(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                        grpc::ByteBuffer* response);
  // Server streaming: the messages to send, in order (the candidates, best
  // first, then the summary); call_loop writes them one by one.
  grpc::Status Plan(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                    std::vector<grpc::ByteBuffer>* responses);

  // The Check computation itself (resolution, then the core), for
  // in-process callers such as the admission webhook: no cache, metrics or
  // log (the caller records its own). InvalidArgument for a bad request,
  // DeadlineExceeded once `deadline` passes.
  absl::Status RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                        v1::CheckResponse* response);

  // The transport-free handlers, shared with the HTTP/JSON API.
  RequestHandlers& handlers() { return handlers_; }

  // See RequestHandlers::StopWorkAt.
  void StopWorkAt(absl::Time when) { handlers_.StopWorkAt(when); }

 private:
  using Outcome = CallOutcome;

  // Runs `handler` through RequestHandlers::Handle with the call's
  // deadline and peer.
  template <typename Handler>
  grpc::Status Handle(Method method, grpc::ServerContext& context, Handler&& handler);

  RequestHandlers handlers_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
