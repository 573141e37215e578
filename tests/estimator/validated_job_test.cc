// ValidateJob: Megatron-LM's defaults resolved into the sections of a
// ValidatedJob, and errors naming the JobSpec field and value.
#include "estimator/validated_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

// A 4-layer SwiGLU model with only the required fields set, on 16 GPUs.
v1::JobSpec MinimalJob() {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(4);
  m->set_hidden_size(1024);
  m->set_num_attention_heads(16);
  m->set_vocab_size(50257);
  m->set_activation(v1::ACTIVATION_SWIGLU);
  job.mutable_parallelism()->set_num_gpus(16);
  job.mutable_parallelism()->set_tensor_model_parallel_size(2);
  job.mutable_parallelism()->set_pipeline_model_parallel_size(2);
  job.mutable_training()->set_micro_batch_size(2);
  job.mutable_training()->set_seq_length(2048);
  return job;
}

// The message of ValidateJob's refusal of `job` (a failure when accepted).
std::string ValidateError(const v1::JobSpec& job) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(j.status().message());
}

TEST(ValidateJob, ResolvesMegatronDefaults) {
  std::vector<std::string> notes;
  absl::StatusOr<ValidatedJob> j = ValidateJob(MinimalJob(), &notes);
  ASSERT_TRUE(j.ok()) << j.status();
  // SwiGLU: int(8h/3 / 64) * 64; MHA; d = h / heads; dropout 0.1.
  EXPECT_EQ(j->model.ffn, 2688);
  EXPECT_EQ(j->model.query_groups, 16);
  EXPECT_EQ(j->model.head_dim, 64);
  EXPECT_DOUBLE_EQ(j->model.hidden_dropout, 0.1);
  // Learned positions by default, as long as the sequence.
  EXPECT_TRUE(j->model.learned_positions);
  EXPECT_EQ(j->model.max_positions, 2048);
  // Padded to a multiple of 128 x TP 2.
  EXPECT_EQ(j->model.padded_vocab, 50432);
  EXPECT_FALSE(j->mla.enabled);
  EXPECT_FALSE(j->is_moe_model());
  EXPECT_EQ(j->moe.is_moe_layer, std::vector<bool>(4, false));

  EXPECT_EQ(j->parallelism.dp, 4);
  EXPECT_EQ(j->parallelism.edp, 4);  // 16 / (PP 2 x EP 1 x ETP = TP 2).
  EXPECT_EQ(j->parallelism.etp, 2);
  EXPECT_EQ(j->parallelism.vpp, 1);
  EXPECT_EQ(j->parallelism.group_size, 2);  // = PP.
  ASSERT_EQ(j->stages.size(), 2u);
  EXPECT_EQ(j->stages[1].first_layer, 2);
  EXPECT_EQ(j->stages[1].num_dense_layers, 2);

  // Global batch defaults to micro-batch x DP: one micro-batch per step.
  EXPECT_EQ(j->training.global_batch, 8);
  EXPECT_EQ(j->training.num_microbatches, 1);
  EXPECT_TRUE(j->training.transformer_engine);
  EXPECT_TRUE(j->training.flash_attention);

  EXPECT_EQ(j->recompute.granularity, v1::RECOMPUTE_GRANULARITY_NONE);
  EXPECT_FALSE(j->recompute.HasModule(v1::RECOMPUTE_MODULE_CORE_ATTN));

  // bf16 weights, fp32 main gradients, master weights and two Adam moments.
  EXPECT_EQ(j->precision.param_bytes, 2);
  EXPECT_EQ(j->precision.grad_bytes, 4);
  EXPECT_EQ(j->precision.master_bytes, 4);
  EXPECT_EQ(j->precision.moment_bytes, 8);
  EXPECT_EQ(j->precision.adam_moment_bytes, 8);
  EXPECT_EQ(j->precision.optimizer_instances, 1);

  EXPECT_EQ(j->runtime.gpus_per_node, 8);
}

