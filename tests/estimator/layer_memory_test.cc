// The building blocks' memory (estimator/layer_memory.h), module by module,
// against values derived here by hand from the model shapes and from what
// Megatron-Core + Transformer Engine save for backward: a dense Llama-like
// layer (GQA, SwiGLU, TP 2 with sequence parallel), an MoE layer (routed
// experts over EP 8, with and without a shared expert) and a DeepSeek-style
// latent-attention (MLA) layer; selective and full recompute; the
// embedding, the loss and an MTP layer.
//
// Notation in the comments: b micro-batch, s sequence, t TP, h hidden,
// full = b*s tokens inside the tensor-parallel region, sp = full/t tokens in
// the sequence-parallel region, 2 bytes per bf16 element, 4 per fp32.
#include "estimator/layer_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {
namespace {

// The node at `path` ("self_attention/linear_qkv") under `tree`; a test
// failure (and `tree`) when there is none.
const v1::ModuleNode& Node(const v1::ModuleNode& tree, const std::string& path) {
  const v1::ModuleNode* node = &tree;
  for (absl::string_view name : absl::StrSplit(path, '/')) {
    const v1::ModuleNode* found = nullptr;
    for (const v1::ModuleNode& child : node->children()) {
      if (child.name() == name) found = &child;
    }
    if (found == nullptr) {
      ADD_FAILURE() << "no module " << path << " in\n" << tree.DebugString();
      return tree;
    }
    node = found;
  }
  return *node;
}

// The names of `tree`'s children, in order.
std::vector<std::string> ChildNames(const v1::ModuleNode& tree) {
  std::vector<std::string> names;
  for (const v1::ModuleNode& child : tree.children()) names.push_back(child.name());
  return names;
}

struct Expected {
  uint64_t params;
  uint64_t act;
};

// Checks the node at `path`: its type, parameters and activation bytes.
void ExpectModule(const v1::ModuleNode& tree, const std::string& path, const std::string& type,
                  Expected e) {
  SCOPED_TRACE(path);
  const v1::ModuleNode& n = Node(tree, path);
  EXPECT_EQ(n.type(), type);
  EXPECT_EQ(n.parameters(), e.params);
  EXPECT_EQ(n.activation_bytes(), e.act);
}

ValidatedJob Validated(const v1::JobSpec& job) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

void SetSelective(v1::JobSpec& job, std::vector<v1::RecomputeModule> modules) {
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  for (v1::RecomputeModule m : modules) job.mutable_recompute()->add_modules(m);
}

// ---------------------------------------------------------------------------
// Dense: Llama-3-8B's layer. h 4096, 32 heads of 128, 8 KV groups, SwiGLU
// FFN 14336, RMSNorm, RoPE (fused), no biases, no dropout; TP 2 with
// sequence parallel on 16 GPUs, bf16, TE, flash attention; micro-batch 1 of
// 4096 tokens. full = 4096, sp = 2048; per TP rank 16 heads, 4 groups,
// FFN 7168.
v1::JobSpec DenseJob() {
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
  p->set_sequence_parallel(true);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(4096);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  return job;
}

// A norm fused into the next TE linear (TELayerNormColumnParallelLinear):
// it saves its input and its output (the GEMM's input, gathered again in
// backward under SP), both sp x h bf16, and the fp32 1/rms per token.
constexpr Expected kDenseFusedNorm = {4096,  // RMSNorm weight, replicated over TP
                                      2 * 2048 * 4096 + 2 * 2048 * 4096 + 4 * 2048};  // 33,562,624
// q, k, v: 4096 x (4096 + 2*1024) / TP = 4096 x 3072. Kept: the fused QKV
// output (v is a view of it, saved by core attention), full x 3072 bf16,
// and the new q and k RoPE writes, full x (16 + 4) x 128 bf16.
constexpr Expected kDenseQkv = {4096 * (4096 + 2 * 1024) / 2,
                                2 * 4096 * 3072 + 2 * 4096 * (16 + 4) * 128};  // 46,137,344
// Flash attention saves its output (linear_proj's input too, counted once:
// full x 16 x 128 bf16) and the fp32 log-sum-exp per token and head.
constexpr Expected kDenseCoreAttn = {0, 2 * 4096 * 16 * 128 + 4 * 4096 * 16};  // 17,039,360
constexpr Expected kDenseProj = {4096 * 4096 / 2, 0};
// fc1: 4096 x 2*14336 / TP. SwiGLU saves its input (fc1's output, full x
// 2*7168 bf16); fc2 saves its input (SwiGLU's output, full x 7168 bf16).
constexpr Expected kDenseFc1 = {4096 * 2 * 14336 / 2, 2 * 4096 * 2 * 7168};  // 117,440,512 bytes
constexpr Expected kDenseFc2 = {14336 / 2 * 4096, 2 * 4096 * 7168};          // 58,720,256 bytes
constexpr double kDenseLayerParams = 2 * kDenseFusedNorm.params + kDenseQkv.params +
                                     kDenseProj.params + kDenseFc1.params + kDenseFc2.params;
constexpr double kDenseLayerAct =
    2 * kDenseFusedNorm.act + kDenseQkv.act + kDenseCoreAttn.act + kDenseFc1.act + kDenseFc2.act;

TEST(LayerMemory, DenseLlamaLayerModuleByModule) {
  const ValidatedJob j = Validated(DenseJob());
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, /*moe=*/false, &tree);
  EXPECT_EQ(ChildNames(tree),
            (std::vector<std::string>{"input_layernorm", "self_attention", "self_attn_bda",
                                      "pre_mlp_layernorm", "mlp", "mlp_bda"}));
  ExpectModule(tree, "input_layernorm", "TENorm(fused)", kDenseFusedNorm);
  ExpectModule(tree, "self_attention/linear_qkv", "ColumnParallelLinear", kDenseQkv);
  ExpectModule(tree, "self_attention/core_attention", "TEDotProductAttention", kDenseCoreAttn);
  ExpectModule(tree, "self_attention/linear_proj", "RowParallelLinear", kDenseProj);
  // No dropout: the residual add keeps nothing.
  ExpectModule(tree, "self_attn_bda", "BiasDropoutAdd", {0, 0});
  ExpectModule(tree, "pre_mlp_layernorm", "TENorm(fused)", kDenseFusedNorm);
  ExpectModule(tree, "mlp/linear_fc1", "ColumnParallelLinear", kDenseFc1);
  ExpectModule(tree, "mlp/linear_fc2", "RowParallelLinear", kDenseFc2);
  ExpectModule(tree, "mlp_bda", "BiasDropoutAdd", {0, 0});

