// The forward-only pass's working memory (estimator/forward_only_memory.h)
// against values derived here by hand: a Llama-3-8B-shaped model (h 4096,
// 32 heads of 128, 8 KV groups, SwiGLU ffn 14336, vocabulary 128256, untied)
// at TP 2 with sequence parallel and PP 2, a log-prob micro-batch of
// T = 8192 tokens: the layer moment on the first stage, the logits moment
// on the last (pipeline input, fp32 logits and their copies: a cloned or
// in-place log-softmax, the entropy's), chunking, deferred fp32 logits,
// fused kernels, context parallelism and the value head.
//
// Notation: T tokens of the micro-batch, full = T tokens in the TP region,
// sp = T / TP = 4096 in the sequence-parallel region, 2 B per bf16 element,
// 4 per fp32. Padded vocabulary: 128256 is a multiple of 128 x TP 2 = 256,
// so V/TP = 64128 columns per rank; L = T x V/TP = 525,336,576 logits.
#include "estimator/forward_only_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

v1::JobSpec LlamaJob() {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(32);
  m->set_hidden_size(4096);
  m->set_ffn_hidden_size(14336);
  m->set_num_attention_heads(32);
  m->set_num_query_groups(8);
  m->set_vocab_size(128256);
  m->set_activation(v1::ACTIVATION_SWIGLU);
  m->set_normalization(v1::NORMALIZATION_RMS_NORM);
  m->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  m->set_add_bias_linear(false);
  m->set_untie_embeddings_and_output_weights(true);
  m->set_hidden_dropout(0);
  m->set_attention_dropout(0);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_num_gpus(16);
  p->set_tensor_model_parallel_size(2);
  p->set_pipeline_model_parallel_size(2);
  p->set_sequence_parallel(true);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(4096);  // The training budget: not the pass's.
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  // Full recompute in training: a no-grad forward ignores it.
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  job.mutable_recompute()->set_method(v1::RECOMPUTE_METHOD_UNIFORM);
  job.mutable_recompute()->set_num_layers(1);
  return job;
}

ValidatedJob Validated(const v1::JobSpec& job) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

double TermBytes(const ForwardOnlyMemory& m, const std::string& name) {
  for (const ForwardOnlyTerm& t : m.terms) {
    if (t.name == name) return t.bytes;
  }
  ADD_FAILURE() << "no term " << name;
  return -1;
}

// One Llama layer's saved activations at T = 8192 (layer_memory_test.cc's
// derivation at 4096 tokens, twice: every term is linear in the tokens with
// flash attention):
//   two fused norms  2 x (2 sp h + 2 sp h + 4 sp) = 134,250,496
//   QKV output + RoPE'd q, k: 2 T 3072 + 2 T 20 x 128 = 92,274,688
//   flash output + log-sum-exp: 2 T 16 x 128 + 4 T 16 = 34,078,720
//   fc1 output (SwiGLU, 2 x 7168 per rank): 2 T 14336 = 234,881,024
//   fc2 input: 2 T 7168 = 117,440,512
constexpr double kLayerAt8192 = 612925440;
constexpr double kHiddenBetweenLayers = 2 * 4096.0 * 4096 * 2;  // input + output, sp x h bf16
constexpr double kPipelineInput = 4096.0 * 4096 * 2;            // sp x h bf16
constexpr double kFinalHidden = (4096.0 + 8192) * 4096 * 2;     // norm output + gathered input
constexpr double kLogits = 8192.0 * 64128;                      // L

TEST(ForwardOnlyMemory, FirstStageHoldsOneLayerAndTheResidualStream) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 0, {.tokens = 8192});
  EXPECT_FALSE(m.logits_moment);
  ASSERT_EQ(m.terms.size(), 2u);  // No pipeline input on the first stage.
  EXPECT_EQ(TermBytes(m, "decoder layer working set (no grad)"), kLayerAt8192);
  EXPECT_EQ(TermBytes(m, "hidden states between layers"), kHiddenBetweenLayers);
  EXPECT_EQ(m.Bytes(), kLayerAt8192 + kHiddenBetweenLayers);  // 680,034,304 B
}

TEST(ForwardOnlyMemory, LastStageHoldsFp32LogitsAndTheLogSoftmaxCopy) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 1, {.tokens = 8192});
  EXPECT_TRUE(m.logits_moment);
  // Upcast moment: L x (2 + 4) = 3,152,019,456 B; log-softmax moment: the
  // fp32 logits and one fp32 working copy, L x 8 = 4,202,692,608 B: larger.
  EXPECT_EQ(TermBytes(m, "pipeline input"), kPipelineInput);
  EXPECT_EQ(TermBytes(m, "final hidden states"), kFinalHidden);
  EXPECT_EQ(TermBytes(m, "fp32 logits"), kLogits * 4);  // 2,101,346,304 B = 1.96 GiB
  EXPECT_EQ(TermBytes(m, "fp32 log-softmax copies (1)"), kLogits * 4);
  EXPECT_EQ(m.Bytes(), kPipelineInput + kFinalHidden + 8 * kLogits);  // 4,336,910,336 B
}

