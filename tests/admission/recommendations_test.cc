// Tests of the changes admission recommends (admission/recommendations.h):
// each setting, written from the change by the flag table's writer, is
// exactly the one shown to users, names every flag field the change made,
// and the Megatron-LM flags in it, read back by the parser, make the change
// the recommendation made.
#include "admission/recommendations.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "admission/gpu_catalog.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_args_writer.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

v1::GpuSpec H100() {
  absl::StatusOr<v1::GpuSpec> gpu = GpuCatalog::Builtin().Find("H100-SXM-80GB");
  EXPECT_TRUE(gpu.ok()) << gpu.status();
  return *gpu;
}

// An MLA MoE job on 16 GPUs with TE-scoped CUDA graphs, NCCL user buffers
// and activation offload: every change applies to it, or conflicts (those
// that read the validated job, such as cpu_offloading_conflict, apply to the
// jobs with a whole model below).
v1::JobSpec CrowdedJob() {
  v1::JobSpec job;
  job.mutable_model()->set_num_experts(8);
  job.mutable_model()->set_attention_type(v1::ATTENTION_TYPE_MLA);
  job.mutable_parallelism()->set_num_gpus(16);
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE);
  job.mutable_runtime()->set_use_nccl_ub(true);
  job.mutable_recompute()->set_cpu_offloading_num_layers(1);
  return job;
}

// A dense two-layer job on 16 GPUs with nothing else set.
v1::JobSpec PlainJob() {
  return testing::JobFromArgs(testing::SmallGptArgs(2, {"--global-batch-size", "64"}), 16);
}

// `preset` on 32 GPUs with a 4096-token sequence and `args`.
v1::JobSpec PresetJob(const std::string& preset, const std::string& args) {
  return testing::JobFromArgs(
      absl::StrSplit("--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 " + args, ' ',
                     absl::SkipEmpty()),
      32, preset);
}

// The setting of every change that applies to `job`, by id.
std::map<std::string, std::string> Settings(const v1::JobSpec& job,
                                            const std::vector<RecommendedChange>& changes) {
  std::map<std::string, std::string> settings;
  for (const RecommendedChange& change : changes) {
    v1::JobSpec changed = job;
    if (std::optional<std::string> setting = change.Apply(H100(), &changed)) {
      settings[change.id] = *setting;
    }
  }
  return settings;
}

std::vector<RecommendedChange> LadderChanges() {
  std::vector<RecommendedChange> changes;
  for (const LadderRung& rung : RecommendationLadder())
    changes.insert(changes.end(), rung.begin(), rung.end());
  return changes;
}

