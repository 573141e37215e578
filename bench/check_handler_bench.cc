// Speed of the service's Check handler without its transport
// (RequestHandlers::Check: request bytes -> parsed request -> resolved job
// -> check -> serialized answer), the way admission hooks call it:
// examples/deepseek_v3_1024gpu.args on the deepseek-v3 preset, 1024 GPUs,
// H100-SXM-80GB, without the per-rank report (omit_report). Three paths:
//   computed:     both caches off, every call resolves, estimates, re-estimates
//                 for the recommendations and looks up its alternatives;
//   answer_hit:   each call's bytes new (another --save directory), its job
//                 one seen before: the cache of answers by job
//                 (check_result_cache.h) answers after the resolution;
//   response_hit: the same bytes again: the response cache answers.
// Each path runs without and with a store (`store`: an SQLite file in
// $TMPDIR, as `serve --store sqlite:PATH`): with one, every answer gets its
// check id and its record is queued for the store's writer, the cost a store
// adds to a Check.
// bench/load measures the same paths through gRPC against a trivial handler.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "oomguard/v1/admission.pb.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "store/check_store.h"

namespace {

using oomguard::service::CallOutcome;
using oomguard::service::RequestHandlers;
using oomguard::service::ServiceConfig;

enum Path { kComputed = 0, kAnswerHit = 1, kResponseHit = 2 };

// The serialized Check of the example job with `extra` arguments appended.
std::string CheckBytes(const std::string& extra) {
  std::ifstream in(std::string(OOMGUARD_SOURCE_DIR) + "/examples/deepseek_v3_1024gpu.args");
  if (!in) std::abort();
  oomguard::v1::CheckRequest request;
  oomguard::v1::MegatronJob* job = request.mutable_job()->mutable_megatron();
  job->set_preset("deepseek-v3");
  job->set_num_gpus(1024);
  job->set_args(absl::StrCat(std::string(std::istreambuf_iterator<char>(in), {}), " ", extra));
  request.set_gpu_name("H100-SXM-80GB");
  request.set_omit_report(true);
  return request.SerializeAsString();
}

// An SQLite store in a new directory under $TMPDIR.
std::unique_ptr<oomguard::store::CheckStore> NewSqliteStore() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/oomguard-check-bench-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) std::abort();
  oomguard::store::StoreUrl url;
  url.sqlite_path = dir + "/checks.db";
  auto opened = oomguard::store::OpenCheckStore(url, {});
  if (!opened.ok()) std::abort();
  return *std::move(opened);
}

void BM_CheckHandler(benchmark::State& state) {
  const auto path = static_cast<Path>(state.range(0));
  std::unique_ptr<oomguard::store::CheckStore> store =
      state.range(1) != 0 ? NewSqliteStore() : nullptr;
  static oomguard::service::ServiceMetrics metrics("bench");
  const size_t cache_bytes = size_t{64} << 20;
  RequestHandlers handlers(
      ServiceConfig{.log_requests = false,
                    .response_cache_bytes = path == kResponseHit ? cache_bytes : 0,
                    .check_result_cache_bytes = path == kComputed ? 0 : cache_bytes,
                    .store = store.get()},
      &metrics);
  // Distinct requests of one job, cycled (only answer_hit uses more than one).
  std::vector<std::string> requests;
  for (int i = 0; i < (path == kAnswerHit ? 4096 : 1); ++i) {
    requests.push_back(CheckBytes(absl::StrCat("--save /checkpoints/run-", i)));
  }
  // A serving server has planned the job's alternatives once (the plan
  // cache, on in every path); each new benchmark run builds new handlers.
  CallOutcome warm_up;
  if (!handlers.Check(requests[0], absl::InfiniteFuture(), warm_up).ok()) std::abort();
  size_t next = 0;
  for (auto _ : state) {
    CallOutcome outcome;
    auto answer = handlers.Check(requests[next], absl::InfiniteFuture(), outcome);
    if (!answer.ok()) std::abort();
    benchmark::DoNotOptimize(answer);
    if (++next == requests.size()) next = 0;
  }
}
BENCHMARK(BM_CheckHandler)
    ->ArgNames({"path", "store"})
    ->ArgsProduct({{kComputed, kAnswerHit, kResponseHit}, {0, 1}});

}  // namespace

BENCHMARK_MAIN();