// The optimizer's state per element (issue 26): hand-derived from
// Megatron-Core's distributed optimizer, Transformer Engine's FusedAdam and
// HybridDeviceOptimizer (validated_job.cc ResolveOptimizerState).
struct OptimizerBytes {
  double master, moments, host_extra, step_copy, offload;
};

OptimizerBytes OptimizerStateOf(const v1::JobSpec& job) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  if (!j.ok()) return {};
  const PrecisionSettings& p = j->precision;
  return {p.master_bytes, p.moment_bytes, p.offloaded_host_extra_bytes, p.step_grad_copy_bytes,
          p.offload_fraction};
}

v1::JobSpec AwareJob() {
  v1::JobSpec job = MinimalJob();
  job.mutable_precision()->set_use_distributed_optimizer(true);
  job.mutable_precision()->set_use_precision_aware_optimizer(true);
  return job;
}

TEST(ValidateJob, PrecisionAwareOptimizerStateDtypes) {
  // Defaults: FusedAdam keeps the fp32 master of a bf16 weight as its 16
  // low bits (store_param_remainders, TE >= 2.1) and two fp32 moments; the
  // step reads the bf16 or fp32 gradient buffer as it is (decoupled_grad).
  v1::JobSpec job = AwareJob();
  job.mutable_precision()->set_main_grads_dtype(v1::DTYPE_BF16);
  OptimizerBytes b = OptimizerStateOf(job);
  EXPECT_EQ(b.master, 2);
  EXPECT_EQ(b.moments, 8);
  EXPECT_EQ(b.step_copy, 0);
  // Before TE 2.1 the whole fp32 master.
  job.mutable_runtime()->set_transformer_engine_version("2.0");
  EXPECT_EQ(OptimizerStateOf(job).master, 4);
  // --main-params-dtype fp16 --exp-avg-dtype bf16 --exp-avg-sq-dtype fp8:
  // 2 + 2 + 1.
  job = AwareJob();
  job.mutable_precision()->set_main_params_dtype(v1::DTYPE_FP16);
  job.mutable_precision()->set_exp_avg_dtype(v1::DTYPE_BF16);
  job.mutable_precision()->set_exp_avg_sq_dtype(v1::DTYPE_FP8);
  b = OptimizerStateOf(job);
  EXPECT_EQ(b.master, 2);
  EXPECT_EQ(b.moments, 3);
  // An fp32 master with a recipe other than delayed: Megatron-Core's own fp32
  // main copy (use_precision_aware_optimizer_no_fp8_or_ds_fp8 is false), the
  // moments still in their dtypes, and the fp32 copy of a bf16 gradient.
  job = AwareJob();
  job.mutable_precision()->set_fp8_recipe(v1::PrecisionSpec::FP8_RECIPE_TENSORWISE);
  job.mutable_precision()->set_exp_avg_dtype(v1::DTYPE_BF16);
  job.mutable_precision()->set_main_grads_dtype(v1::DTYPE_BF16);
  b = OptimizerStateOf(job);
  EXPECT_EQ(b.master, 4);
  EXPECT_EQ(b.moments, 6);
  EXPECT_EQ(b.step_copy, 4);
  // Without it: fp32 master, fp32 moments, and the gradient's fp32 copy
  // only when the buffer is 16-bit.
  job = MinimalJob();
  b = OptimizerStateOf(job);
  EXPECT_EQ(b.master, 4);
  EXPECT_EQ(b.moments, 8);
  EXPECT_EQ(b.step_copy, 0);
  job.mutable_precision()->set_main_grads_dtype(v1::DTYPE_BF16);
  EXPECT_EQ(OptimizerStateOf(job).step_copy, 4);
  // fp32 state dtypes are Megatron's defaults, accepted without it.
  job.mutable_precision()->set_exp_avg_dtype(v1::DTYPE_FP32);
  EXPECT_EQ(OptimizerStateOf(job).moments, 8);
}