TEST(RecommendationsTest, LadderSettings) {
  EXPECT_THAT(
      Settings(CrowdedJob(), LadderChanges()),
      ::testing::ElementsAre(
          ::testing::Pair("distributed_optimizer", "--use-distributed-optimizer"),
          ::testing::Pair("expandable_segments",
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0, "
                          "and drop --use-nccl-ub (it does not work with them)"),
          ::testing::Pair("full_recompute",
                          "--recompute-granularity full --recompute-method uniform "
                          "--recompute-num-layers 1 --cuda-graph-impl none, and drop "
                          "--cpu-offloading-num-layers"),
          ::testing::Pair("more_pipeline_parallel", "--pipeline-model-parallel-size 2"),
          ::testing::Pair("more_tensor_parallel",
                          "--tensor-model-parallel-size 2 --sequence-parallel"),
          ::testing::Pair("optimizer_cpu_offload",
                          "--optimizer-cpu-offload --optimizer-offload-fraction 1.0 "
                          "--use-precision-aware-optimizer --use-distributed-optimizer"),
          ::testing::Pair("recompute_layernorm",
                          "--recompute-granularity selective --recompute-modules layernorm"),
          ::testing::Pair("recompute_mla_up_proj",
                          "--recompute-granularity selective --recompute-modules mla_up_proj"),
          ::testing::Pair("recompute_moe_act",
                          "--recompute-granularity selective --recompute-modules moe_act "
                          "--moe-grouped-gemm")));
  const std::map<std::string, std::string> plain = Settings(PlainJob(), LadderChanges());
  EXPECT_EQ(plain.at("activation_cpu_offload"), "--cpu-offloading-num-layers 1");
  EXPECT_EQ(plain.at("full_recompute"),
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
  EXPECT_EQ(plain.at("expandable_segments"), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
}

TEST(RecommendationsTest, IncompatibilitySettings) {
  v1::JobSpec job = CrowdedJob();
  job.mutable_runtime()->set_expandable_segments(true);
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_THAT(
      Settings(job, IncompatibilityFixes()),
      ::testing::ElementsAre(::testing::Pair("full_recompute_with_cuda_graphs",
                                             "--cuda-graph-impl none (or selective recompute, or "
                                             "--cuda-graph-impl full_iteration)"),
                             ::testing::Pair("nccl_graph_register", "NCCL_GRAPH_REGISTER=0"),
                             ::testing::Pair("nccl_ub_with_expandable_segments",
                                             "drop --use-nccl-ub (or unset expandable_segments)")));
  // A full-iteration graph runs with full recompute, in either spelling; it
  // captures NCCL calls too, so NCCL_GRAPH_REGISTER=0 is still advised.
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_FULL_ITERATION);
  job.mutable_runtime()->clear_cuda_graph_modules();
  EXPECT_THAT(
      Settings(job, IncompatibilityFixes()),
      ::testing::ElementsAre(::testing::Pair("nccl_graph_register", "NCCL_GRAPH_REGISTER=0"),
                             ::testing::Pair("nccl_ub_with_expandable_segments",
                                             "drop --use-nccl-ub (or unset expandable_segments)")));
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_LOCAL);
  job.mutable_runtime()->add_cuda_graph_modules("full_iteration");
  EXPECT_EQ(Settings(job, IncompatibilityFixes()).count("full_recompute_with_cuda_graphs"), 0u);
  EXPECT_THAT(
      Settings(
          PresetJob("llama3-8b", "--pipeline-model-parallel-size 2 --cpu-offloading-num-layers 4"),
          IncompatibilityFixes()),
      ::testing::ElementsAre(::testing::Pair(
          "cpu_offloading_conflict",
          "drop --cpu-offloading-num-layers (Megatron-Core refuses it with pipeline parallelism "
          "> 1)")));
  EXPECT_THAT(
      Settings(PresetJob("llama3-8b", "--cpu-offloading-num-layers 4 --recompute-activations"),
               IncompatibilityFixes()),
      ::testing::ElementsAre(::testing::Pair(
          "cpu_offloading_conflict",
          "drop --cpu-offloading-num-layers (Megatron-Core refuses it with activation "
          "recompute)")));
}

// `job` with every part present (the parser creates the parts it resolves,
// empty or not).
v1::JobSpec WithEveryPart(v1::JobSpec job) {
  job.mutable_model();
  job.mutable_parallelism();
  job.mutable_training();
  job.mutable_recompute();
  job.mutable_precision();
  job.mutable_runtime();
  return job;
}

// A config change spelled as flags alone, read back by the Megatron-LM
// argument parser over the job, is the change itself.
TEST(RecommendationsTest, ConfigSettingsReadBackAsTheChange) {
  int read_back = 0;
  for (const v1::JobSpec& job : {CrowdedJob(), PlainJob()}) {
    for (const RecommendedChange& change : LadderChanges()) {
      v1::JobSpec changed = job;
      std::optional<std::string> setting = change.Apply(H100(), &changed);
      if (!setting || change.kind != v1::Recommendation::KIND_CONFIG_CHANGE ||
          absl::StrContains(*setting, ", and drop")) {
        continue;
      }
      absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(*setting);
      ASSERT_TRUE(words.ok()) << *setting;
      v1::JobSpec parsed = job;
      ASSERT_TRUE(ApplyMegatronArgs(*words, ArgsMode::kOverrides, &parsed, nullptr).ok())
          << *setting;
      EXPECT_EQ(WithEveryPart(parsed).SerializeAsString(),
                WithEveryPart(changed).SerializeAsString())
          << *setting;
      ++read_back;
    }
  }
  EXPECT_GE(read_back, 12);
}

