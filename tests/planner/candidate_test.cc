// A planned configuration described (planner/candidate.h): the recompute
// as text, the exact Megatron-LM arguments for given settings (the flag
// table's spellings, in the order the candidate writes them), what a
// candidate carries from the job, its step time and its peaks, and the
// reasons for its rank.
#include "planner/candidate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/validated_job.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::oomguard::testing::JobFromArgs;
using ::oomguard::testing::SmallGptArgs;
using ::testing::ElementsAre;

// The small GPT (micro-batch 4, global batch 32, seq 1024) of `layers`
// layers on `gpus` GPUs with `extra` arguments, and its validation.
struct Job {
  v1::JobSpec spec;
  ValidatedJob validated;
};
Job SmallGpt(int layers, uint32_t gpus, std::vector<std::string> extra) {
  Job job;
  job.spec = JobFromArgs(SmallGptArgs(layers, std::move(extra)), gpus);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job.spec, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  if (j.ok()) job.validated = *std::move(j);
  return job;
}

std::string Args(const Job& job) { return CandidateArgs(job.validated, job.spec); }

// TP, PP, VPP, CP, sequence parallel, the batch, full recompute and the
// distributed optimizer; the step-time model's data-parallel overlap last.
TEST(CandidateArgs, InterleavedPipelineWithFullRecompute) {
  const Job job =
      SmallGpt(8, 8,
               {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
                "--num-virtual-stages-per-pipeline-rank", "2", "--sequence-parallel",
                "--use-distributed-optimizer", "--recompute-granularity", "full",
                "--recompute-method", "uniform", "--recompute-num-layers", "1"});
  EXPECT_EQ(Args(job),
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--num-virtual-stages-per-pipeline-rank 2 --context-parallel-size 1 "
            "--sequence-parallel --micro-batch-size 4 --global-batch-size 32 --seq-length 1024 "
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
            "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather");
  EXPECT_EQ(RecomputeText(job.validated), "full uniform 1");
}