TEST(ValidateJob, OptimizerCpuOffloadState) {
  // HybridDeviceOptimizer: an fp32 copy of every bf16 shard (on the host for
  // the offloaded fraction), fp32 moments whatever the state dtypes, a pinned
  // fp32 gradient copy per offloaded element, grad.to(fp32) for the others.
  v1::JobSpec job = AwareJob();
  job.mutable_precision()->set_optimizer_cpu_offload(true);
  job.mutable_precision()->set_exp_avg_dtype(v1::DTYPE_BF16);
  job.mutable_precision()->set_main_grads_dtype(v1::DTYPE_BF16);
  OptimizerBytes b = OptimizerStateOf(job);
  EXPECT_EQ(b.offload, 1.0);
  EXPECT_EQ(b.master, 4);
  EXPECT_EQ(b.moments, 8);
  EXPECT_EQ(b.host_extra, 4);
  EXPECT_EQ(b.step_copy, 4);
  // fp32 weights: no copy on the GPU; the host holds the weight's own copy
  // beside the gradient's.
  job.mutable_precision()->set_params_dtype(v1::DTYPE_FP32);
  job.mutable_precision()->set_optimizer_offload_fraction(0.25);
  b = OptimizerStateOf(job);
  EXPECT_EQ(b.offload, 0.25);
  EXPECT_EQ(b.master, 0);
  EXPECT_EQ(b.host_extra, 8);
  EXPECT_EQ(b.step_copy, 0);
}

TEST(ValidateJob, PrecisionAwareOptimizerRefusals) {
  v1::JobSpec job = AwareJob();
  job.mutable_precision()->set_use_distributed_optimizer(false);
  EXPECT_THAT(ValidateError(job), ::testing::HasSubstr("use_distributed_optimizer"));
  job = AwareJob();
  job.mutable_precision()->set_optimizer(v1::OPTIMIZER_SGD);
  EXPECT_THAT(ValidateError(job), ::testing::HasSubstr("Adam only"));
  job = AwareJob();
  job.mutable_precision()->set_main_params_dtype(v1::DTYPE_BF16);
  EXPECT_THAT(ValidateError(job), ::testing::HasSubstr("precision.main_params_dtype = DTYPE_BF16"));
  job = MinimalJob();
  job.mutable_precision()->set_exp_avg_dtype(v1::DTYPE_BF16);
  EXPECT_THAT(ValidateError(job), ::testing::HasSubstr("use_precision_aware_optimizer"));
  // validate_args: --optimizer-cpu-offload only with the precision-aware
  // optimizer.
  job = AwareJob();
  job.mutable_precision()->set_optimizer_cpu_offload(true);
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());
  job.mutable_precision()->set_use_precision_aware_optimizer(false);
  EXPECT_EQ(
      ValidateError(job),
      "precision.optimizer_cpu_offload = true: needs precision.use_precision_aware_optimizer "
      "(Megatron-LM refuses --optimizer-cpu-offload without --use-precision-aware-optimizer)");
  // ... and with --fp8-param-gather, the delayed recipe only.
  job = AwareJob();
  job.mutable_precision()->set_optimizer_cpu_offload(true);
  job.mutable_precision()->set_fp8_param_gather(true);
  job.mutable_precision()->set_fp8_recipe(v1::PrecisionSpec::FP8_RECIPE_DELAYED);
  EXPECT_TRUE(ValidateJob(job, nullptr).ok()) << ValidateJob(job, nullptr).status();
  job.mutable_precision()->set_fp8_recipe(v1::PrecisionSpec::FP8_RECIPE_TENSORWISE);
  EXPECT_THAT(ValidateError(job),
              ::testing::StartsWith("precision.fp8_recipe = FP8_RECIPE_TENSORWISE: must be "
                                    "FP8_RECIPE_DELAYED (--fp8-recipe delayed) with "
                                    "precision.optimizer_cpu_offload"));
}

