// Alternatives inside an admission check (see alternatives.h).
#include "planner/alternatives.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "planner/planner.h"

namespace oomguard {
namespace {

// The job with its layout and recompute left to the search (its batch,
// sequence, model, precision and runtime kept, and the communication
// overlaps it chose: an alternative's arguments go on top of the job's own
// line, so they must run beside them).
v1::JobSpec Searchable(const v1::JobSpec& job) {
  v1::JobSpec base = job;
  v1::ParallelismSpec* p = base.mutable_parallelism();
  const uint32_t gpus = p->num_gpus();
  const bool ep_overlap = p->overlap_moe_expert_parallel_comm();
  const bool shared_overlap = p->moe_shared_expert_overlap();
  const bool tp_overlap = p->tp_comm_overlap();
  p->Clear();
  p->set_num_gpus(gpus);
  p->set_overlap_moe_expert_parallel_comm(ep_overlap);
  p->set_moe_shared_expert_overlap(shared_overlap);
  p->set_tp_comm_overlap(tp_overlap);
  base.clear_recompute();
  base.mutable_precision()->clear_optimizer_cpu_offload();
  base.mutable_precision()->clear_optimizer_offload_fraction();
  return base;
}

void Add(const v1::PlanCandidate& c, double own_tokens, bool compare_upper_bound,
         v1::CheckResponse* response) {
  v1::Alternative* a = response->add_alternatives();
  a->set_megatron_args(c.megatron_args());
  a->set_description(absl::StrCat("TP ", c.tp(), " PP ", c.pp(), " VPP ", c.vpp(), " CP ", c.cp(),
                                  " EP ", c.ep(), " ETP ", c.etp(), ", micro-batch ",
                                  c.micro_batch_size(), ", recompute ", c.recompute(),
                                  c.optimizer_cpu_offload() ? ", optimizer CPU offload" : "",
                                  c.expert_parallel_overlap() ? ", EP all-to-all overlapped" : ""));
  a->set_peak_device_bytes(c.peak_device_bytes());
  a->set_compared_peak_bytes(compare_upper_bound ? c.peak_device_upper_bytes()
                                                 : c.peak_device_bytes());
  a->set_tokens_per_gpu_per_second(c.tokens_per_gpu_per_second());
  a->set_speedup(own_tokens > 0 ? c.tokens_per_gpu_per_second() / own_tokens : 0);
}

}  // namespace

absl::Status AddAlternatives(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                             const Deadline& deadline, PlanCache* cache,
                             v1::CheckResponse* response) {
  const absl::StatusOr<GpuPerformance> speed = FindGpuPerformance(gpu.name());
  if (!speed.ok()) return absl::OkStatus();
  PlanCluster cluster;
  cluster.gpu = gpu;
  cluster.speed = *speed;
  cluster.gpus_per_node = NvlinkDomain(*speed, job.runtime().gpus_per_node());
  PlanOptions options;
  // The check's own memory rule: an alternative it proposes passes it.
  options.memory_margin = response->safety_margin();
  options.compare_upper_bound = response->peak_bound() != v1::PEAK_BOUND_POINT;
  options.upper_bound_coverage = response->upper_bound_coverage();
  options.limit = kMaxAlternatives;
  options.deadline = deadline;
  const v1::JobSpec searchable = Searchable(job);
  const bool use_cache = cache != nullptr && cache->enabled();
  const std::string key = use_cache ? PlanCacheKey(searchable, cluster, options) : "";
  // A hit shares the cached plan (no copy of its candidates).
  std::shared_ptr<const PlanResult> plan = use_cache ? cache->Find(key).value_or(nullptr) : nullptr;
  if (plan == nullptr) {
    absl::StatusOr<PlanResult> planned = Plan(searchable, cluster, options);
    if (absl::IsDeadlineExceeded(planned.status()) || absl::IsUnavailable(planned.status())) {
      return planned.status();
    }
    // A refused search (e.g. one past kMaxPlanSettings) is no plan; it is
    // not stored, and costs the same again.
    if (!planned.ok()) return absl::OkStatus();
    plan = std::make_shared<const PlanResult>(*std::move(planned));
    if (use_cache) cache->Insert(key, plan);
  }
  if (plan->candidates.empty()) return absl::OkStatus();
  if (response->verdict() == v1::VERDICT_DOES_NOT_FIT) {
    for (const v1::PlanCandidate& c : plan->candidates)
      Add(c, 0, options.compare_upper_bound, response);
    return absl::OkStatus();
  }
  const absl::StatusOr<StepTime> own = EstimateJobStepTime(job, cluster);
  if (!own.ok()) return absl::OkStatus();
  const v1::PlanCandidate& best = plan->candidates.front();
  if (best.tokens_per_gpu_per_second() >= kClearlyFaster * own->tokens_per_gpu_per_second) {
    Add(best, own->tokens_per_gpu_per_second, options.compare_upper_bound, response);
  }
  return absl::OkStatus();
}

}  // namespace oomguard