  // Llama-3-8B's 218,112,000 parameters per layer: the matrices halved by
  // TP 2, the two norms whole: 218,103,808 / 2 + 8192.
  EXPECT_EQ(kDenseLayerParams, 218103808.0 / 2 + 8192);
  EXPECT_EQ(c.dense_params, kDenseLayerParams);
  EXPECT_EQ(c.expert_params, 0);
  EXPECT_EQ(c.adam_params, 2 * 4096);  // The norms: what Muon leaves to Adam.
  EXPECT_EQ(c.act_bytes, kDenseLayerAct);
  EXPECT_EQ(c.act_bytes, 306462720);
  EXPECT_EQ(c.routed_act_bytes, 0);
  // Backward working set: the MLP's, full x (2 + 1) x 7168 bf16 (fc1's
  // output gradient and SwiGLU's input gradient), above attention's q/k/v
  // gradients, 2 x full x 3072 bf16.
  EXPECT_EQ(c.transient_bytes, 2.0 * 4096 * 3 * 7168);
  EXPECT_GT(c.transient_bytes, 2 * 2.0 * 4096 * 3072);
  EXPECT_EQ(c.fp8_dense_weights, 0);  // bf16 job.
}

// Selective core_attn: the checkpointed attention keeps its q/k/v inputs
// (the QKV node) and its output (linear_proj's input); flash attention's
// log-sum-exp goes.
TEST(LayerMemory, DenseSelectiveCoreAttnDropsTheLogSumExp) {
  v1::JobSpec job = DenseJob();
  SetSelective(job, {v1::RECOMPUTE_MODULE_CORE_ATTN});
  const ValidatedJob j = Validated(job);
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, false, &tree);
  ExpectModule(tree, "self_attention/core_attention", "TEDotProductAttention",
               {0, 2 * 4096 * 16 * 128});
  ExpectModule(tree, "self_attention/linear_qkv", "ColumnParallelLinear", kDenseQkv);
  EXPECT_EQ(c.act_bytes, kDenseLayerAct - 4.0 * 4096 * 16);
  EXPECT_EQ(c.dense_params, kDenseLayerParams);
}

// Selective mlp: the checkpoint around the TE norm+fc1 and fc2 keeps only
// its input (sp x h bf16); fc1's and SwiGLU's outputs go, and so do the
// fused norm's output and statistics.
TEST(LayerMemory, DenseSelectiveMlpKeepsOnlyTheCheckpointInput) {
  v1::JobSpec job = DenseJob();
  SetSelective(job, {v1::RECOMPUTE_MODULE_MLP});
  const ValidatedJob j = Validated(job);
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, false, &tree);
  ExpectModule(tree, "pre_mlp_layernorm", "TENorm(fused)", {4096, 2 * 2048 * 4096});
  ExpectModule(tree, "mlp/linear_fc1", "ColumnParallelLinear", {kDenseFc1.params, 0});
  ExpectModule(tree, "mlp/linear_fc2", "RowParallelLinear", {kDenseFc2.params, 0});
  ExpectModule(tree, "input_layernorm", "TENorm(fused)", kDenseFusedNorm);  // Untouched.
  EXPECT_EQ(c.act_bytes,
            2 * 2048 * 4096 + kDenseFusedNorm.act + kDenseQkv.act + kDenseCoreAttn.act);
}

