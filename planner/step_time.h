// The analytic step-time model the planner ranks configurations by: how long
// one training iteration of a validated job takes on a given GPU, and where
// the time goes. Documented term by term in step_time.cc, each constant where
// it is declared with where its value comes from; the constants were fitted
// once, for all the measured tables of tests/planner/step_time_test.cc
// (../shared/seeds 001, 002, 003), never per table.
//
// The model, per micro-batch of one pipeline rank: GEMM and attention FLOPs
// (forward + backward = 3 x forward; recompute adds its extra forward) at an
// efficiency that falls as TP, EP and the micro-batch shrink the GEMMs;
// memory-bound element-wise work and MoE token permutation at HBM speed;
// TP/SP all-gathers and reduce-scatters on NVLink; CP's key/value ring,
// partly hidden behind attention; the EP all-to-all, inside a node on
// NVLink and across nodes on the network. Per iteration: the slowest rank's
// micro-batches plus the pipeline bubble (p - 1) / v of them, pipeline
// send/receive when nothing hides it (no interleaving), the data-parallel
// reduce-scatter and all-gather beyond what overlaps with the last and first
// micro-batch, and the optimizer's host traffic when it is offloaded.
#ifndef OOMGUARD_PLANNER_STEP_TIME_H_
#define OOMGUARD_PLANNER_STEP_TIME_H_

#include "estimator/validated_job.h"
#include "planner/gpu_performance.h"

namespace oomguard {

struct StepTime {
  double seconds = 0;  // One iteration.
  // The exposed part of each cost, per iteration (they sum to `seconds`).
  double compute = 0;
  double recompute = 0;
  double tensor_parallel = 0;
  double context_parallel = 0;
  double expert_parallel = 0;
  double pipeline_bubble = 0;  // Includes the exposed pipeline send/receive.
  double data_parallel = 0;
  double offload = 0;
  // The expert_parallel term with --overlap-moe-expert-parallel-comm on
  // (equal to expert_parallel when the job sets it): what the planner saves
  // by adding it, without a second estimate.
  double expert_parallel_overlapped = 0;

  double tokens_per_gpu_per_second = 0;
  double model_flops_per_token = 0;  // Forward + backward, no recompute.
  double mfu = 0;                    // Model FLOP/s per GPU over the BF16 dense peak.
};

// The step time of `j` on `gpu`; j.runtime.gpus_per_node is the NVLink
// domain. Pure arithmetic (no allocation): the planner calls it for every
// setting it enumerates.
StepTime EstimateStepTime(const ValidatedJob& j, const GpuPerformance& gpu);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_STEP_TIME_H_
