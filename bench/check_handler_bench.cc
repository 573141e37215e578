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
// bench/load measures the same paths through gRPC against a trivial handler.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "oomguard/v1/admission.pb.h"
#include "service/metrics.h"
#include "service/request_handlers.h"

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

void BM_CheckHandler(benchmark::State& state) {
  const auto path = static_cast<Path>(state.range(0));
  static oomguard::service::ServiceMetrics metrics("bench");
  const size_t cache_bytes = size_t{64} << 20;
  RequestHandlers handlers(
      ServiceConfig{.log_requests = false,
                    .response_cache_bytes = path == kResponseHit ? cache_bytes : 0,
                    .check_result_cache_bytes = path == kComputed ? 0 : cache_bytes},
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
BENCHMARK(BM_CheckHandler)->ArgName("path")->Arg(kComputed)->Arg(kAnswerHit)->Arg(kResponseHit);

}  // namespace

BENCHMARK_MAIN();
