// The worker pool over the async completion queues (see call_loop.h).
#include "service/call_loop.h"

#include <utility>
#include <vector>

namespace oomguard::service {

AsyncOomguard::AsyncOomguard() {
  for (const RpcMethod& method : RpcMethods()) MarkMethodRaw(Declaration(method).index());
}

void AsyncOomguard::RequestUnary(const RpcMethod& method, grpc::ServerContext* context,
                                 grpc::ByteBuffer* request,
                                 grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer,
                                 grpc::ServerCompletionQueue* queue, void* tag) {
  RequestAsyncUnary(Declaration(method).index(), context, request, writer, queue, queue, tag);
}

void AsyncOomguard::RequestServerStream(const RpcMethod& method, grpc::ServerContext* context,
                                        grpc::ByteBuffer* request,
                                        grpc::ServerAsyncWriter<grpc::ByteBuffer>* writer,
                                        grpc::ServerCompletionQueue* queue, void* tag) {
  RequestAsyncServerStreaming(Declaration(method).index(), context, request, writer, queue, queue,
                              tag);
}

namespace {

// The completion-queue tag of every call.
class Call {
 public:
  virtual ~Call() = default;
  // Advances the call; `ok` is the queue's verdict on its last operation.
  virtual void Proceed(bool ok) = 0;
};

// ThreadSanitizer cannot see the synchronization inside gRPC (Debian's is not
// built with -fsanitize=thread), so it would take every call object handed to
// the completion queue by one thread and taken back by another for a race.
// These annotations state that hand-over (the tag passes to the operation
// `start` begins); they are empty in other builds.
// gRPC's inline code (the writer's op set, the context's flags) still writes
// the call's fields while it starts the operation, before its core can
// complete it; that order is gRPC's too, so those writes are not recorded.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
template <typename Start>
void HandOver(void* tag, Start start) {
  __tsan_release(tag);
  __tsan_ignore_thread_begin();
  start();
  __tsan_ignore_thread_end();
}
void TakeOver(void* tag) { __tsan_acquire(tag); }
#else
template <typename Start>
void HandOver(void*, Start start) {
  start();
}
void TakeOver(void*) {}
#endif

struct Endpoints {
  AsyncOomguard* async;
  OomguardService* service;
  grpc::ServerCompletionQueue* queue;
};

// One unary call: waits for a request, runs the handler on the worker that
// received it, sends the response, then deletes itself.
class UnaryCall final : public Call {
 public:
  // Asks the server for the next call of `method`.
  static void Await(const Endpoints& endpoints, const RpcMethod& method) {
    auto* call = new UnaryCall(endpoints, method);
    HandOver(call, [&] {
      endpoints.async->RequestUnary(method, &call->context_, &call->request_, &call->writer_,
                                    endpoints.queue, call);
    });
  }

  void Proceed(bool ok) override {
    if (finishing_ || !ok) {  // Sent, or the server is shutting down.
      delete this;
      return;
    }
    Await(endpoints_, method_);  // Keep a call of this method waiting.
    grpc::Status status = endpoints_.service->Serve(method_, context_, request_, &responses_);
    if (status.ok() && responses_.size() != 1) {
      status = grpc::Status(grpc::StatusCode::INTERNAL,
                            "a unary method answered other than one message");
    }
    finishing_ = true;
    HandOver(this, [&] {
      if (status.ok()) {
        writer_.Finish(responses_.front(), status, this);
      } else {
        writer_.FinishWithError(status, this);
      }
    });
  }

 private:
  UnaryCall(const Endpoints& endpoints, const RpcMethod& method)
      : endpoints_(endpoints), method_(method), writer_(&context_) {}

  const Endpoints endpoints_;
  const RpcMethod& method_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_;
  std::vector<grpc::ByteBuffer> responses_;  // One, once served.
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> writer_;
  bool finishing_ = false;
};

// One server-streaming call: waits for a request, runs the handler (which
// returns every message to send), writes the messages one completion at a
// time, finishes, then deletes itself.
class ServerStreamCall final : public Call {
 public:
  static void Await(const Endpoints& endpoints, const RpcMethod& method) {
    auto* call = new ServerStreamCall(endpoints, method);
    HandOver(call, [&] {
      endpoints.async->RequestServerStream(method, &call->context_, &call->request_, &call->writer_,
                                           endpoints.queue, call);
    });
  }

  void Proceed(bool ok) override {
    if (state_ == State::kFinishing || (state_ == State::kWaiting && !ok)) {
      delete this;  // Finished, or the server is shutting down.
      return;
    }
    if (state_ == State::kWaiting) {
      Await(endpoints_, method_);  // Keep a call of this method waiting.
      const grpc::Status status =
          endpoints_.service->Serve(method_, context_, request_, &responses_);
      if (!status.ok()) {
        Finish(status);
        return;
      }
      state_ = State::kWriting;
    } else if (!ok) {  // A write failed: the client is gone.
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    if (next_ < responses_.size()) {
      const grpc::ByteBuffer& message = responses_[next_++];
      // After the last use of the call's own fields.
      HandOver(this, [&] { writer_.Write(message, this); });
    } else {
      Finish(grpc::Status::OK);
    }
  }

 private:
  enum class State { kWaiting, kWriting, kFinishing };

  ServerStreamCall(const Endpoints& endpoints, const RpcMethod& method)
      : endpoints_(endpoints), method_(method), writer_(&context_) {}

  void Finish(const grpc::Status& status) {
    state_ = State::kFinishing;
    HandOver(this, [&] { writer_.Finish(status, this); });
  }

  const Endpoints endpoints_;
  const RpcMethod& method_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_;
  std::vector<grpc::ByteBuffer> responses_;
  size_t next_ = 0;
  grpc::ServerAsyncWriter<grpc::ByteBuffer> writer_;
  State state_ = State::kWaiting;
};

void AwaitEveryMethod(const Endpoints& e) {
  for (const RpcMethod& method : RpcMethods()) {
    if (Declaration(method).server_streaming()) {
      ServerStreamCall::Await(e, method);
    } else {
      UnaryCall::Await(e, method);
    }
  }
}

void Work(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    TakeOver(tag);
    static_cast<Call*>(tag)->Proceed(ok);
  }
}

}  // namespace

CallLoop::CallLoop(AsyncOomguard* async, OomguardService* service,
                   std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues, int threads)
    : queues_(std::move(queues)) {
  for (int i = 0; i < threads; ++i) {
    grpc::ServerCompletionQueue* queue = queues_[i % queues_.size()].get();
    // One waiting call per method per worker, so that workers sharing a
    // queue can each take a call at once.
    AwaitEveryMethod({async, service, queue});
    workers_.emplace_back(Work, queue);
  }
}

CallLoop::~CallLoop() {
  for (auto& queue : queues_) queue->Shutdown();
  for (std::thread& worker : workers_) worker.join();
}

}  // namespace oomguard::service
