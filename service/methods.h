// The service's methods: one table of the RPCs of oomguard.v1.Oomguard
// (service.proto), each with its handler, its `method` label in the metrics
// and the log (its name), and its HTTP/JSON verb and path. The gRPC call loop
// (call_loop.h) registers and serves each row, the metrics (metrics.h) make
// each row's series, and the HTTP/JSON API (http/api_endpoints.h) routes each
// row's path: a new RPC is its declaration in service.proto, its work in
// request_handlers, and a row here.
//
// A handler is transport-free: it reads its request in the form it needs
// (parsed, or as the bytes the response cache is keyed by) and adds the
// messages it answers (one for a unary RPC; each of a server stream in
// order), parsed or as stored bytes; each transport converts (gRPC: the
// wire bytes; HTTP: protobuf's JSON mapping).
#ifndef OOMGUARD_SERVICE_METHODS_H_
#define OOMGUARD_SERVICE_METHODS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/slice.h"
#include "service/report_auth.h"

namespace oomguard::service {

class RequestHandlers;
struct CallOutcome;

// A call's request as its transport received it.
class CallRequest {
 public:
  virtual ~CallRequest() = default;
  // Parses it into `request` (the RPC's request type). InvalidArgument
  // naming what is wrong when it is not one.
  virtual absl::Status Parse(google::protobuf::Message& request) const = 0;
  // Its protobuf encoding, the response cache's key: the bytes received
  // over gRPC; the deterministic encoding of a request read from JSON (as
  // clients serialize, so that the same job sent either way shares its
  // entry).
  virtual absl::StatusOr<std::string> Bytes() const = 0;
  // What the call carried to say who sent it (report_auth.h).
  virtual CallerCredentials Credentials() const = 0;
};

// Where a call's answers go, in order.
class CallResponses {
 public:
  virtual ~CallResponses() = default;
  virtual void Add(const google::protobuf::Message& response) = 0;
  // A response kept serialized (the response cache's).
  virtual void AddSerialized(const grpc::Slice& response) = 0;
};

// One call of an RPC: `request` in, the responses added to `responses`;
// what the metrics and the log report goes into `outcome`.
using MethodHandler = absl::Status (*)(RequestHandlers& handlers, const CallRequest& request,
                                       absl::Time deadline, CallOutcome& outcome,
                                       CallResponses& responses);

// An RPC of the HTTP/JSON API, as grpc-gateway would map it.
struct HttpRoute {
  absl::string_view verb;  // "GET" (no body) or "POST" (the request as JSON).
  // "/v1/...". A segment "{field}" is a path parameter: the request's
  // string field of that name (a GET's only field), as grpc-gateway maps it.
  absl::string_view path;
};

struct RpcMethod {
  // As declared in service.proto; also the `method` label.
  absl::string_view name;
  MethodHandler handler;
  HttpRoute http;
};

// Every RPC of oomguard.v1.Oomguard, in service.proto's order.
absl::Span<const RpcMethod> RpcMethods();

// The declaration in service.proto of `method`, a row of RpcMethods()
// (request and response types, whether the server streams, its index in the
// generated service).
const google::protobuf::MethodDescriptor& Declaration(const RpcMethod& method);

// The `method` label of the Kubernetes admission webhook's reviews (POST
// /validate, webhook/webhook_server.h).
inline constexpr absl::string_view kWebhookMethod = "Webhook";

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_METHODS_H_
