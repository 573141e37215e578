// The worker pool over the async completion queues (see call_loop.h).
#include "service/call_loop.h"

#include <utility>
#include <vector>

#include "grpcpp/server_context.h"
#include "grpcpp/support/async_stream.h"
#include "grpcpp/support/async_unary_call.h"

namespace oomguard::service {
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
  OomguardService* handlers;
  grpc::ServerCompletionQueue* queue;
};

// One unary call: waits for a request, runs the handler on the worker that
// received it, sends the response, then deletes itself.
template <typename Request, typename Response>
class UnaryCall final : public Call {
 public:
  using Requester = void (AsyncOomguard::*)(grpc::ServerContext*, Request*,
                                            grpc::ServerAsyncResponseWriter<Response>*,
                                            grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                            void*);
  using Handler = grpc::Status (OomguardService::*)(grpc::ServerContext&, const Request&,
                                                    Response*);

  // Asks the server for the next call of this method.
  static void Await(const Endpoints& endpoints, Requester requester, Handler handler) {
    auto* call = new UnaryCall(endpoints, requester, handler);
    HandOver(call, [&] {
      (endpoints.async->*requester)(&call->context_, &call->request_, &call->writer_,
                                    endpoints.queue, endpoints.queue, call);
    });
  }

  void Proceed(bool ok) override {
    if (finishing_ || !ok) {  // Sent, or the server is shutting down.
      delete this;
      return;
    }
    Await(endpoints_, requester_, handler_);  // Keep a call of this method waiting.
    const grpc::Status status = (endpoints_.handlers->*handler_)(context_, request_, &response_);
    finishing_ = true;
    HandOver(this, [&] {
      if (status.ok()) {
        writer_.Finish(response_, status, this);
      } else {
        writer_.FinishWithError(status, this);
      }
    });
  }

 private:
  UnaryCall(const Endpoints& endpoints, Requester requester, Handler handler)
      : endpoints_(endpoints), requester_(requester), handler_(handler), writer_(&context_) {}

  const Endpoints endpoints_;
  const Requester requester_;
  const Handler handler_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool finishing_ = false;
};

// One server-streaming call: waits for a request, runs the handler (which
// returns every message to send), writes the messages one completion at a
// time, finishes, then deletes itself.
class ServerStreamCall final : public Call {
 public:
  using Requester = void (AsyncOomguard::*)(grpc::ServerContext*, grpc::ByteBuffer*,
                                            grpc::ServerAsyncWriter<grpc::ByteBuffer>*,
                                            grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                            void*);
  using Handler = grpc::Status (OomguardService::*)(grpc::ServerContext&, const grpc::ByteBuffer&,
                                                    std::vector<grpc::ByteBuffer>*);

  static void Await(const Endpoints& endpoints, Requester requester, Handler handler) {
    auto* call = new ServerStreamCall(endpoints, requester, handler);
    HandOver(call, [&] {
      (endpoints.async->*requester)(&call->context_, &call->request_, &call->writer_,
                                    endpoints.queue, endpoints.queue, call);
    });
  }

  void Proceed(bool ok) override {
    if (state_ == State::kFinishing || (state_ == State::kWaiting && !ok)) {
      delete this;  // Finished, or the server is shutting down.
      return;
    }
    if (state_ == State::kWaiting) {
      Await(endpoints_, requester_, handler_);  // Keep a call of this method waiting.
      const grpc::Status status = (endpoints_.handlers->*handler_)(context_, request_, &responses_);
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

  ServerStreamCall(const Endpoints& endpoints, Requester requester, Handler handler)
      : endpoints_(endpoints), requester_(requester), handler_(handler), writer_(&context_) {}

  void Finish(const grpc::Status& status) {
    state_ = State::kFinishing;
    HandOver(this, [&] { writer_.Finish(status, this); });
  }

  const Endpoints endpoints_;
  const Requester requester_;
  const Handler handler_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_;
  std::vector<grpc::ByteBuffer> responses_;
  size_t next_ = 0;
  grpc::ServerAsyncWriter<grpc::ByteBuffer> writer_;
  State state_ = State::kWaiting;
};

void AwaitEveryMethod(const Endpoints& e) {
  using RawCall = UnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>;
  RawCall::Await(e, &AsyncOomguard::RequestEstimate, &OomguardService::Estimate);
  RawCall::Await(e, &AsyncOomguard::RequestCheck, &OomguardService::Check);
  RawCall::Await(e, &AsyncOomguard::RequestListPresets, &OomguardService::ListPresets);
  RawCall::Await(e, &AsyncOomguard::RequestListGpus, &OomguardService::ListGpus);
  ServerStreamCall::Await(e, &AsyncOomguard::RequestPlan, &OomguardService::Plan);
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

CallLoop::CallLoop(AsyncOomguard* async, OomguardService* handlers,
                   std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues, int threads)
    : queues_(std::move(queues)) {
  for (int i = 0; i < threads; ++i) {
    grpc::ServerCompletionQueue* queue = queues_[i % queues_.size()].get();
    // One waiting call per method per worker, so that workers sharing a
    // queue can each take a call at once.
    AwaitEveryMethod({async, handlers, queue});
    workers_.emplace_back(Work, queue);
  }
}

CallLoop::~CallLoop() {
  for (auto& queue : queues_) queue->Shutdown();
  for (std::thread& worker : workers_) worker.join();
}

}  // namespace oomguard::service