TEST(ValidateJob, SelectiveRecomputeDefaultsToCoreAttention) {
  v1::JobSpec job = MinimalJob();
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_TRUE(j->recompute.HasModule(v1::RECOMPUTE_MODULE_CORE_ATTN));
  EXPECT_FALSE(j->recompute.HasModule(v1::RECOMPUTE_MODULE_MLP));
}

// Issue 12: proto3 enums are open, so `activation = 999` arrived over gRPC
// and was accepted; every enum value must be one the .proto declares.
TEST(ValidateJob, UnknownEnumValuesAreRefusedByPath) {
  v1::JobSpec job = MinimalJob();
  ASSERT_TRUE(ValidateJob(job, nullptr).ok());
  job.mutable_model()->set_activation(static_cast<v1::Activation>(999));
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().message(), "model.activation = 999: not a value of oomguard.v1.Activation");

  job = MinimalJob();
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  job.mutable_recompute()->add_modules(v1::RECOMPUTE_MODULE_CORE_ATTN);
  job.mutable_recompute()->add_modules(static_cast<v1::RecomputeModule>(-3));
  j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().message(),
            "recompute.modules[1] = -3: not a value of oomguard.v1.RecomputeModule");
}

TEST(ValidateJob, MoeRouterTopkMustBeWithinTheExperts) {
  v1::JobSpec job = MinimalJob();
  job.mutable_model()->set_num_experts(8);
  job.mutable_parallelism()->set_sequence_parallel(true);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->moe.topk, 2);  // Megatron-LM's default.
  EXPECT_EQ(j->moe.is_moe_layer, std::vector<bool>(4, true));

  for (uint32_t topk : {0u, 9u}) {
    job.mutable_model()->set_moe_router_topk(topk);
    j = ValidateJob(job, nullptr);
    EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(j.status().message(), absl::StrCat("model.moe_router_topk = ", topk,
                                                 ": must be in [1, model.num_experts = 8]"));
  }
}

TEST(ValidateJob, SequenceParallelAtTpOneIsDroppedWithANote) {
  v1::JobSpec job = MinimalJob();
  job.mutable_parallelism()->set_tensor_model_parallel_size(1);
  job.mutable_parallelism()->set_sequence_parallel(true);
  std::vector<std::string> notes;
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, &notes);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_FALSE(j->parallelism.sp);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("sequence_parallel has no effect at TP=1"), std::string::npos);
}

