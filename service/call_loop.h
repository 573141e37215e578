// The thread pool that serves the Oomguard RPCs: a fixed number of worker
// threads take calls from the server's completion queues and run the
// handlers. Calls beyond what the workers can take wait in the queue (their
// deadline still applies: a call whose deadline passed while waiting is
// answered DEADLINE_EXCEEDED without work); none is refused.
#ifndef OOMGUARD_SERVICE_CALL_LOOP_H_
#define OOMGUARD_SERVICE_CALL_LOOP_H_

#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/completion_queue.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/async_stream.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "service/methods.h"
#include "service/oomguard_service.h"

namespace oomguard::service {

// The service as registered: every RPC of the table of the service's methods
// (methods.h) asynchronous on serialized messages, which the handlers parse
// themselves (see wire_message.h).
class AsyncOomguard : public v1::Oomguard::Service {
 public:
  AsyncOomguard();

  // Asks for the next call of `method` (unary), announced on `queue` with
  // `tag`.
  void RequestUnary(const RpcMethod& method, grpc::ServerContext* context,
                    grpc::ByteBuffer* request,
                    grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer,
                    grpc::ServerCompletionQueue* queue, void* tag);
  // The same for a server-streaming `method`.
  void RequestServerStream(const RpcMethod& method, grpc::ServerContext* context,
                           grpc::ByteBuffer* request,
                           grpc::ServerAsyncWriter<grpc::ByteBuffer>* writer,
                           grpc::ServerCompletionQueue* queue, void* tag);
};

class CallLoop {
 public:
  // Starts `threads` workers, spread over `queues` (registered with the
  // server that `async` belongs to). `async` and `service` must outlive the
  // loop.
  CallLoop(AsyncOomguard* async, OomguardService* service,
           std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues, int threads);

  // Shuts the queues down, drains them and joins the workers. Destroy the
  // loop only after grpc::Server::Shutdown has returned.
  ~CallLoop();

  CallLoop(const CallLoop&) = delete;
  CallLoop& operator=(const CallLoop&) = delete;

 private:
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> workers_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_CALL_LOOP_H_
