// The oomguard.v1.Oomguard gRPC handlers: the bytes of a call -> the RPC's
// handler in the table of the service's methods (methods.h), run by the
// transport-free handlers (request_handlers.h, which time, count and log
// every call) -> the bytes of the answers. Thin: resolution lives in
// request_resolution, estimation and admission in the core; call_loop feeds
// the calls in. Thread-safe.
#ifndef OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
#define OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_

#include <vector>

#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "service/methods.h"
#include "service/metrics.h"
#include "service/request_handlers.h"

namespace oomguard::service {

class OomguardService {
 public:
  // `metrics` must outlive the service.
  OomguardService(ServiceConfig config, ServiceMetrics* metrics);

  // One call of `method`: its serialized request in (parsed by the handler
  // itself, see wire_message.h, so that a Check answered from the response
  // cache is sent as stored), the serialized messages to send out, in order
  // (one for a unary RPC; call_loop writes a stream's one by one).
  grpc::Status Serve(const RpcMethod& method, grpc::ServerContext& context,
                     const grpc::ByteBuffer& request, std::vector<grpc::ByteBuffer>* responses);

  // The transport-free handlers, shared with the HTTP/JSON API and the
  // admission webhook.
  RequestHandlers& handlers() { return handlers_; }

  // See RequestHandlers::StopWorkAt.
  void StopWorkAt(absl::Time when) { handlers_.StopWorkAt(when); }

 private:
  RequestHandlers handlers_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