// Each parallel size may be up to 2^22: the product of three of them once
// overflowed int64 (2^66) before the divisibility check.
// Found by fuzz/estimator_fuzzer: empty middle and last pipeline ranks let any
// number of virtual stages divide their layers, and PP x VPP = 2^38 stages
// were allocated before anything refused them. A report holds a rank per PP
// rank and a chunk per virtual stage, so both are bounded by
// kMaxVirtualStages (1024); issue 12 found PP 46656 taking 1.9 s and 48 MB.
TEST(ValidateJob, VirtualStagesAreBounded) {
  v1::JobSpec job = MinimalJob();
  job.mutable_model()->set_num_layers(65536);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_num_gpus(uint32_t{1} << 22);
  p->set_tensor_model_parallel_size(1);
  p->set_pipeline_model_parallel_size(uint32_t{1} << 22);
  p->set_decoder_first_pipeline_num_layers(65536);
  p->set_num_virtual_stages_per_pipeline_rank(65536);
  EXPECT_EQ(ValidateError(job),
            "parallelism.pipeline_model_parallel_size = 4194304: is absurdly large (limit 1024 "
            "pipeline stages)");

  p->set_num_gpus(1024);
  p->set_pipeline_model_parallel_size(1024);
  p->clear_decoder_first_pipeline_num_layers();
  p->clear_num_virtual_stages_per_pipeline_rank();
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());
  p->set_num_gpus(1025);
  p->set_pipeline_model_parallel_size(1025);
  EXPECT_EQ(ValidateError(job),
            "parallelism.pipeline_model_parallel_size = 1025: is absurdly large (limit 1024 "
            "pipeline stages)");

  p->set_num_gpus(64);
  p->set_pipeline_model_parallel_size(64);
  p->set_num_virtual_stages_per_pipeline_rank(32);
  EXPECT_EQ(ValidateError(job),
            "parallelism.num_virtual_stages_per_pipeline_rank = 32: times "
            "pipeline_model_parallel_size 64 is absurdly large (limit 1024 virtual stages)");
  p->set_num_virtual_stages_per_pipeline_rank(16);
  // 64 micro-batches: one whole group of PP (interleaved_schedule_rules.h).
  job.mutable_training()->set_global_batch_size(128);
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());

  // A layout's stages are counted once placed: 1025 stages on PP 1.
  job.mutable_model()->set_num_layers(1023);
  p->set_num_gpus(1);
  p->set_pipeline_model_parallel_size(1);
  p->clear_num_virtual_stages_per_pipeline_rank();
  p->set_pipeline_model_parallel_layout("E|(t|)*1023L");
  EXPECT_THAT(ValidateError(job), ::testing::EndsWith(": has 1025 virtual stages (limit 1024)"));
}

// Megatron-Core's interleaved schedule refuses groups of g micro-batches
// (default PP) below PP, more than the micro-batches per iteration n, or a
// last group 0 < n mod g < PP (forward_backward_pipelining_with_interleaving;
// interleaved_schedule_rules.h). 16 GPUs, TP 2, PP 4, VPP 2: DP 2; with
// micro-batch 2, n = global batch / 4.
TEST(ValidateJob, InterleavedScheduleRefusesMicroBatchGroupsMegatronRefuses) {
  v1::JobSpec job = MinimalJob();
  job.mutable_model()->set_num_layers(8);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_pipeline_model_parallel_size(4);
  p->set_num_virtual_stages_per_pipeline_rank(2);
  v1::TrainingSpec* t = job.mutable_training();
  t->set_global_batch_size(32);  // n = 8: two whole groups of 4.
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());

  p->set_microbatch_group_size_per_vp_stage(3);
  EXPECT_EQ(ValidateError(job),
            "parallelism.microbatch_group_size_per_vp_stage = 3: Megatron-Core's interleaved "
            "schedule refuses micro-batch groups below PP 4: "
            "--microbatch-group-size-per-virtual-pipeline-stage 3 < --pipeline-model-parallel-size "
            "4 (it raises at the first step, with 2 virtual stages per pipeline rank)");

  p->clear_microbatch_group_size_per_vp_stage();
  t->set_global_batch_size(12);  // n = 3 < g = PP = 4.
  EXPECT_EQ(ValidateError(job),
            "training.global_batch_size = 12: Megatron-Core's interleaved schedule refuses fewer "
            "micro-batches (3) than a group (4): 3 micro-batches per iteration "
            "(--global-batch-size 12 / (--micro-batch-size 2 x data-parallel size 2)), fewer than "
            "groups of 4 (--microbatch-group-size-per-virtual-pipeline-stage, default PP) (it "
            "raises at the first step, with 2 virtual stages per pipeline rank)");

  p->set_microbatch_group_size_per_vp_stage(5);
  t->set_global_batch_size(32);  // n = 8: a group of 5, then 3 < PP.
  EXPECT_EQ(ValidateError(job),
            "training.global_batch_size = 32: Megatron-Core's interleaved schedule refuses a last "
            "micro-batch group of 3 < PP 4: 8 micro-batches per iteration (--global-batch-size 32 "
            "/ (--micro-batch-size 2 x data-parallel size 2)) in groups of 5 "
            "(--microbatch-group-size-per-virtual-pipeline-stage) leave 3 over, fewer than "
            "--pipeline-model-parallel-size 4 (it raises at the first step, with 2 virtual stages "
            "per pipeline rank); make the micro-batches a multiple of 5 or leave at least 4 over");

  t->set_global_batch_size(36);  // n = 9: a group of 5, then 4 = PP.
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());
  // Without virtual stages the plain 1F1B schedule takes any n.
  p->clear_num_virtual_stages_per_pipeline_rank();
  t->set_global_batch_size(12);
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());
}