// A setting is written from its change: every Megatron-LM flag field the
// change set or turned off is named in it (so its text says the whole
// change), and the flag fields it names are the changed job's.
TEST(RecommendationsTest, EverySettingNamesEveryFlagFieldItsChangeSets) {
  std::vector<RecommendedChange> changes = LadderChanges();
  changes.insert(changes.end(), IncompatibilityFixes().begin(), IncompatibilityFixes().end());
  v1::JobSpec full_with_graphs = CrowdedJob();
  full_with_graphs.mutable_runtime()->set_expandable_segments(true);
  full_with_graphs.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  std::set<std::string> applied;
  for (const v1::JobSpec& job :
       {CrowdedJob(), PlainJob(), full_with_graphs,
        PresetJob("qwen3-30b-a3b",
                  "--expert-model-parallel-size 8 --overlap-moe-expert-parallel-comm "
                  "--moe-token-dispatcher-type allgather"),
        PresetJob("moonlight-16b-a3b",
                  "--expert-model-parallel-size 8 --moe-shared-expert-overlap "
                  "--moe-token-dispatcher-type allgather"),
        PresetJob("llama3-70b", "--tp-comm-overlap"),
        PresetJob("llama3-8b", "--pipeline-model-parallel-size 2 --cpu-offloading-num-layers 4")}) {
    for (const RecommendedChange& change : changes) {
      v1::JobSpec changed = job;
      const std::optional<JobChange> made = change.make(H100(), &changed);
      if (!made) continue;
      applied.insert(change.id);
      std::set<std::string> named(made->fields.begin(), made->fields.end());
      for (const JobChange::Dropped& dropped : made->dropped) named.emplace(dropped.field);
      for (const std::string& path : ChangedFlagFields(job, changed)) {
        EXPECT_TRUE(named.count(path) > 0) << change.id << " does not show " << path;
      }
    }
  }
  for (const RecommendedChange& change : changes) {
    EXPECT_TRUE(applied.count(change.id) > 0) << change.id << " applied to none of the jobs";
  }
}

// The change of `id` on `preset` over 32 GPUs with the Megatron-LM argument
// line `args`: its setting (nullopt where it does not apply) and the job it
// makes.
std::pair<std::optional<std::string>, v1::JobSpec> Apply(
    const std::string& id, const std::vector<RecommendedChange>& changes, const std::string& preset,
    const std::string& args) {
  v1::JobSpec job = testing::JobFromArgs(
      absl::StrSplit("--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 " + args, ' ',
                     absl::SkipEmpty()),
      32, preset);
  for (const RecommendedChange& change : changes) {
    if (change.id == id) {
      std::optional<std::string> setting = change.Apply(H100(), &job);
      return {setting, job};
    }
  }
  ADD_FAILURE() << "no change " << id;
  return {std::nullopt, job};
}