TEST(ForwardOnlyMemory, EntropyAddsOneFp32Copy) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .entropy = true});
  EXPECT_EQ(TermBytes(m, "fp32 log-softmax copies (2)"), kLogits * 8);
  EXPECT_EQ(m.Bytes(), kPipelineInput + kFinalHidden + 12 * kLogits);
}

// Megatron's cross entropy in place on the fp32 logits (veRL): no copy of
// its own, so the upcast's bf16 + fp32 (6 B per logit) is the peak.
TEST(ForwardOnlyMemory, InPlaceCrossEntropyPeaksAtTheUpcast) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m =
      ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .in_place_log_softmax = true});
  EXPECT_EQ(TermBytes(m, "bf16 logits (output layer)"), kLogits * 2);
  EXPECT_EQ(TermBytes(m, "fp32 logits"), kLogits * 4);
  EXPECT_EQ(m.Bytes(), kPipelineInput + kFinalHidden + 6 * kLogits);
  // With the entropy: the clone it keeps and its softmax, 12 B per logit.
  const ForwardOnlyMemory entropy =
      ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .in_place_log_softmax = true, .entropy = true});
  EXPECT_EQ(TermBytes(entropy, "fp32 log-softmax copies (2)"), kLogits * 8);
  EXPECT_EQ(entropy.Bytes(), kPipelineInput + kFinalHidden + 12 * kLogits);
}

TEST(ForwardOnlyMemory, ChunkingLeavesTheUpcastAsThePeak) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .chunk_tokens = 1024});
  // Log-softmax moment: 4 L + 1024 x 64128 x 4 = 2,364,014,592 B; the
  // upcast's bf16 + fp32 logits, 6 L = 3,152,019,456 B, is now the larger.
  EXPECT_EQ(TermBytes(m, "bf16 logits (output layer)"), kLogits * 2);
  EXPECT_EQ(TermBytes(m, "fp32 logits"), kLogits * 4);
  EXPECT_EQ(m.Bytes(), kPipelineInput + kFinalHidden + 6 * kLogits);
}

TEST(ForwardOnlyMemory, DeferredFp32LogitsKeepBf16AndUpcastAChunk) {
  const ValidatedJob j = Validated(LlamaJob());
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(
      j, 1, {.tokens = 8192, .chunk_tokens = 1024, .defer_fp32_logits = true});
  EXPECT_EQ(TermBytes(m, "bf16 logits (fp32 deferred)"), kLogits * 2);
  EXPECT_EQ(TermBytes(m, "fp32 log-softmax copies (1)"), 1024.0 * 64128 * 4);  // 262,668,288
  EXPECT_EQ(m.Bytes(), kPipelineInput + kFinalHidden + 2 * kLogits + 1024.0 * 64128 * 4);
}

TEST(ForwardOnlyMemory, FusedKernelsMaterialiseOnlyAChunk) {
  const ValidatedJob j = Validated(LlamaJob());
  // Without a chunk: no logits; the last stage's layer moment is larger.
  const ForwardOnlyMemory unchunked =
      ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .fused_kernels = true});
  EXPECT_FALSE(unchunked.logits_moment);
  EXPECT_EQ(unchunked.Bytes(), kPipelineInput + kHiddenBetweenLayers + kLayerAt8192);
  // A chunk of 16384 tokens (more than the micro-batch: all 8192): 4 L.
  const ForwardOnlyMemory chunked =
      ForwardOnlyPassMemory(j, 1, {.tokens = 8192, .chunk_tokens = 16384, .fused_kernels = true});
  EXPECT_TRUE(chunked.logits_moment);
  EXPECT_EQ(chunked.Bytes(), kPipelineInput + kFinalHidden + 4 * kLogits);
}

TEST(ForwardOnlyMemory, ContextParallelSplitsTheTokens) {
  v1::JobSpec job = LlamaJob();
  job.mutable_parallelism()->set_context_parallel_size(2);
  const ValidatedJob j = Validated(job);
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 1, {.tokens = 8192});
  // Each rank holds 4096 of the 8192 tokens: half of every term.
  EXPECT_EQ(TermBytes(m, "fp32 logits"), kLogits * 2);
  EXPECT_EQ(m.Bytes(), (kPipelineInput + kFinalHidden + 8 * kLogits) / 2);
}

TEST(ForwardOnlyMemory, ValueHeadHasNoVocabularyLogits) {
  v1::JobSpec job = LlamaJob();
  job.mutable_model()->set_value_head(true);
  const ValidatedJob j = Validated(job);
  const ForwardOnlyMemory m = ForwardOnlyPassMemory(j, 1, {.tokens = 8192});
  // 8192 values x 4 B x 2 are far below one layer: the layer moment.
  EXPECT_FALSE(m.logits_moment);
  EXPECT_EQ(m.Bytes(), kPipelineInput + kHiddenBetweenLayers + kLayerAt8192);
}

}  // namespace
}  // namespace oomguard