TEST(ValidateJob, ParallelSizeProductsNeverOverflow) {
  constexpr uint32_t kBig = 1u << 22;
  v1::JobSpec job = MinimalJob();
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_num_gpus(kBig);
  p->set_tensor_model_parallel_size(kBig);
  p->set_pipeline_model_parallel_size(kBig);
  p->set_context_parallel_size(kBig);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().message(),
            "parallelism.num_gpus = 4194304: not divisible by TP x PP x CP = 4194304 x 4194304 x "
            "4194304 (W/PP = TP*CP*DP)");

  p->set_tensor_model_parallel_size(1);
  p->set_context_parallel_size(1);
  p->set_expert_model_parallel_size(kBig);
  p->set_expert_tensor_parallel_size(kBig);
  j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().message(),
            "parallelism.num_gpus = 4194304: not divisible by PP x EP x ETP = 4194304 x 4194304 x "
            "4194304 (W/PP = EP*ETP*EDP)");

  // Within num_gpus, the message still gives the product.
  p->set_num_gpus(8);
  p->set_pipeline_model_parallel_size(3);
  j = ValidateJob(job, nullptr);
  EXPECT_EQ(j.status().message(),
            "parallelism.num_gpus = 8: not divisible by TP x PP x CP = 1 x 3 x 1 = 3 (W/PP = "
            "TP*CP*DP)");
}

TEST(ValidateJob, SoftwareVersions) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(MinimalJob(), nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  // Defaults: the newest releases modelled; fusion on, as in Megatron-LM.
  EXPECT_EQ(j->runtime.megatron_core, (SoftwareVersion{0, 20}));
  EXPECT_EQ(j->runtime.transformer_engine, (SoftwareVersion{2, 18}));
  EXPECT_TRUE(j->runtime.gradient_accumulation_fusion);

  v1::JobSpec job = MinimalJob();
  job.mutable_runtime()->set_megatron_core_version("0.14.0rc7");
  job.mutable_runtime()->set_transformer_engine_version("2.3");
  job.mutable_runtime()->set_gradient_accumulation_fusion(false);
  j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->runtime.megatron_core, (SoftwareVersion{0, 14}));
  EXPECT_EQ(j->runtime.transformer_engine, (SoftwareVersion{2, 3}));
  EXPECT_FALSE(j->runtime.gradient_accumulation_fusion);
}

TEST(ValidateJob, BadSoftwareVersionsNameTheFieldAndValue) {
  struct Case {
    bool core;  // megatron_core_version, else transformer_engine_version.
    const char* value;
  };
  for (const Case& c :
       {Case{true, "0.11"}, Case{true, "latest"}, Case{true, "0"}, Case{true, "0.x"},
        Case{true, "0.21beta"}, Case{false, "1.13"}, Case{false, "2.19"}, Case{false, "2"},
        Case{false, "-2.4"}, Case{false, "2.4beta"}}) {
    v1::JobSpec job = MinimalJob();
    const std::string field =
        c.core ? "runtime.megatron_core_version" : "runtime.transformer_engine_version";
    if (c.core) {
      job.mutable_runtime()->set_megatron_core_version(c.value);
    } else {
      job.mutable_runtime()->set_transformer_engine_version(c.value);
    }
    absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
    ASSERT_FALSE(j.ok()) << c.value;
    EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument) << c.value;
    EXPECT_NE(j.status().message().find(field), std::string::npos) << j.status();
    EXPECT_NE(j.status().message().find(absl::StrCat("\"", c.value, "\"")), std::string::npos)
        << j.status();
  }
}

