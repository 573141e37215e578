// Tests of the RL ladder's Megatron-Core changes of the actor (or critic)
// with the real readers and the real step estimator: the shipped examples
// (examples/rl/), each change's setting in the framework's own keys
// (admission/rl_megatron_setting.h), and its saving re-estimated as
// EstimateRlStep of the changed job.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "admission/recommendations.h"
#include "admission/rl_admission.h"
#include "admission/rl_megatron_setting.h"
#include "estimator/rl_step.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/rl_job_builder.h"
#include "tests/jobspec/rl_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::testing::ReadRlExample;
using ::oomguard::testing::RlArgvJob;
using ::oomguard::testing::RlYamlJob;
using ::testing::HasSubstr;

v1::RlJobSpec Built(const v1::RlJob& job) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(job, &notes);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::RlJobSpec();
}
v1::RlJobSpec VerlExample() { return Built(RlYamlJob(ReadRlExample("verl_qwen3_30b_a3b.yaml"))); }
v1::RlJobSpec NemoRlExample() {
  return Built(RlYamlJob(ReadRlExample("nemo_rl_grpo_megatron.yaml")));
}
v1::RlJobSpec SlimeExample() { return Built(RlArgvJob(ReadRlExample("slime_qwen3_30b_a3b.args"))); }

v1::GpuSpec H100() {
  absl::StatusOr<v1::GpuSpec> gpu = GpuCatalog::Builtin().Find("H100-SXM-80GB");
  EXPECT_TRUE(gpu.ok()) << gpu.status();
  return gpu.ok() ? *gpu : v1::GpuSpec();
}

// The ladder's change `id` (recommendations.h).
const RecommendedChange& LadderChange(const std::string& id) {
  for (const LadderRung& rung : RecommendationLadder()) {
    for (const RecommendedChange& change : rung) {
      if (change.id == id) return change;
    }
  }
  ADD_FAILURE() << "no ladder change " << id;
  return RecommendationLadder().front().front();
}

// The setting of ladder change `id` made in `job` (the actor's or critic's
// JobSpec) in `framework`'s keys; nullopt when it does not apply or has no
// key.
std::optional<std::string> Setting(v1::RlFramework framework, RlTrainer trainer, v1::JobSpec job,
                                   const std::string& id) {
  const std::optional<JobChange> change = LadderChange(id).make(H100(), &job);
  if (!change) return std::nullopt;
  return RlMegatronSetting(framework, trainer, job, *change);
}

// The compared peak (largest upper bound of any phase's rank) of `job`'s
// step on the H100.
uint64_t ComparedPeak(const v1::RlJobSpec& job) {
  RlStepOptions options;
  options.gpu_memory_bytes = H100().memory_bytes();
  options.gpu_name = H100().name();
  absl::StatusOr<v1::RlStepReport> step = EstimateRlStep(RlJobOnGpu(job, H100()), options);
  EXPECT_TRUE(step.ok()) << step.status();
  uint64_t peak = 0;
  if (!step.ok()) return peak;
  for (const v1::RlPhaseReport& phase : step->phases()) {
    EXPECT_EQ(phase.failure(), "") << phase.phase();
    for (const v1::RlPhaseRank& rank : phase.ranks()) {
      peak = std::max(peak, rank.peak_device_upper_bytes());
    }
  }
  return peak;
}

// veRL: the Megatron block's and the optimizer block's keys, as
// rl_verl_config.cc reads them, with Hydra's values.
TEST(RlMegatronLadderTest, VerlSettingsInItsKeys) {
  const v1::RlJobSpec job = VerlExample();
  ASSERT_EQ(job.actor().parallelism().tensor_model_parallel_size(), 2u);
  constexpr auto kVerl = v1::RL_FRAMEWORK_VERL;
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, job.actor(), "full_recompute"),
            "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity="
            "full actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method="
            "uniform "
            "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1");
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, job.actor(), "more_pipeline_parallel"),
            "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2");
  // Sequence parallelism is already on: the TP key alone.
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, job.actor(), "more_tensor_parallel"),
            "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4");
  EXPECT_EQ(
      Setting(kVerl, RlTrainer::kActor, job.actor(), "optimizer_cpu_offload"),
      "actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=true "
      "actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=1.0 "
      "actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_"
      "optimizer=true");
  // The example recomputes moe_act and layernorm already.
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, job.actor(), "recompute_moe_act"), std::nullopt);
  // A selective module added: the list in Hydra's syntax.
  v1::JobSpec plain = job.actor();
  plain.clear_recompute();
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, plain, "recompute_layernorm"),
            "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity="
            "selective "
            "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules=["
            "layernorm]");
  // The critic's blocks.
  EXPECT_EQ(Setting(kVerl, RlTrainer::kCritic, job.actor(), "more_pipeline_parallel"),
            "critic.megatron.pipeline_model_parallel_size=2");
  // Activation offload has no veRL key.
  v1::JobSpec offloadable = plain;
  EXPECT_EQ(Setting(kVerl, RlTrainer::kActor, offloadable, "activation_cpu_offload"), std::nullopt);
}