// Full recompute keeps a layer's input, sp x h bf16 (16 MiB), per
// checkpointed group; the layer's own cost is what it rematerialises in
// backward, unchanged. Uniform groups of 4 over the 32 layers of the single
// stage: 8 inputs, plus the [b, 1, s, s] bool mask of the data loader each
// checkpoint saves (checkpointed_attention_mask.h), plus the loss's kept
// tensors (the final norm's and the fp32 softmax over the TP-split
// vocabulary).
TEST(LayerMemory, FullRecomputeKeepsTheLayerInputs) {
  v1::JobSpec job = DenseJob();
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  job.mutable_recompute()->set_method(v1::RECOMPUTE_METHOD_UNIFORM);
  job.mutable_recompute()->set_num_layers(4);
  const ValidatedJob j = Validated(job);
  EXPECT_EQ(LayerInputBytes(j), 2.0 * 2048 * 4096);
  EXPECT_EQ(DecoderLayerCost(j, false, nullptr).act_bytes, kDenseLayerAct);

  absl::StatusOr<v1::EstimateReport> rep = Estimate(job);
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->ranks_size(), 1);
  const double loss = kDenseFusedNorm.act + 4.0 * 4096 * (128256 / 2);
  EXPECT_EQ(rep->ranks(0).chunks(0).activation_bytes_per_microbatch(),
            32 / 4 * 2.0 * 2048 * 4096 + 1.0 * 4096 * 4096 + loss);
}

// Megatron's defaults: LayerNorm (weight and bias; fp32 mean and 1/std per
// token), biases on every linear, dropout 0.1: a bool mask per element
// after each residual add (sp x h); attention dropout inside flash
// attention keeps nothing more (its RNG state is replayed).
TEST(LayerMemory, DenseLayerNormBiasesAndDropoutMasks) {
  v1::JobSpec job = DenseJob();
  v1::ModelSpec* m = job.mutable_model();
  m->clear_normalization();
  m->clear_add_bias_linear();
  m->clear_hidden_dropout();
  m->clear_attention_dropout();
  const ValidatedJob j = Validated(job);
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, false, &tree);
  ExpectModule(tree, "input_layernorm", "TENorm(fused)",
               {2 * 4096, 2 * 2048 * 4096 + 2 * 2048 * 4096 + 8 * 2048});
  ExpectModule(tree, "self_attention/linear_qkv", "ColumnParallelLinear",
               {kDenseQkv.params + 3072, kDenseQkv.act});
  ExpectModule(tree, "self_attention/linear_proj", "RowParallelLinear",
               {kDenseProj.params + 4096, 0});  // The row-parallel bias is whole.
  ExpectModule(tree, "self_attn_bda", "BiasDropoutAdd", {0, 2048 * 4096});
  ExpectModule(tree, "mlp/linear_fc1", "ColumnParallelLinear",
               {kDenseFc1.params + 2 * 7168, kDenseFc1.act});
  ExpectModule(tree, "mlp/linear_fc2", "RowParallelLinear",
               {kDenseFc2.params + 4096, kDenseFc2.act});
  ExpectModule(tree, "mlp_bda", "BiasDropoutAdd", {0, 2048 * 4096});
  EXPECT_EQ(c.adam_params, 4 * 4096);
}

// --output-logit-dtype: b 1, s 1024, vocabulary 32000 (a multiple of 128),
// TP 1: 32,768,000 logits. Unfused cross entropy keeps its fp32 softmax
// (4 x 32,768,000 = 131,072,000) whatever the logits' dtype; its backward
// makes the logits gradient in their dtype, bf16 by default (65,536,000),
// none for fp32 logits (the softmax is turned into the gradient in place),
// and the output layer casts a gradient in another dtype than its bf16 or
// fp16 input back to it (65,536,000). TE's fused cross entropy writes the
// gradient into the logits it keeps: 65,536,000 in bf16, 131,072,000 in fp32
// plus the cast back.
TEST(LayerMemory, OutputLogitDtype) {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(2);
  m->set_hidden_size(1024);
  m->set_num_attention_heads(16);
  m->set_vocab_size(32000);
  job.mutable_parallelism()->set_num_gpus(1);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(1024);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  struct Loss {
    uint64_t kept;
    double transient;
  };
  auto loss = [](const v1::JobSpec& job) {
    v1::ModuleNode tree;
    const BlockCost c = LossCost(Validated(job), true, &tree);
    return Loss{Node(tree, "output_layer").activation_bytes(), c.transient_bytes};
  };
  Loss l = loss(job);
  EXPECT_EQ(l.kept, 131072000u);
  EXPECT_EQ(l.transient, 65536000.0);
  job.mutable_training()->set_output_logit_dtype(v1::DTYPE_BF16);  // The input's: no change.
  l = loss(job);
  EXPECT_EQ(l.kept, 131072000u);
  EXPECT_EQ(l.transient, 65536000.0);
  job.mutable_training()->set_output_logit_dtype(v1::DTYPE_FP32);
  l = loss(job);
  EXPECT_EQ(l.kept, 131072000u);
  EXPECT_EQ(l.transient, 65536000.0);  // The cast back only.
  job.mutable_training()->set_cross_entropy_fusion(v1::CROSS_ENTROPY_FUSION_TE);
  l = loss(job);
  EXPECT_EQ(l.kept, 131072000u);
  EXPECT_EQ(l.transient, 65536000.0);
  job.mutable_training()->clear_output_logit_dtype();
  l = loss(job);
  EXPECT_EQ(l.kept, 65536000u);
  EXPECT_EQ(l.transient, 0.0);
  // bf16 logits of an fp16 model: the bf16 gradient and its fp16 cast.
  job.mutable_training()->clear_cross_entropy_fusion();
  job.mutable_precision()->set_params_dtype(v1::DTYPE_FP16);
  job.mutable_training()->set_output_logit_dtype(v1::DTYPE_BF16);
  l = loss(job);
  EXPECT_EQ(l.kept, 131072000u);
  EXPECT_EQ(l.transient, 131072000.0);
}

