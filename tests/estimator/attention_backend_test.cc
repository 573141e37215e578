// Which attention kernel a job runs (estimator/attention_backend.h): `auto`
// on a compute-capability-7 GPU (V100, T4) and in fp32 is unfused, as
// Transformer Engine's get_attention_backend picks it; what such a GPU
// cannot run (flash or cuDNN fused attention, BF16, FP8) and unfused
// attention with context parallelism are refused naming the field; the
// scores unfused attention keeps, against values derived here by hand.
#include "estimator/attention_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

// A small GPT in fp16 on a V100: 4 layers, h 1024, 16 heads, s 2048, b 2.
v1::JobSpec V100Job() {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(4);
  m->set_hidden_size(1024);
  m->set_num_attention_heads(16);
  m->set_vocab_size(32000);
  job.mutable_parallelism()->set_num_gpus(1);
  job.mutable_training()->set_micro_batch_size(2);
  job.mutable_training()->set_seq_length(2048);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_FP16);
  job.mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_VOLTA_TURING);
  return job;
}

absl::Status Invalid(const v1::JobSpec& job) { return ValidateJob(job, nullptr).status(); }

TEST(AttentionBackend, AutoIsUnfusedOnComputeCapability7) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(V100Job(), nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_FALSE(j->training.flash_attention);
  EXPECT_FALSE(j->training.local_attention);
  // TE's softmax kernel: 16 < 2048 < 16384, 2048 % 8 == 0, b x heads = 32.
  EXPECT_TRUE(j->training.fused_softmax);
}

TEST(AttentionBackend, AutoStaysFlashOnHopper) {
  v1::JobSpec job = V100Job();
  job.mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_HOPPER);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_TRUE(j->training.flash_attention);
}

// Unfused attention on a V100 (`auto` there: no flash or cuDNN fused
// attention below compute capability 8), fp16, V100Job: h 1024, 16 heads of
// 64, TP 1, b 2, s 2048. Core attention keeps its output (2 x 4096 tokens x
// 1024 = 8,388,608 bytes) and, per element of the [b, 16, s, s] scores (2 x
// 16 x 2048 x 2048 = 134,217,728), what TE's UnfusedDotProductAttention
// saves for backward. s 2048 meets TE's fused softmax kernel (16 < s <
// 16384, s % 8, b x heads % 4), which keeps only its fp16 output, 2 bytes,
// also the input the probabilities @ V bmm saves: 268,435,456 + 8,388,608 =
// 276,824,064. With attention dropout 0.1 the bmm saves the dropout's fp16
// output and the dropout its bool mask: 2 + 2 + 1 = 5 bytes, 671,088,640 +
// 8,388,608 = 679,477,248.
// At s 16384 the kernel does not run (s < 16384 fails): the framework
// softmax keeps its fp32 output (4 bytes) and the bmm the fp16 cast (2), 6
// bytes per element of 1 x 16 x 16384^2 = 4,294,967,296 (b 1), plus the
// output 2 x 16384 x 1024 = 33,554,432: 25,803,358,208. With dropout the
// cast is freed after the dropout (which keeps its mask only): 4 + 1 + 2 = 7
// bytes, 30,064,771,072 + 33,554,432 = 30,098,325,504.
TEST(AttentionBackend, UnfusedAttentionOnV100KeepsTheScores) {
  v1::JobSpec job = V100Job();
  job.mutable_model()->set_attention_dropout(0);
  auto core_attention = [](const v1::JobSpec& job) {
    absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
    EXPECT_TRUE(j.ok()) << j.status();
    v1::ModuleNode tree;
    if (j.ok()) DecoderLayerCost(*j, false, &tree);
    for (const v1::ModuleNode& node : tree.children()) {
      for (const v1::ModuleNode& child : node.children()) {
        if (child.name() == "core_attention") return child;
      }
    }
    ADD_FAILURE() << "no core_attention in\n" << tree.DebugString();
    return v1::ModuleNode();
  };
  EXPECT_EQ(core_attention(job).type(), "UnfusedAttention");
  EXPECT_EQ(core_attention(job).activation_bytes(), 276824064u);
  job.mutable_model()->set_attention_dropout(0.1);
  EXPECT_EQ(core_attention(job).activation_bytes(), 679477248u);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(16384);
  EXPECT_EQ(core_attention(job).activation_bytes(), 30098325504u);
  job.mutable_model()->set_attention_dropout(0);
  EXPECT_EQ(core_attention(job).activation_bytes(), 25803358208u);
}

