// The planner: every parallel and recompute configuration of a model that
// fits a cluster, ranked by expected speed (step_time.h).
//
// The search, from a base job (the model and training shape, with any
// parallel size the user fixed) and the cluster:
//   TP        powers of two up to the NVLink domain (TP never leaves a node);
//   CP        1, and powers of two while each rank keeps >= kMinCpTokens
//             tokens of the sequence;
//   PP        divisors of GPUs / (TP x CP) up to the decoder layers, each with
//             its splits: even, embedding and loss counted as layers
//             (--account-for-embedding/loss-in-pipeline-split), uneven
//             first/last stages (--decoder-first/last-pipeline-num-layers),
//             and for models with MTP layers the layouts of
//             mtp_layouts.h (--pipeline-model-parallel-layout: embedding,
//             MTP layers and loss as their own entries, counted as layers,
//             "Et|(tt|)*30mL", or with lighter first and last stages,
//             "Etttt|(tttt|)*14tmL");
//   VPP       1 and the divisors of the layers per stage, up to kMaxVpp
//             (a layout's: every VPP up to kMaxVpp, or the one the job
//             fixes);
//   EP, ETP   (MoE models) EP a power of two dividing the experts, ETP 1 or
//             TP; EP x ETP inside the NVLink domain and across domains
//             (ranked by the step-time model, which charges the network's
//             all-to-all), unless the request forbids crossing;
//   micro-batch 1, 2, 4, 8 (dividing the global batch over DP);
//   recompute none, selective (core_attn; moe_act + layernorm; moe +
//             layernorm; mlp; with MLA mla_up_proj + mlp), full (block: half
//             the layers of a chunk; uniform: every layer); optimizer CPU
//             offload off, then on.
// Sequence parallel is on whenever TP > 1 and the distributed optimizer
// always (both only save memory at no modelled cost). Every candidate is
// validated by the estimator (ValidateJob: Megatron-Core's rules live there)
// and its memory estimated by the same model as `oomguard estimate`
// (EstimatePeaks). Of the settings of one layout and micro-batch size only
// the fastest that fits is kept: the others are slower by the model and
// need no estimate. A layout whose most memory-saving setting does not fit
// at a micro-batch size skips the larger sizes. The layouts and micro-batch
// sizes are searched best first, by the speed of their fastest setting (no
// recompute, no offload): once `limit` candidates are found, the first that
// cannot enter them ends the search, with no memory estimate of the rest.
#ifndef OOMGUARD_PLANNER_PLANNER_H_
#define OOMGUARD_PLANNER_PLANNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/deadline.h"
#include "estimator/job_defaults.h"
#include "estimator/peak_bound.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/plan.pb.h"
#include "planner/gpu_performance.h"
#include "planner/search_space.h"
#include "planner/step_time.h"

namespace oomguard {

// The bound of the search: settings enumerated (layout x micro-batch x
// recompute x offload). A request over it is refused (fix a parallel size).
inline constexpr uint64_t kMaxPlanSettings = 1'000'000;
inline constexpr uint32_t kMaxPlanLimit = 1000;  // Candidates returned.
inline constexpr int64_t kMaxVpp = 16;
inline constexpr int64_t kMinCpTokens = 2048;
// A candidate is "clearly faster" than the job's own configuration when its
// predicted throughput is this much higher.
inline constexpr double kClearlyFaster = 1.10;

struct PlanCluster {
  // The NVLink domain (NvlinkDomain(), gpu_performance.h).
  uint32_t gpus_per_node = kDefaultGpusPerNode;
  v1::GpuSpec gpu;       // Memory (the catalog entry).
  GpuPerformance speed;  // Speed (gpu_performance.h).
};

struct PlanOptions {
  // Fraction of the GPU's memory a candidate leaves free, in [0, 1).
  double memory_margin = 0.0;
  // A candidate fits when its worst rank's device upper bound at
  // `upper_bound_coverage` (estimator/peak_bound.h) is within the usable
  // memory; false: its point estimate. The admission check's rule.
  bool compare_upper_bound = true;
  double upper_bound_coverage = kDefaultUpperBoundCoverage;
  uint32_t limit = 20;  // Candidates returned, best first; 1..kMaxPlanLimit.
  bool allow_recompute = true;
  bool allow_offload = true;
  // EP x ETP may span NVLink domains: the search tries it and the step-time
  // model ranks it (its all-to-all over the network); false keeps the
  // expert-parallel groups inside one domain (PlanConstraints.
  // allow_cross_node_expert_parallel = false).
  bool allow_cross_node_expert_parallel = true;
  // Try each setting with --overlap-moe-expert-parallel-comm added where
  // Megatron-Core accepts it (PlanConstraints.no_expert_parallel_overlap
  // turns that off; a job that sets the flag keeps it either way).
  bool allow_expert_parallel_overlap = true;
  // The ranges of the sizes the search tries (PlanConstraints' SizeRange
  // fields; open by default). A size the job fixes must lie in its range.
  SizeRanges sizes;
  // DeadlineExceeded once this passes (checked for every layout).
  Deadline deadline;
};

struct PlanResult {
  std::vector<v1::PlanCandidate> candidates;  // Best first.
  v1::PlanSummary summary;
};

// The checks Plan() makes of PlanOptions.memory_margin ([0, 1)) and
// PlanOptions.limit ([1, kMaxPlanLimit]), for a caller that names the
// request's `field`: InvalidArgument "<field> = <value>: ...".
absl::Status ValidateMemoryMargin(double margin, absl::string_view field);
absl::Status ValidatePlanLimit(uint32_t limit, absl::string_view field);
// A SizeRange's check (both ends at least 1, min <= max): InvalidArgument
// "<field>.min = 0: must be at least 1" or "<field>: min 8 > max 4".
absl::Status ValidateSizeRange(const SizeRange& range, absl::string_view field);

// Plans `job` (built by jobspec's BuildJob: parallelism.num_gpus is the
// cluster's GPU count; a parallel size it sets is kept fixed; without
// --seq-length 4096 and without --global-batch-size 1024 are assumed, with a
// note). InvalidArgument naming the field for a bad job or option, and for
// a communication overlap the job sets that Megatron-Core refuses in every
// setting the search may choose (expert_parallel_overlap.h,
// shared_expert_overlap.h);
// ResourceExhausted when the search exceeds kMaxPlanSettings;
// DeadlineExceeded.
absl::StatusOr<PlanResult> Plan(const v1::JobSpec& job, const PlanCluster& cluster,
                                const PlanOptions& options);

// The predicted step time of `job` itself, as given, on the cluster (no
// memory estimate): what a check compares the best of its plan with.
// InvalidArgument naming the field for a bad job.
absl::StatusOr<StepTime> EstimateJobStepTime(const v1::JobSpec& job, const PlanCluster& cluster);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_PLANNER_H_