// More PP keeps --overlap-moe-expert-parallel-comm only where Megatron-Core
// still accepts it: from PP 1 the new stages have no virtual stages, and
// with a fixed number of layers per virtual stage doubling PP halves them.
TEST(RecommendationsTest, MorePipelineParallelDropsTheExpertParallelOverlapMegatronRefuses) {
  const std::string ep = "--expert-model-parallel-size 8 --overlap-moe-expert-parallel-comm ";
  const std::string dropped =
      ", and drop --overlap-moe-expert-parallel-comm (with pipeline parallelism it needs virtual "
      "pipeline stages (VPP > 1))";
  struct Case {
    std::string args, setting;
    bool keeps_overlap;
  };
  for (const Case& c : std::vector<Case>{
           {"", "--pipeline-model-parallel-size 2" + dropped, false},
           // 48 layers, 12 per virtual stage: PP 2 has VPP 2, PP 4 would have 1.
           {"--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 12",
            "--pipeline-model-parallel-size 4" + dropped, false},
           // Two virtual stages per rank stay two.
           {"--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2",
            "--pipeline-model-parallel-size 4", true},
       }) {
    auto [setting, changed] =
        Apply("more_pipeline_parallel", LadderChanges(), "qwen3-30b-a3b", ep + c.args);
    EXPECT_EQ(setting, c.setting) << c.args;
    EXPECT_EQ(changed.parallelism().overlap_moe_expert_parallel_comm(), c.keeps_overlap) << c.args;
  }
  // Full recompute always drops it, saying why.
  auto [full, recomputed] = Apply("full_recompute", LadderChanges(), "qwen3-30b-a3b", ep);
  EXPECT_EQ(full,
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1, "
            "and drop --overlap-moe-expert-parallel-comm (it cannot run with full recompute)");
  EXPECT_FALSE(recomputed.parallelism().overlap_moe_expert_parallel_comm());
}

// --moe-shared-expert-overlap where Megatron-Core refuses it
// (estimator/shared_expert_overlap.h): the job will not start.
TEST(RecommendationsTest, SharedExpertOverlapConflict) {
  const std::vector<RecommendedChange>& fixes = IncompatibilityFixes();
  auto [allgather, fixed] = Apply("shared_expert_overlap_conflict", fixes, "moonlight-16b-a3b",
                                  "--expert-model-parallel-size 8 --moe-shared-expert-overlap "
                                  "--moe-token-dispatcher-type allgather");
  EXPECT_EQ(allgather,
            "drop --moe-shared-expert-overlap (it needs the alltoall or flex token dispatcher)");
  EXPECT_FALSE(fixed.parallelism().moe_shared_expert_overlap());
  auto [recompute, unused] =
      Apply("shared_expert_overlap_conflict", fixes, "moonlight-16b-a3b",
            "--expert-model-parallel-size 8 --moe-shared-expert-overlap "
            "--recompute-granularity selective --recompute-modules shared_experts");
  EXPECT_EQ(recompute,
            "drop --moe-shared-expert-overlap (it cannot run with the shared_experts module "
            "recomputed)");
  // Accepted on the alltoall dispatcher.
  EXPECT_EQ(Apply("shared_expert_overlap_conflict", fixes, "moonlight-16b-a3b",
                  "--expert-model-parallel-size 8 --moe-shared-expert-overlap "
                  "--moe-token-dispatcher-type alltoall")
                .first,
            std::nullopt);
}

// --tp-comm-overlap needs sequence parallelism (estimator/tp_comm_overlap.h):
// with TP > 1 the fix turns it on, at TP 1 it drops the flag.
TEST(RecommendationsTest, TpCommOverlapWithoutSequenceParallel) {
  const std::vector<RecommendedChange>& fixes = IncompatibilityFixes();
  const std::string id = "tp_comm_overlap_without_sequence_parallel";
  auto [tp4, with_sp] =
      Apply(id, fixes, "llama3-70b", "--tensor-model-parallel-size 4 --tp-comm-overlap");
  EXPECT_EQ(tp4, "--sequence-parallel");
  EXPECT_TRUE(with_sp.parallelism().sequence_parallel());
  EXPECT_TRUE(with_sp.parallelism().tp_comm_overlap());
  auto [tp1, dropped] = Apply(id, fixes, "llama3-70b", "--tp-comm-overlap");
  EXPECT_EQ(tp1,
            "drop --tp-comm-overlap (it needs sequence parallelism: TP > 1 and "
            "--sequence-parallel)");
  EXPECT_FALSE(dropped.parallelism().tp_comm_overlap());
  EXPECT_EQ(Apply(id, fixes, "llama3-70b",
                  "--tensor-model-parallel-size 4 --sequence-parallel --tp-comm-overlap")
                .first,
            std::nullopt);
}

}  // namespace
}  // namespace oomguard