// A Megatron-Core newer than the supported 0.20 is estimated as
// 0.20, with a note naming the field, the value and the supported version;
// the supported one itself has no note.
TEST(ValidateJob, NewerMegatronCoreIsEstimatedAsTheNewestWithANote) {
  for (const char* newer : {"0.21", "0.21.0rc1", "1.0"}) {
    v1::JobSpec job = MinimalJob();
    job.mutable_runtime()->set_megatron_core_version(newer);
    std::vector<std::string> notes;
    absl::StatusOr<ValidatedJob> j = ValidateJob(job, &notes);
    ASSERT_TRUE(j.ok()) << newer << ": " << j.status();
    EXPECT_EQ(j->runtime.megatron_core, (SoftwareVersion{0, 20})) << newer;
    EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(absl::StrCat(
                           "runtime.megatron_core_version = \"", newer,
                           "\": newer than Megatron-Core 0.20.0, the newest oomguard supports"))));
  }
  v1::JobSpec job = MinimalJob();
  job.mutable_runtime()->set_megatron_core_version("0.20.0");
  std::vector<std::string> notes;
  ASSERT_TRUE(ValidateJob(job, &notes).ok());
  EXPECT_THAT(notes, ::testing::Not(::testing::Contains(::testing::HasSubstr("newer than"))));
}