// The first and last stages' blocks of the dense job: the vocabulary
// 128256 is already a multiple of 128 x TP.
TEST(LayerMemory, DenseEmbeddingAndLoss) {
  const ValidatedJob j = Validated(DenseJob());
  EXPECT_EQ(j.model.padded_vocab, 128256);
  v1::ModuleNode embedding;
  const BlockCost e = EmbeddingCost(j, &embedding);
  // RoPE: no position table; no dropout: nothing kept.
  ExpectModule(embedding, "word_embeddings", "VocabParallelEmbedding", {128256 * 4096 / 2, 0});
  EXPECT_EQ(embedding.children_size(), 1);
  EXPECT_EQ(e.adam_params, 128256.0 * 4096 / 2);

  v1::ModuleNode loss;
  const BlockCost l = LossCost(j, /*owns_output_weight=*/true, &loss);
  // The final norm keeps input, output (the output layer's input) and 1/rms.
  ExpectModule(loss, "final_layernorm", "TENorm", kDenseFusedNorm);
  // Cross-entropy keeps the fp32 softmax of full x V/TP logits; the bf16
  // logits' gradient is its backward working set.
  ExpectModule(loss, "output_layer", "ColumnParallelLinear",
               {128256 * 4096 / 2, 4ull * 4096 * (128256 / 2)});
  EXPECT_EQ(l.transient_bytes, 2.0 * 4096 * (128256 / 2));
  v1::ModuleNode tied;
  EXPECT_EQ(LossCost(j, false, &tied).dense_params, 4096);  // The norm only.
}

// ---------------------------------------------------------------------------
// MoE: h 2048, 16 heads of 128 (no GQA), 64 routed experts of FFN 1408,
// top-8, grouped GEMM, the alltoall dispatcher; TP 2 with SP, EP 8, ETP 1
// on 16 GPUs. full = 4096, sp = 2048; 8 local experts.
v1::JobSpec MoeJob(uint32_t shared_ffn) {
  v1::JobSpec job = DenseJob();
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(16);
  m->set_hidden_size(2048);
  m->set_ffn_hidden_size(5632);
  m->set_num_attention_heads(16);
  m->clear_num_query_groups();
  m->set_vocab_size(102400);
  m->set_num_experts(64);
  m->set_moe_ffn_hidden_size(1408);
  m->set_moe_router_topk(8);
  m->set_moe_grouped_gemm(true);
  m->set_moe_token_dispatcher(v1::TOKEN_DISPATCHER_ALLTOALL);
  if (shared_ffn > 0) m->set_moe_shared_expert_intermediate_size(shared_ffn);
  job.mutable_parallelism()->set_expert_model_parallel_size(8);
  job.mutable_parallelism()->set_expert_tensor_parallel_size(1);
  return job;
}