// NeMo-RL: policy.megatron_cfg.*, recompute under activation_checkpointing
// with full recompute's method and layers implied (rl_nemo_rl_config.cc).
TEST(RlMegatronLadderTest, NemoRlSettingsInItsKeys) {
  const v1::RlJobSpec job = NemoRlExample();
  constexpr auto kNemo = v1::RL_FRAMEWORK_NEMO_RL;
  v1::JobSpec actor = job.actor();
  actor.clear_recompute();
  EXPECT_EQ(Setting(kNemo, RlTrainer::kActor, actor, "full_recompute"),
            "policy.megatron_cfg.activation_checkpointing=true "
            "policy.megatron_cfg.recompute_granularity=full");
  EXPECT_EQ(Setting(kNemo, RlTrainer::kActor, actor, "recompute_layernorm"),
            "policy.megatron_cfg.activation_checkpointing=true "
            "policy.megatron_cfg.recompute_granularity=selective "
            "policy.megatron_cfg.recompute_modules=[layernorm]");
  EXPECT_EQ(Setting(kNemo, RlTrainer::kActor, actor, "more_pipeline_parallel"),
            absl::StrCat("policy.megatron_cfg.pipeline_model_parallel_size=",
                         2 * std::max(actor.parallelism().pipeline_model_parallel_size(), 1u)));
  // Full recompute other than uniform over one layer has no NeMo-RL key.
  v1::JobSpec block = actor;
  ASSERT_TRUE(LadderChange("full_recompute").make(H100(), &block));
  block.mutable_recompute()->set_method(v1::RECOMPUTE_METHOD_BLOCK);
  EXPECT_EQ(RlMegatronSetting(kNemo, RlTrainer::kActor, block,
                              {.fields = {"recompute.granularity", "recompute.method"}}),
            std::nullopt);
  // GRPO has no critic.
  EXPECT_EQ(Setting(kNemo, RlTrainer::kCritic, actor, "more_pipeline_parallel"), std::nullopt);
}

// slime: Megatron-LM's flags, as the pretraining ladder writes them.
TEST(RlMegatronLadderTest, SlimeSettingsAreMegatronFlags) {
  const v1::RlJobSpec job = SlimeExample();
  constexpr auto kSlime = v1::RL_FRAMEWORK_SLIME;
  EXPECT_EQ(Setting(kSlime, RlTrainer::kActor, job.actor(), "more_pipeline_parallel"),
            "--pipeline-model-parallel-size 2");
  EXPECT_EQ(Setting(kSlime, RlTrainer::kActor, job.actor(), "more_tensor_parallel"),
            "--tensor-model-parallel-size 4");
  // The example recomputes full layers already.
  EXPECT_EQ(Setting(kSlime, RlTrainer::kActor, job.actor(), "full_recompute"), std::nullopt);
}

// The shipped veRL example on 32 H100s: generation cannot start at 0.5;
// the engine at 0.4 lets it run, and the actor update then binds at
// 83.4 GiB. The engine's TP 8 saves less than 1 % of that (its runtime
// asleep), so it is not recommended; the actor's PP 2 (the pretraining
// ladder's next rung that applies: moe_act and layernorm are recomputed
// already) makes it fit. Each step's peak after is EstimateRlStep of the job
// with the changes so far.
TEST(RlMegatronLadderTest, VerlExampleFitsWithTheActorsPipelineParallel) {
  const v1::RlJobSpec job = VerlExample();
  absl::StatusOr<v1::CheckResponse> r = CheckRlJob(job, H100(), AdmissionOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  ASSERT_EQ(r->recommendations_size(), 2);
  EXPECT_EQ(r->recommendations(0).setting(),
            "actor_rollout_ref.rollout.gpu_memory_utilization=0.4");
  const v1::Recommendation& pp = r->recommendations(1);
  EXPECT_EQ(pp.id(), "more_pipeline_parallel");
  EXPECT_EQ(pp.kind(), v1::Recommendation::KIND_CONFIG_CHANGE);
  EXPECT_EQ(pp.setting(), "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2");
  EXPECT_TRUE(pp.sufficient());

  v1::RlJobSpec changed = job;
  changed.mutable_rollout()->set_memory_fraction(0.4);
  const uint64_t before = ComparedPeak(changed);
  EXPECT_EQ(r->recommendations(0).peak_device_bytes_after(), before);
  changed.mutable_actor()->mutable_parallelism()->set_pipeline_model_parallel_size(2);
  const uint64_t after = ComparedPeak(changed);
  EXPECT_EQ(pp.peak_device_bytes_after(), after);
  EXPECT_EQ(pp.saved_bytes(), static_cast<int64_t>(before) - static_cast<int64_t>(after));
  EXPECT_LE(after, r->usable_bytes());
  EXPECT_THAT(r->summary(),
              HasSubstr("it fits once the recommendations up to "
                        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 are "
                        "applied"));
}

}  // namespace
}  // namespace oomguard