TEST(AttentionBackend, FlashOrFusedOnComputeCapability7IsRefused) {
  for (v1::AttentionBackend ab : {v1::ATTENTION_BACKEND_FLASH, v1::ATTENTION_BACKEND_FUSED}) {
    v1::JobSpec job = V100Job();
    job.mutable_training()->set_attention_backend(ab);
    const absl::Status status = Invalid(job);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("training.attention_backend = ",
                                       v1::AttentionBackend_Name(ab), ": Transformer Engine")));
    EXPECT_THAT(status.message(), HasSubstr("compute capability 7: V100, T4"));
  }
}

TEST(AttentionBackend, Fp32RunsUnfusedAndRefusesFlash) {
  v1::JobSpec job = V100Job();
  job.mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_HOPPER);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_FP32);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_FALSE(j->training.flash_attention);
  EXPECT_FALSE(j->training.fused_softmax);  // The kernel takes 16-bit input only.
  job.mutable_training()->set_attention_backend(v1::ATTENTION_BACKEND_FLASH);
  EXPECT_THAT(Invalid(job).message(), HasSubstr("precision.params_dtype is DTYPE_FP32"));
}

TEST(AttentionBackend, Bf16AndFp8OnComputeCapability7AreRefused) {
  v1::JobSpec job = V100Job();
  job.mutable_precision()->clear_params_dtype();  // BF16, Megatron-LM's default here.
  const absl::Status bf16 = Invalid(job);
  EXPECT_EQ(bf16.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bf16.message(),
              HasSubstr("precision.params_dtype = DTYPE_BF16: BF16 needs compute capability 8.0"));
  EXPECT_THAT(bf16.message(), HasSubstr("--fp16"));
  job = V100Job();
  job.mutable_precision()->set_fp8(true);
  job.mutable_precision()->set_fp8_format(v1::PrecisionSpec::FP8_FORMAT_HYBRID);
  EXPECT_THAT(std::string(Invalid(job).message()),
              HasSubstr("precision.fp8_format = FP8_FORMAT_HYBRID: FP8 needs compute "
                        "capability 8.9"));
}

TEST(AttentionBackend, UnfusedWithContextParallelismIsRefused) {
  v1::JobSpec job = V100Job();
  job.mutable_parallelism()->set_num_gpus(2);
  job.mutable_parallelism()->set_context_parallel_size(2);
  EXPECT_THAT(Invalid(job).message(),
              HasSubstr("parallelism.context_parallel_size = 2: Transformer Engine's "
                        "UnfusedDotProductAttention runs no context parallelism"));
  job.mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_HOPPER);
  EXPECT_TRUE(Invalid(job).ok());  // Flash attention runs it.
  job.mutable_training()->set_attention_backend(v1::ATTENTION_BACKEND_UNFUSED);
  EXPECT_THAT(Invalid(job).message(),
              HasSubstr("attention is unfused here (training.attention_backend "
                        "ATTENTION_BACKEND_UNFUSED)"));
  job.mutable_training()->set_transformer_impl(v1::TRANSFORMER_IMPL_LOCAL);
  job.mutable_training()->clear_attention_backend();
  EXPECT_THAT(Invalid(job).message(),
              HasSubstr("Megatron's local DotProductAttention (training.attention_backend LOCAL"));
}

}  // namespace
}  // namespace oomguard