// Attention of the MoE job, as the dense layer's with h 2048 and 8 heads
// (= groups) per TP rank.
constexpr Expected kMoeNorm = {2048, 2 * 2048 * 2048 + 2 * 2048 * 2048 + 4 * 2048};
// QKV output full x 24 x 128, q and k after RoPE full x 16 x 128.
constexpr Expected kMoeQkv = {2048 * 3 * 2048 / 2, 2 * 4096 * 3072 + 2 * 4096 * 2048};
constexpr Expected kMoeCoreAttn = {0, 2 * 4096 * 8 * 128 + 4 * 4096 * 8};
constexpr Expected kMoeProj = {2048 * 2048 / 2, 0};
// The router (not TP-split): h x E. Per local token and expert: the bf16
// logits, the fp32 scores, the fp32 probabilities the aux loss keeps, and
// the bool routing map: 2 + 4 + 4 + 1 bytes.
constexpr Expected kRouter = {2048 * 64, 2048ull * 64 * (2 + 4 + 4 + 1)};
// Routed tokens per GPU: top-8 copies of the 2048 local tokens (balanced:
// EP sends as many as it receives; ETP 1 gathers none) = 16384. fc1 keeps
// its input (the permuted tokens, 16384 x h bf16), the fp32 routing
// probability of each (applied in the activation), and SwiGLU's input
// (16384 x 2*1408 bf16); fc2 its input, 16384 x 1408 bf16. Weights: 8
// local experts.
constexpr Expected kExpertFc1 = {8ull * 2048 * 2 * 1408,
                                 2ull * 16384 * 2048 + 4 * 16384 + 2ull * 16384 * 2 * 1408};
constexpr Expected kExpertFc2 = {8ull * 1408 * 2048, 2ull * 16384 * 1408};
// The shared expert (FFN 2816, TP-split: 1408 per rank) runs on the full
// tokens like a dense MLP: fc1's output and SwiGLU's output.
constexpr Expected kSharedExpert = {2048 * 2 * 1408 + 1408 * 2048,
                                    2 * 4096 * 2 * 1408 + 2 * 4096 * 1408};

TEST(LayerMemory, MoeLayerModuleByModule) {
  const ValidatedJob j = Validated(MoeJob(0));
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, /*moe=*/true, &tree);
  ExpectModule(tree, "input_layernorm", "TENorm(fused)", kMoeNorm);
  ExpectModule(tree, "self_attention/linear_qkv", "ColumnParallelLinear", kMoeQkv);
  ExpectModule(tree, "self_attention/core_attention", "TEDotProductAttention", kMoeCoreAttn);
  ExpectModule(tree, "self_attention/linear_proj", "RowParallelLinear", kMoeProj);
  // The MoE layer's norm is a module of its own (TENorm): same tensors.
  ExpectModule(tree, "pre_mlp_layernorm", "TENorm", kMoeNorm);
  EXPECT_EQ(Node(tree, "mlp").type(), "MoELayer");
  EXPECT_EQ(ChildNames(Node(tree, "mlp")), (std::vector<std::string>{"router", "experts"}));
  ExpectModule(tree, "mlp/router", "TopKRouter", kRouter);
  ExpectModule(tree, "mlp/experts", "TEGroupedMLP", {0, 0});
  ExpectModule(tree, "mlp/experts/linear_fc1", "GroupedColumnParallelLinear", kExpertFc1);
  ExpectModule(tree, "mlp/experts/linear_fc2", "GroupedRowParallelLinear", kExpertFc2);

  EXPECT_EQ(c.dense_params,
            2 * kMoeNorm.params + kMoeQkv.params + kMoeProj.params + kRouter.params);  // 8,523,776
  EXPECT_EQ(c.expert_params, kExpertFc1.params + kExpertFc2.params);                   // 69,206,016
  EXPECT_EQ(c.params(), 8523776.0 + 69206016);
  EXPECT_EQ(c.act_bytes, 2 * kMoeNorm.act + kMoeQkv.act + kMoeCoreAttn.act + kRouter.act +
                             kExpertFc1.act + kExpertFc2.act);
  EXPECT_EQ(c.routed_act_bytes, kExpertFc1.act + kExpertFc2.act);  // 205,586,432
  EXPECT_EQ(c.routed_act_bytes, 205586432);
}

TEST(LayerMemory, MoeLayerWithSharedExpert) {
  const ValidatedJob j = Validated(MoeJob(2816));
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, true, &tree);
  EXPECT_EQ(ChildNames(Node(tree, "mlp")),
            (std::vector<std::string>{"router", "experts", "shared_experts"}));
  ExpectModule(tree, "mlp/shared_experts", "SharedExpertMLP", kSharedExpert);
  const BlockCost without = DecoderLayerCost(Validated(MoeJob(0)), true, nullptr);
  EXPECT_EQ(c.dense_params, without.dense_params + kSharedExpert.params);
  EXPECT_EQ(c.expert_params, without.expert_params);
  EXPECT_EQ(c.act_bytes, without.act_bytes + kSharedExpert.act);
  // Not routed: the shared expert's tokens do not grow with imbalance.
  EXPECT_EQ(c.routed_act_bytes, without.routed_act_bytes);
}