// The MoE communication settings Megatron-LM (TransformerConfig.__post_init__,
// validate_args), DeepEP and HybridEP refuse: INVALID_ARGUMENT naming the
// field and value; the paged stash and the ncclep backend, which oomguard
// does not model, UNIMPLEMENTED naming the flag. The small MoE model: 64
// experts, EP 8 on 8 GPUs unless the case says otherwise.
TEST(ValidateJob, ExpertParallelCommunicationRefusals) {
  struct Case {
    std::vector<std::string> extra;
    uint32_t gpus;
    absl::StatusCode code;
    std::string message;
  };
  const std::string flex = "--moe-token-dispatcher-type=flex";
  const std::vector<Case> cases = {
      {{"--moe-enable-deepep"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_enable_deepep = true: Megatron-Core runs DeepEP only in the flex token "
       "dispatcher"},
      {{flex, "--moe-enable-deepep", "--moe-flex-dispatcher-backend", "hybridep"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_enable_deepep = true: Megatron-Core takes one flex dispatcher backend"},
      {{flex, "--moe-expert-capacity-factor", "1.0", "--moe-pad-expert-input-to-capacity"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_pad_expert_input_to_capacity = true: Megatron-Core's flex dispatcher with the "
       "deepep backend does not support it"},
      {{flex, "--moe-flex-dispatcher-num-sms", "21"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_flex_dispatcher_num_sms = 21: DeepEP needs an even SM count"},
      {{flex, "--expert-model-parallel-size", "12", "--num-experts", "48"},
       24,
       absl::StatusCode::kInvalidArgument,
       "parallelism.expert_model_parallel_size = 12: DeepEP runs on EP x ETP = 2, 4, 8"},
      {{flex, "--expert-model-parallel-size", "1"},
       8,
       absl::StatusCode::kInvalidArgument,
       "parallelism.expert_model_parallel_size = 1: DeepEP runs on"},
      {{"--moe-expert-rank-capacity-factor", "1.5"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_expert_rank_capacity_factor = 1.5: Megatron-Core needs "
       "model.moe_flex_dispatcher_backend hybridep or ncclep"},
      {{flex, "--moe-flex-dispatcher-backend", "hybridep", "--expert-model-parallel-size", "16"},
       32,
       absl::StatusCode::kOk,
       ""},
      {{flex, "--moe-flex-dispatcher-backend", "hybridep", "--expert-model-parallel-size", "12",
        "--num-experts", "48"},
       24,
       absl::StatusCode::kInvalidArgument,
       "runtime.gpus_per_node = 8: HybridEP's group of EP x ETP = 12 ranks must be whole NVLink "
       "domains"},
      {{"--moe-paged-stash"},
       8,
       absl::StatusCode::kInvalidArgument,
       "model.moe_paged_stash = true: Megatron-Core needs model.moe_expert_rank_capacity_factor"},
      {{flex, "--moe-flex-dispatcher-backend", "hybridep", "--moe-expert-rank-capacity-factor",
        "1.5", "--moe-paged-stash"},
       8,
       absl::StatusCode::kUnimplemented,
       "model.moe_paged_stash (--moe-paged-stash): routed-expert activations in a paged stash "
       "are not modelled"},
      {{flex, "--moe-flex-dispatcher-backend", "ncclep"},
       8,
       absl::StatusCode::kUnimplemented,
       "model.moe_flex_dispatcher_backend = ncclep (--moe-flex-dispatcher-backend ncclep)"},
      {{"--delay-wgrad-compute", "--moe-token-dispatcher-type", "alltoall"},
       8,
       absl::StatusCode::kInvalidArgument,
       "parallelism.delay_wgrad_compute = true: Megatron-Core needs "
       "parallelism.overlap_moe_expert_parallel_comm with it"},
      {{"--delay-wgrad-compute", "--overlap-moe-expert-parallel-comm", "--transformer-impl",
        "local"},
       8,
       absl::StatusCode::kInvalidArgument,
       "parallelism.delay_wgrad_compute = true: Megatron-LM delays weight gradients only with "
       "the transformer_engine implementation"},
      {{"--ep-overlap-early-attn-memory-release"},
       8,
       absl::StatusCode::kInvalidArgument,
       "parallelism.ep_overlap_early_attn_memory_release = true: Megatron-Core needs "
       "parallelism.overlap_moe_expert_parallel_comm with it"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--num-experts",
                                     "64",
                                     "--expert-model-parallel-size",
                                     "8",
                                     "--moe-ffn-hidden-size",
                                     "1024",
                                     "--global-batch-size",
                                     std::to_string(4 * c.gpus)};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const absl::StatusOr<ValidatedJob> j =
        ValidateJob(testing::JobFromArgs(testing::SmallGptArgs(4, args), c.gpus), nullptr);
    const std::string line = absl::StrJoin(c.extra, " ");
    EXPECT_EQ(j.status().code(), c.code) << line << ": " << j.status();
    if (!c.message.empty()) {
      EXPECT_THAT(std::string(j.status().message()), ::testing::HasSubstr(c.message)) << line;
    }
  }
}

// NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN must divide the HybridEP group.
TEST(ValidateJob, HybridepNvlinkDomainMustDivideTheGroup) {
  v1::JobSpec job = testing::JobFromArgs(
      testing::SmallGptArgs(
          4, {"--num-experts", "64", "--expert-model-parallel-size", "16", "--moe-ffn-hidden-size",
              "1024", "--global-batch-size", "64", "--moe-token-dispatcher-type", "flex",
              "--moe-flex-dispatcher-backend", "hybridep"}),
      16);
  job.mutable_runtime()->set_hybrid_ep_ranks_per_nvlink_domain(6);
  EXPECT_EQ(ValidateError(job),
            "runtime.hybrid_ep_ranks_per_nvlink_domain = 6: HybridEP's group of EP x ETP = 16 "
            "ranks must be whole NVLink domains of that many ranks");
  job.mutable_runtime()->set_hybrid_ep_ranks_per_nvlink_domain(16);
  const absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->runtime.hybrid_ep_ranks_per_domain, 16);
}

}  // namespace
}  // namespace oomguard