// Virtual stages given as layers per stage stay in that spelling, with the
// job's value (2 layers a stage, not the 2 stages they make).
TEST(CandidateArgs, LayersPerVirtualStageKeepTheirFlag) {
  const Job job = SmallGpt(
      12, 2,
      {"--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "2"});
  EXPECT_EQ(job.validated.parallelism.vpp, 3);
  EXPECT_EQ(Args(job),
            "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 "
            "--num-layers-per-virtual-pipeline-stage 2 --context-parallel-size 1 "
            "--micro-batch-size 4 --global-batch-size 32 --seq-length 1024 "
            "--overlap-grad-reduce --overlap-param-gather");
  EXPECT_EQ(RecomputeText(job.validated), "none");
}

// An uneven split and full block recompute; TP 1 (no sequence parallel)
// and no distributed optimizer: neither flag.
TEST(CandidateArgs, UnevenSplitWithBlockRecompute) {
  const Job job =
      SmallGpt(8, 3,
               {"--pipeline-model-parallel-size", "3", "--decoder-first-pipeline-num-layers", "3",
                "--decoder-last-pipeline-num-layers", "3", "--recompute-granularity", "full",
                "--recompute-method", "block", "--recompute-num-layers", "2"});
  EXPECT_EQ(Args(job),
            "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 3 "
            "--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 3 "
            "--context-parallel-size 1 --micro-batch-size 4 --global-batch-size 32 "
            "--seq-length 1024 --recompute-granularity full --recompute-method block "
            "--recompute-num-layers 2 --overlap-grad-reduce --overlap-param-gather");
  EXPECT_EQ(RecomputeText(job.validated), "full block 2");
}

// MoE: the expert sizes (ETP written even when it is the default); the
// embedding and loss split; CP; selective modules in the enum's order
// (moe_act before layernorm, whatever order the job gave); the optimizer
// offload and its fraction.
TEST(CandidateArgs, MoeWithSelectiveRecomputeAndOffload) {
  const Job job = SmallGpt(6, 8,
                           {"--num-experts",
                            "8",
                            "--moe-router-topk",
                            "2",
                            "--moe-grouped-gemm",
                            "--tensor-model-parallel-size",
                            "2",
                            "--sequence-parallel",
                            "--pipeline-model-parallel-size",
                            "2",
                            "--account-for-embedding-in-pipeline-split",
                            "--account-for-loss-in-pipeline-split",
                            "--context-parallel-size",
                            "2",
                            "--expert-model-parallel-size",
                            "4",
                            "--expert-tensor-parallel-size",
                            "1",
                            "--recompute-granularity",
                            "selective",
                            "--recompute-modules",
                            "layernorm",
                            "moe_act",
                            "--use-distributed-optimizer",
                            "--optimizer-cpu-offload",
                            "--use-precision-aware-optimizer",
                            "--optimizer-offload-fraction",
                            "0.5"});
  EXPECT_EQ(Args(job),
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split "
            "--context-parallel-size 2 --expert-model-parallel-size 4 "
            "--expert-tensor-parallel-size 1 --sequence-parallel --micro-batch-size 4 "
            "--global-batch-size 32 --seq-length 1024 --recompute-granularity selective "
            "--recompute-modules moe_act layernorm --use-distributed-optimizer "
            "--optimizer-cpu-offload --optimizer-offload-fraction 0.5 "
            "--use-precision-aware-optimizer --overlap-grad-reduce --overlap-param-gather");
  EXPECT_EQ(RecomputeText(job.validated), "selective moe_act,layernorm");
}

// The pipeline layout, single-quoted for the shell; it sets the virtual
// stages, so no VPP flag. Selective recompute without modules is
// Megatron's default, core_attn.
TEST(CandidateArgs, LayoutQuotedAndDefaultSelectiveModules) {
  const Job job = SmallGpt(
      7, 2,
      {"--mtp-num-layers", "1", "--pipeline-model-parallel-size", "2",
       "--pipeline-model-parallel-layout", "Etttt|tttmL", "--recompute-granularity", "selective"});
  EXPECT_EQ(Args(job),
            "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 "
            "--pipeline-model-parallel-layout 'Etttt|tttmL' --context-parallel-size 1 "
            "--micro-batch-size 4 --global-batch-size 32 --seq-length 1024 "
            "--recompute-granularity selective --recompute-modules core_attn "
            "--overlap-grad-reduce --overlap-param-gather");
  EXPECT_EQ(RecomputeText(job.validated), "selective core_attn");
}

// Two PP ranks whose worst differ by the point estimate (rank 1) and by the
// device upper bound (rank 0).
PeakEstimate TwoRanks() {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  PeakEstimate peaks;
  peaks.ranks.resize(2);
  peaks.ranks[0].peak_device_bytes = 50 * kGiB;
  peaks.ranks[0].peak_device_upper_bytes = 60 * kGiB;
  peaks.ranks[1].peak_device_bytes = 55 * kGiB;
  peaks.ranks[1].peak_device_upper_bytes = 58 * kGiB;
  peaks.worst_rank = 1;
  peaks.worst_upper_rank = 0;
  return peaks;
}

StepTime SomeStepTime() {
  StepTime t;
  t.seconds = 10;
  t.compute = 6;
  t.recompute = 2;
  t.tensor_parallel = 1;
  t.context_parallel = 0.25;
  t.expert_parallel = 0;
  t.pipeline_bubble = 0.5;
  t.data_parallel = 0.15;
  t.offload = 0.1;
  t.tokens_per_gpu_per_second = 1000;
  t.mfu = 0.4;
  return t;
}

TEST(DescribeCandidate, CarriesTheJobTheStepTimeAndTheWorstRank) {
  const Job job = SmallGpt(
      8, 8,
      {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
       "--sequence-parallel", "--use-distributed-optimizer", "--decoder-first-pipeline-num-layers",
       "3", "--decoder-last-pipeline-num-layers", "5", "--recompute-granularity", "full",
       "--recompute-method", "uniform", "--recompute-num-layers", "1"});
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  const v1::PlanCandidate upper =
      DescribeCandidate(job.spec, job.validated, SomeStepTime(), TwoRanks(), 70 * kGiB, true);
  EXPECT_EQ(upper.tp(), 2u);
  EXPECT_EQ(upper.pp(), 2u);
  EXPECT_EQ(upper.vpp(), 1u);
  EXPECT_EQ(upper.cp(), 1u);
  EXPECT_EQ(upper.ep(), 1u);
  EXPECT_EQ(upper.etp(), 2u);  // Megatron's default: TP.
  EXPECT_EQ(upper.dp(), 2u);   // 8 / (TP 2 x PP 2).
  EXPECT_EQ(upper.micro_batch_size(), 4u);
  EXPECT_EQ(upper.num_microbatches(), 4u);  // 32 / (4 x DP 2).
  EXPECT_EQ(upper.decoder_first_pipeline_num_layers(), 3u);
  EXPECT_EQ(upper.decoder_last_pipeline_num_layers(), 5u);
  EXPECT_TRUE(upper.sequence_parallel());
  EXPECT_TRUE(upper.distributed_optimizer());
  EXPECT_FALSE(upper.optimizer_cpu_offload());
  EXPECT_FALSE(upper.expert_parallel_overlap());
  EXPECT_EQ(upper.recompute(), "full uniform 1");
  // By the upper bound rank 0 is the worst: 70 - 60 GiB left.
  EXPECT_EQ(upper.worst_pp_rank(), 0u);
  EXPECT_EQ(upper.peak_device_bytes(), 50 * kGiB);
  EXPECT_EQ(upper.peak_device_upper_bytes(), 60 * kGiB);
  EXPECT_EQ(upper.headroom_bytes(), static_cast<int64_t>(10 * kGiB));
  EXPECT_THAT(upper.rank_peak_device_bytes(), ElementsAre(50 * kGiB, 55 * kGiB));
  EXPECT_EQ(upper.step_time_seconds(), 10);
  EXPECT_EQ(upper.tokens_per_gpu_per_second(), 1000);
  EXPECT_EQ(upper.mfu(), 0.4);
  EXPECT_EQ(upper.breakdown().compute_seconds(), 6);
  EXPECT_EQ(upper.breakdown().recompute_seconds(), 2);
  EXPECT_EQ(upper.breakdown().tensor_parallel_seconds(), 1);
  EXPECT_EQ(upper.breakdown().context_parallel_seconds(), 0.25);
  EXPECT_EQ(upper.breakdown().expert_parallel_seconds(), 0);
  EXPECT_EQ(upper.breakdown().pipeline_bubble_seconds(), 0.5);
  EXPECT_EQ(upper.breakdown().data_parallel_seconds(), 0.15);
  EXPECT_EQ(upper.breakdown().offload_seconds(), 0.1);
  EXPECT_EQ(upper.megatron_args(), Args(job));
  EXPECT_EQ(upper.reasons_size(), 0);  // SetReasons' job.

  // By the point estimate rank 1: 70 - 55 GiB left.
  const v1::PlanCandidate point =
      DescribeCandidate(job.spec, job.validated, SomeStepTime(), TwoRanks(), 70 * kGiB, false);
  EXPECT_EQ(point.worst_pp_rank(), 1u);
  EXPECT_EQ(point.peak_device_bytes(), 55 * kGiB);
  EXPECT_EQ(point.peak_device_upper_bytes(), 58 * kGiB);
  EXPECT_EQ(point.headroom_bytes(), static_cast<int64_t>(15 * kGiB));
  // Over the usable memory: negative headroom.
  EXPECT_EQ(DescribeCandidate(job.spec, job.validated, SomeStepTime(), TwoRanks(), 50 * kGiB, true)
                .headroom_bytes(),
            -static_cast<int64_t>(10 * kGiB));
}

// The fastest: its throughput, then the two largest costs beyond compute
// (recompute 2 s and TP 1 s of 10 s).
TEST(SetReasons, FastestWithItsTwoLargestCosts) {
  const Job job = SmallGpt(8, 8,
                           {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size",
                            "2", "--sequence-parallel", "--recompute-granularity", "full",
                            "--recompute-method", "uniform", "--recompute-num-layers", "1"});
  v1::PlanCandidate c = DescribeCandidate(job.spec, job.validated, SomeStepTime(), TwoRanks(),
                                          uint64_t{70} << 30, true);
  SetReasons(1000, &c);
  EXPECT_THAT(c.reasons(), ElementsAre("fastest predicted: 1000 tokens/GPU/s, MFU 40%",
                                       "recompute (full uniform 1) takes 20% of the step",
                                       "TP/SP communication (TP 2) takes 10% of the step"));
  // Set again: replaced, not appended.
  SetReasons(1000, &c);
  EXPECT_EQ(c.reasons_size(), 3);
}

// A slower candidate whose costs beyond compute are each under 0.5% of the
// step: how much slower, then its peak and headroom.
TEST(SetReasons, SlowerWithItsPeak) {
  const Job job = SmallGpt(8, 8, {"--pipeline-model-parallel-size", "2"});
  StepTime t;
  t.seconds = 10;
  t.compute = 9.96;
  t.pipeline_bubble = 0.04;  // 0.4% of the step.
  t.tokens_per_gpu_per_second = 800;
  t.mfu = 0.32;
  const v1::PlanCandidate described =
      DescribeCandidate(job.spec, job.validated, t, TwoRanks(), uint64_t{65} << 30, false);
  v1::PlanCandidate c = described;
  SetReasons(1000, &c);
  EXPECT_THAT(c.reasons(), ElementsAre("20.0% slower than the best (800 tokens/GPU/s, MFU 32%)",
                                       "peak 55.0 GiB on PP rank 1, 10.0 GiB headroom"));
  // Within 0.05% of the best counts as the fastest.
  c = described;
  SetReasons(800.3, &c);
  EXPECT_EQ(c.reasons(0), "fastest predicted: 800 tokens/GPU/s, MFU 32%");
}

}  // namespace
}  // namespace oomguard