// moe_act recompute drops SwiGLU's output (fc2's input); moe + layernorm
// drops the whole MoE layer's tensors and the separate norm's output and
// statistics, keeping the norm's input (the checkpoint's).
TEST(LayerMemory, MoeRecomputeModules) {
  v1::JobSpec act = MoeJob(2816);
  SetSelective(act, {v1::RECOMPUTE_MODULE_MOE_ACT});
  v1::ModuleNode act_tree;
  const BlockCost a = DecoderLayerCost(Validated(act), true, &act_tree);
  ExpectModule(act_tree, "mlp/experts/linear_fc2", "GroupedRowParallelLinear",
               {kExpertFc2.params, 0});
  ExpectModule(act_tree, "mlp/experts/linear_fc1", "GroupedColumnParallelLinear", kExpertFc1);
  ExpectModule(act_tree, "mlp/shared_experts", "SharedExpertMLP", kSharedExpert);

  v1::JobSpec whole = MoeJob(2816);
  SetSelective(whole, {v1::RECOMPUTE_MODULE_MOE, v1::RECOMPUTE_MODULE_LAYERNORM});
  v1::ModuleNode whole_tree;
  const BlockCost w = DecoderLayerCost(Validated(whole), true, &whole_tree);
  ExpectModule(whole_tree, "pre_mlp_layernorm", "TENorm", {2048, 2 * 2048 * 2048});
  ExpectModule(whole_tree, "mlp/router", "TopKRouter", {kRouter.params, 0});
  ExpectModule(whole_tree, "mlp/experts/linear_fc1", "GroupedColumnParallelLinear",
               {kExpertFc1.params, 0});
  ExpectModule(whole_tree, "mlp/shared_experts", "SharedExpertMLP", {kSharedExpert.params, 0});
  // The attention norm is fused into linear_qkv (TE): `layernorm` leaves it.
  ExpectModule(whole_tree, "input_layernorm", "TENorm(fused)", kMoeNorm);
  EXPECT_EQ(w.act_bytes, kMoeNorm.act + kMoeQkv.act + kMoeCoreAttn.act + 2 * 2048 * 2048);
  EXPECT_EQ(w.routed_act_bytes, 0);
  // moe_act kept fc1's tensors, the router's and the shared expert's, and
  // the norm's output and 1/rms.
  EXPECT_EQ(a.act_bytes - w.act_bytes,
            (kMoeNorm.act - 2 * 2048 * 2048) + kRouter.act + kExpertFc1.act + kSharedExpert.act);
  // `moe` alone: the checkpoint keeps its input, the norm's output, and the
  // norm its input and 1/rms.
  v1::JobSpec moe_only = MoeJob(2816);
  SetSelective(moe_only, {v1::RECOMPUTE_MODULE_MOE});
  v1::ModuleNode moe_tree;
  DecoderLayerCost(Validated(moe_only), true, &moe_tree);
  ExpectModule(moe_tree, "pre_mlp_layernorm", "TENorm", kMoeNorm);
}

// ---------------------------------------------------------------------------
// MLA: DeepSeek-V3's attention. h 7168, 128 heads, q_lora_rank 1536,
// kv_lora_rank 512, qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128,
// the q/kv latent norms; a dense SwiGLU MLP of 18432; TP 4 with SP on 8
// GPUs, micro-batch 1 of 4096. full = 4096, sp = 1024, 32 heads per rank.
v1::JobSpec MlaJob() {
  v1::JobSpec job = DenseJob();
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(8);
  m->set_hidden_size(7168);
  m->set_ffn_hidden_size(18432);
  m->set_num_attention_heads(128);
  m->clear_num_query_groups();
  m->set_vocab_size(129280);
  m->set_attention_type(v1::ATTENTION_TYPE_MLA);
  m->set_q_lora_rank(1536);
  m->set_kv_lora_rank(512);
  m->set_qk_head_dim(128);
  m->set_qk_pos_emb_head_dim(64);
  m->set_v_head_dim(128);
  m->set_qk_layernorm(true);
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_parallelism()->set_tensor_model_parallel_size(4);
  return job;
}

// input_layernorm is a separate TENorm: its input and output (read by both
// down-projections), sp x h bf16 each, and 1/rms.
constexpr Expected kMlaInputNorm = {7168, 2 * 1024 * 7168 + 2 * 1024 * 7168 + 4 * 1024};
// The down-projections are replicated over TP and work on the sp tokens.
// q: the down output (the fused q norm's input, 1024 x 1536 bf16), the
// norm's output (the up-projection's input, the same size) and 1/rms.
constexpr Expected kQDown = {7168 * 1536, 2 * 1024 * 1536 + 2 * 1024 * 1536 + 4 * 1024};
constexpr Expected kQUp = {1536 * 32 * (128 + 64), 0};
// kv: the down output is 512 latent + 64 RoPE wide and stays whole (the
// latent is a view of it); the latent's norm output and 1/rms.
constexpr Expected kKvDown = {7168 * (512 + 64), 2 * 1024 * (512 + 64) + 2 * 1024 * 512 + 4 * 1024};
// kv up: 512 -> 32 x (128 + 128). Core attention keeps q and k after RoPE
// and concatenation (32 x 192 each) and v made contiguous (32 x 128), full
// tokens bf16.
constexpr Expected kKvUp = {512 * 32 * (128 + 128), 2ull * 4096 * 32 * (2 * 192 + 128)};
constexpr Expected kMlaCoreAttn = {0, 2 * 4096 * 32 * 128 + 4 * 4096 * 32};
constexpr Expected kMlaProj = {32 * 128 * 7168, 0};
// The dense MLP as in the dense layer: FFN 18432 / 4 = 4608 per rank.
constexpr Expected kMlaMlpNorm = kMlaInputNorm;  // Fused into fc1: same tensors.
constexpr Expected kMlaFc1 = {7168 * 2 * 4608, 2 * 4096 * 2 * 4608};
constexpr Expected kMlaFc2 = {4608 * 7168, 2 * 4096 * 4608};

TEST(LayerMemory, LatentAttentionLayerModuleByModule) {
  const ValidatedJob j = Validated(MlaJob());
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(j, /*moe=*/false, &tree);
  EXPECT_EQ(Node(tree, "self_attention").type(), "MLASelfAttention");
  EXPECT_EQ(ChildNames(Node(tree, "self_attention")),
            (std::vector<std::string>{"linear_q_down_proj", "q_layernorm", "linear_q_up_proj",
                                      "linear_kv_down_proj", "kv_layernorm", "linear_kv_up_proj",
                                      "core_attention", "linear_proj"}));
  ExpectModule(tree, "input_layernorm", "TENorm", kMlaInputNorm);
  ExpectModule(tree, "self_attention/linear_q_down_proj", "Linear", kQDown);
  ExpectModule(tree, "self_attention/q_layernorm", "RMSNorm", {1536, 0});
  ExpectModule(tree, "self_attention/linear_q_up_proj", "ColumnParallelLinear", kQUp);
  ExpectModule(tree, "self_attention/linear_kv_down_proj", "Linear", kKvDown);
  ExpectModule(tree, "self_attention/kv_layernorm", "RMSNorm", {512, 0});
  ExpectModule(tree, "self_attention/linear_kv_up_proj", "ColumnParallelLinear", kKvUp);
  ExpectModule(tree, "self_attention/core_attention", "TEDotProductAttention", kMlaCoreAttn);
  ExpectModule(tree, "self_attention/linear_proj", "RowParallelLinear", kMlaProj);
  ExpectModule(tree, "pre_mlp_layernorm", "TENorm(fused)", kMlaMlpNorm);
  ExpectModule(tree, "mlp/linear_fc1", "ColumnParallelLinear", kMlaFc1);
  ExpectModule(tree, "mlp/linear_fc2", "RowParallelLinear", kMlaFc2);

  // DeepSeek-V3's attention weights, 187,107,328 without TP: the
  // down-projections and norms whole, the rest over 4.
  const double attention =
      kQDown.params + 1536 + kQUp.params + kKvDown.params + 512 + kKvUp.params + kMlaProj.params;
  EXPECT_EQ(attention, 7168.0 * 1536 + 1536 + 7168 * 576 + 512 +
                           (1536.0 * 128 * 192 + 512.0 * 128 * 256 + 128.0 * 128 * 7168) / 4);
  EXPECT_EQ(c.dense_params, attention + 2 * 7168 + kMlaFc1.params + kMlaFc2.params);
  EXPECT_EQ(c.adam_params, 2 * 7168 + 1536 + 512);  // Every norm.
  EXPECT_EQ(c.act_bytes, kMlaInputNorm.act + kQDown.act + kKvDown.act + kKvUp.act +
                             kMlaCoreAttn.act + kMlaMlpNorm.act + kMlaFc1.act + kMlaFc2.act);
  // Backward: flash attention's q/k/v gradients, 2 x full x 32 x (192 +
  // 192 + 128) bf16, above the MLP's working set, full x 3 x 4608 bf16.
  EXPECT_EQ(c.transient_bytes, 2 * 2.0 * 4096 * 32 * 512);
  EXPECT_GT(c.transient_bytes, 2.0 * 4096 * 3 * 4608);
}

// mla_up_proj + layernorm (the shipped DeepSeek-V3 example's recompute):
// the up-projections' outputs (q, k, v) go, and so do the separate input
// norm's output and statistics and the latent norms' (inside the
// up-projection checkpoint); the down-projection outputs stay as the
// checkpoint's inputs, and the input norm's input as the layer's.
TEST(LayerMemory, LatentAttentionUpProjectionAndNormRecompute) {
  v1::JobSpec job = MlaJob();
  SetSelective(job, {v1::RECOMPUTE_MODULE_MLA_UP_PROJ, v1::RECOMPUTE_MODULE_LAYERNORM});
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(Validated(job), false, &tree);
  ExpectModule(tree, "input_layernorm", "TENorm", {7168, 2 * 1024 * 7168});
  ExpectModule(tree, "self_attention/linear_q_down_proj", "Linear",
               {kQDown.params, 2 * 1024 * 1536});
  ExpectModule(tree, "self_attention/linear_kv_down_proj", "Linear",
               {kKvDown.params, 2 * 1024 * (512 + 64)});
  ExpectModule(tree, "self_attention/linear_kv_up_proj", "ColumnParallelLinear", {kKvUp.params, 0});
  ExpectModule(tree, "self_attention/core_attention", "TEDotProductAttention", kMlaCoreAttn);
  // The MLP's norm is fused into fc1 (TE): `layernorm` leaves it.
  ExpectModule(tree, "pre_mlp_layernorm", "TENorm(fused)", kMlaMlpNorm);
  EXPECT_EQ(c.act_bytes, 2 * 1024 * 7168 + 2 * 1024 * 1536 + 2 * 1024 * 576 + kMlaCoreAttn.act +
                             kMlaMlpNorm.act + kMlaFc1.act + kMlaFc2.act);
}

// mla_up_proj alone: q, k, v go, and the latent norms' outputs and 1/rms
// with them (the norms are fused into the checkpointed up-projections);
// the input norm keeps all of its tensors.
TEST(LatentAttentionRecompute, UpProjectionDropsTheLatentNorms) {
  v1::JobSpec job = MlaJob();
  SetSelective(job, {v1::RECOMPUTE_MODULE_MLA_UP_PROJ});
  v1::ModuleNode tree;
  DecoderLayerCost(Validated(job), false, &tree);
  ExpectModule(tree, "input_layernorm", "TENorm", kMlaInputNorm);
  ExpectModule(tree, "self_attention/linear_q_down_proj", "Linear",
               {kQDown.params, 2 * 1024 * 1536});
  ExpectModule(tree, "self_attention/linear_kv_down_proj", "Linear",
               {kKvDown.params, 2 * 1024 * (512 + 64)});
  ExpectModule(tree, "self_attention/linear_kv_up_proj", "ColumnParallelLinear", {kKvUp.params, 0});
}

// layernorm alone: Megatron-Core recomputes input_layernorm and
// pre_mlp_layernorm only (TransformerLayer.recompute_input_layernorm /
// recompute_pre_mlp_layernorm), so the input norm keeps just its input and
// the latent norms inside the up-projections keep theirs.
TEST(LatentAttentionRecompute, LayernormLeavesTheLatentNorms) {
  v1::JobSpec job = MlaJob();
  SetSelective(job, {v1::RECOMPUTE_MODULE_LAYERNORM});
  v1::ModuleNode tree;
  DecoderLayerCost(Validated(job), false, &tree);
  ExpectModule(tree, "input_layernorm", "TENorm", {7168, 2 * 1024 * 7168});
  ExpectModule(tree, "self_attention/linear_q_down_proj", "Linear", kQDown);
  ExpectModule(tree, "self_attention/linear_kv_down_proj", "Linear", kKvDown);
  ExpectModule(tree, "self_attention/linear_kv_up_proj", "ColumnParallelLinear", kKvUp);
}

// An MTP layer of the MLA job: the two norms of its inputs (separate TENorms:
// input, output, 1/rms each), eh_proj (2h -> h, TP-split) keeping its input
// (the concatenated norm outputs, sp x 2h bf16), a decoder layer, and a
// second loss pass through the shared output weight (its activations, no
// parameters).
TEST(LayerMemory, MtpLayer) {
  v1::JobSpec job = MlaJob();
  job.mutable_model()->set_mtp_num_layers(1);
  const ValidatedJob j = Validated(job);
  v1::ModuleNode tree;
  const BlockCost c = MtpLayerCost(j, &tree);
  EXPECT_EQ(ChildNames(tree),
            (std::vector<std::string>{"enorm", "hnorm", "eh_proj", "transformer_layer",
                                      "final_layernorm", "output_layer"}));
  ExpectModule(tree, "enorm", "TENorm", kMlaInputNorm);
  ExpectModule(tree, "hnorm", "TENorm", kMlaInputNorm);
  ExpectModule(tree, "eh_proj", "ColumnParallelLinear", {2 * 7168 * 7168 / 4, 2 * 1024 * 2 * 7168});
  // The vocabulary 129280 padded to a multiple of 128 x TP 4 = 512: 129536.
  EXPECT_EQ(j.model.padded_vocab, 129536);
  ExpectModule(tree, "output_layer", "ColumnParallelLinear", {0, 4ull * 4096 * (129536 / 4)});
  const BlockCost layer = DecoderLayerCost(j, false, nullptr);
  const BlockCost loss = LossCost(j, false, nullptr);
  EXPECT_EQ(c.dense_params, 3 * 7168 + 2.0 * 7168 * 7168 / 4 + layer.dense_params);
  EXPECT_EQ(c.act_bytes,
            2 * kMlaInputNorm.act + 2.0 * 1024 * 2 * 7168 + layer.act_bytes + loss.act_bytes);
}

}  // namespace
}  // namespace oomguard
