// Hybrid (Mamba) models: the parameter count of Nemotron-H 8B derived by
// hand from its config.json, a Mamba layer's parameters and activations
// module by module (TP with sequence parallelism, CP, selective and full
// recompute), the placement of a pattern's pipeline segments and what
// validation refuses. (Megatron's two hybrid CI runs against their measured
// memory: tests/tools/calibration_test.cc.)
//
// Nemotron-H 8B (nvidia/Nemotron-H-8B-Base-8K config.json, as Megatron-
// Bridge's tests/unit_tests/models/nemotronh/test_nemotron_h_bridge.py
// copies it): hidden_size h 4096, hybrid_override_pattern
// "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-" (24 Mamba, 4
// attention, 24 MLP layers), mamba_num_heads H 128, mamba_head_dim P 64
// (d_inner = H x P = 8192), n_groups G 8, ssm_state_size N 128,
// conv_kernel 4, 32 attention heads of 128 with 8 KV heads,
// intermediate_size 21504 with relu2 (squared ReLU, not gated), RMSNorm, no
// biases (use_bias, mlp_bias, attention_bias false), vocab_size 131072,
// tie_word_embeddings false, no position embedding.
//
// Notation: b micro-batch, s sequence, t TP, full = b*s/CP tokens in the
// tensor-parallel region, sp = full/t under sequence parallelism, 2 bytes
// per bf16 element, 4 per fp32.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "estimator/estimator.h"
#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

const std::string kNemotronH8b =
    "--hybrid-layer-pattern M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M- "
    "--hidden-size 4096 --ffn-hidden-size 21504 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --kv-channels 128 --mamba-num-heads 128 "
    "--mamba-head-dim 64 --mamba-num-groups 8 --mamba-state-dim 128 --squared-relu "
    "--normalization RMSNorm --position-embedding-type none --disable-bias-linear "
    "--untie-embeddings-and-output-weights --vocab-size 131072 --hidden-dropout 0 "
    "--attention-dropout 0 --bf16 --micro-batch-size 1 --seq-length 4096 ";

// The node at `path` ("mixer/ssm") under `tree`; a test failure (and
// `tree`) when there is none.
const v1::ModuleNode& Node(const v1::ModuleNode& tree, const std::string& path) {
  const v1::ModuleNode* node = &tree;
  for (absl::string_view name : absl::StrSplit(path, '/')) {
    const auto& children = node->children();
    auto it = std::find_if(children.begin(), children.end(),
                           [name](const v1::ModuleNode& c) { return c.name() == name; });
    if (it == children.end()) {
      ADD_FAILURE() << "no module " << path << " in\n" << tree.DebugString();
      return tree;
    }
    node = &*it;
  }
  return *node;
}

// The whole model, by hand:
//   Mamba layer: in_proj's fused RMSNorm h = 4,096; in_proj h x (2 d_inner
//     + 2 G N + H) = 4096 x 18560 = 76,021,760; conv1d over d_inner + 2 G N
//     = 10,240 channels, weight x 4 + bias = 51,200; dt_bias, A_log, D
//     3 H = 384; gated RMSNorm d_inner = 8,192; out_proj d_inner x h =
//     33,554,432. Sum 109,640,064.
//   Attention layer: fused norm 4,096; QKV 4096 x (32 + 2 x 8) x 128 =
//     25,165,824; proj 4096 x 4096 = 16,777,216. Sum 41,947,136.
//   MLP layer: fused norm 4,096; fc1 and fc2 4096 x 21504 each,
//     176,160,768. Sum 176,164,864.
//   Embedding and output layer 131072 x 4096 each, 1,073,741,824 together;
//     final norm 4,096.
//   24 x 109,640,064 + 4 x 41,947,136 + 24 x 176,164,864 + 1,073,741,824
//   + 4,096 = 8,100,852,736.
TEST(HybridModel, NemotronH8bParameterCount) {
  absl::StatusOr<v1::EstimateReport> report = testing::EstimateArgs(Words(kNemotronH8b), 8);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->total_parameters(), 8'100'852'736u);
  ASSERT_EQ(report->ranks_size(), 1);
  EXPECT_EQ(report->ranks(0).parameters(), 8'100'852'736u);
  // The module tree sums to the same: a HybridModel with a HybridStack.
  EstimateOptions options;
  options.module_tree = true;
  report = Estimate(testing::JobFromArgs(Words(kNemotronH8b), 8), options);
  ASSERT_TRUE(report.ok()) << report.status();
  const v1::ModuleNode& tree = report->rank_trees(0);
  EXPECT_EQ(tree.type(), "HybridModel");
  EXPECT_EQ(tree.parameters(), 8'100'852'736u);
  EXPECT_EQ(Node(tree, "decoder").type(), "HybridStack");
}

// The Nemotron-H 47B and 56B presets (jobspec/preset_configs.inc, from
// Megatron-LM's examples/post_training/modelopt/conf/nvidia/
// Nemotron-H-47B-Reasoning-128K.sh and Nemotron-H-56B-Base-8K.sh), by hand:
// h 8192, H 256 Mamba heads of P 64 (d_inner 16,384), G 8, N 256, 64
// attention heads of 128 with 8 KV heads, vocabulary 131,072, untied.
//   Mamba layer: fused norm 8,192; in_proj 8192 x (2 x 16384 + 2 x 8 x 256 +
//     256 = 37,120) = 304,087,040; conv1d over 16384 + 4096 = 20,480
//     channels, weight x 4 + bias = 102,400; dt_bias, A_log, D 3 x 256 =
//     768; gated RMSNorm 16,384; out_proj 16384 x 8192 = 134,217,728. Sum
//     438,432,512.
//   Attention layer: fused norm 8,192; QKV 8192 x (64 + 2 x 8) x 128 =
//     83,886,080; proj 8192 x 8192 = 67,108,864. Sum 151,003,136.
//   MLP layer: fused norm 8,192 + fc1 and fc2 8192 x ffn each.
//   Embedding and output layer 131072 x 8192 each, 2,147,483,648 together;
//     final norm 8,192.
// 47B: 98 layers, 45 Mamba, 5 attention, 48 MLP of ffn 30,720
//   (503,324,672 each): 45 x 438,432,512 + 5 x 151,003,136 + 48 x
//   503,324,672 + 2,147,491,840 = 46,791,554,816 (published: 47B).
// 56B: 118 layers, 54 Mamba, 10 attention, 54 MLP of ffn 32,768
//   (536,879,104 each): 54 x 438,432,512 + 10 x 151,003,136 + 54 x
//   536,879,104 + 2,147,491,840 = 56,324,350,464 (published: 56B).
// (Without TP: under TP the total counts each rank's copy of the norms.)
TEST(HybridModel, NemotronH47bAnd56bPresetParameterCounts) {
  const struct {
    const char* preset;
    uint64_t parameters;
    double published;
  } models[] = {{"nemotron-h-47b", 46'791'554'816u, 47e9},
                {"nemotron-h-56b", 56'324'350'464u, 56e9}};
  for (const auto& m : models) {
    absl::StatusOr<v1::EstimateReport> report = Estimate(
        testing::JobFromArgs(Words("--bf16 --micro-batch-size 1 --seq-length 8192"), 8, m.preset));
    ASSERT_TRUE(report.ok()) << m.preset << ": " << report.status();
    EXPECT_EQ(report->total_parameters(), m.parameters) << m.preset;
    EXPECT_NEAR(static_cast<double>(report->total_parameters()), m.published, 0.01 * m.published)
        << m.preset;
  }
}

struct Expected {
  const char* path;
  const char* type;
  uint64_t params;
  uint64_t act;
};

void ExpectModules(const v1::ModuleNode& tree, const std::vector<Expected>& modules) {
  for (const Expected& e : modules) {
    SCOPED_TRACE(e.path);
    const v1::ModuleNode& n = Node(tree, e.path);
    EXPECT_EQ(n.type(), e.type);
    EXPECT_EQ(n.parameters(), e.params);
    EXPECT_EQ(n.activation_bytes(), e.act);
  }
}

// A Mamba layer at TP 2 with sequence parallelism, b 1, s 4096: full 4096,
// sp 2048; per TP rank 64 heads, d_inner 4096, 4 groups.
//   in_proj: the norm weight (replicated) 4,096 + 4096 x 18560 / 2 =
//     38,014,976; keeps the fused norm's input and output, sp x h bf16 each,
//     and fp32 1/rms per token: 2 x 2048 x 4096 x 2 + 4 x 2048 = 33,562,624.
//   conv1d: 5,120 channels x (4 + 1) = 25,600; keeps nothing (the kernel
//     recomputes the convolution in backward).
//   ssm (mamba_split_conv1d_scan_combined): dt_bias, A_log, D 3 x 64 = 192;
//     keeps zxBCdt, full x (2 x 4096 + 64 + 2 x 4 x 128 = 9,280) bf16, and
//     the ungated scan output out_x, full x 4096 bf16:
//     2 x 4096 x (9280 + 4096) = 109,576,192.
//   norm (gated RMSNorm): 4,096; its input full x 4096 bf16 and fp32 1/rms
//     per token and group, 4 x 4096 x 4: 33,554,432 + 65,536 = 33,619,968.
//   out_proj: 8192 x 4096 / 2 = 16,777,216; its input full x 4096 bf16 =
//     33,554,432.
// The layer: 54,822,080 parameters, 210,313,216 bytes.
constexpr uint64_t kMambaLayerAct = 210'313'216;
constexpr uint64_t kLayerInput = 2 * 2048 * 4096;  // 16,777,216: what full recompute keeps.

const std::vector<Expected>& MambaTp2Modules() {
  static const auto* const kModules = new std::vector<Expected>{
      {"in_proj", "TELayerNormColumnParallelLinear", 38'014'976, 33'562'624},
      {"mixer/conv1d", "Conv1d", 25'600, 0},
      {"mixer/ssm", "MambaSplitConv1dScanCombined", 192, 109'576'192},
      {"mixer/norm", "RMSNormGated", 4'096, 33'619'968},
      {"mixer/out_proj", "RowParallelLinear", 16'777'216, 33'554'432},
      {"mamba_bda", "BiasDropoutAdd", 0, 0},
  };
  return *kModules;
}

TEST(HybridModel, MambaLayerModulesUnderTpAndSp) {
  const ValidatedJob j = testing::ValidatedJobFromArgs(
      Words(kNemotronH8b + "--tensor-model-parallel-size 2 --sequence-parallel"), 8);
  v1::ModuleNode tree;
  const BlockCost c = HybridLayerCost(j, HybridLayer::kMamba, &tree);
  ExpectModules(tree, MambaTp2Modules());
  EXPECT_EQ(c.dense_params, 54'822'080);
  EXPECT_EQ(c.act_bytes, kMambaLayerAct);
  EXPECT_EQ(c.expert_params, 0);
  // Its backward's working set: the packed gradient dzxBCdt (full x 9,280)
  // and the recomputed convolution output and its gradient (full x (4096 +
  // 2 x 4 x 128 = 5,120) each), bf16: 2 x 4096 x (9280 + 2 x 5120) =
  // 159,907,840; and the chunk states with their gradient, b x s/128
  // chunks x 64 heads x P 64 x N 128 = 16,777,216 elements each, in the
  // parameters' dtype (2 bytes: 67,108,864) or with
  // --mamba-training-ssm-states-dtype fp32 in 4 (134,217,728).
  EXPECT_EQ(c.transient_bytes, 159'907'840 + 67'108'864);
  const ValidatedJob fp32_states = testing::ValidatedJobFromArgs(
      Words(kNemotronH8b + "--tensor-model-parallel-size 2 --sequence-parallel "
                           "--mamba-training-ssm-states-dtype fp32"),
      8);
  EXPECT_EQ(HybridLayerCost(fp32_states, HybridLayer::kMamba, nullptr).transient_bytes,
            159'907'840 + 134'217'728);
}

// Selective recompute has no module of a Mamba layer: every module keeps
// what it keeps without it.
TEST(HybridModel, SelectiveRecomputeLeavesMambaLayersWhole) {
  const ValidatedJob j = testing::ValidatedJobFromArgs(
      Words(kNemotronH8b +
            "--tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity "
            "selective --recompute-modules core_attn layernorm mlp"),
      8);
  v1::ModuleNode tree;
  EXPECT_EQ(HybridLayerCost(j, HybridLayer::kMamba, &tree).act_bytes, kMambaLayerAct);
  ExpectModules(tree, MambaTp2Modules());
}

// CP 8 at TP 2: full = 4096 / 8 = 512 tokens. Each rank runs the mixer on
// the whole sequence with 64 / 8 = 8 heads; the 4 groups of a TP rank are
// fewer than the 8 CP ranks, so B and C are repeated (MambaContextParallel:
// ngroups_local_tpcp 1, repeated 2 times): per token of full, zxBCdt is
// 2 x 4096 + 64 + 2 x 8 x 128 = 10,304 wide:
// ssm keeps 2 x 512 x (10304 + 4096) = 14,745,600.
TEST(HybridModel, ContextParallelRepeatsBAndC) {
  const ValidatedJob j = testing::ValidatedJobFromArgs(
      Words(kNemotronH8b +
            "--tensor-model-parallel-size 2 --sequence-parallel --context-parallel-size 8"),
      16);
  v1::ModuleNode tree;
  HybridLayerCost(j, HybridLayer::kMamba, &tree);
  EXPECT_EQ(Node(tree, "mixer/ssm").activation_bytes(), 14'745'600u);
  // out_proj's input: 2 x 512 x 4096.
  EXPECT_EQ(Node(tree, "mixer/out_proj").activation_bytes(), 4'194'304u);
}

// Eight Mamba layers in two '|' segments on PP 2 (TP 2, SP): pipeline rank
// 0 holds 4 layers and the embedding (no dropout: nothing kept), so one
// micro-batch leaves 4 x 210,313,216 = 841,252,864 bytes; under full
// recompute (uniform, 1 layer a group) each layer keeps its input,
// 4 x 16,777,216, and the checkpoint of each group the data loader's
// [b, 1, s, s] bool attention mask, 4096 x 4096 = 16,777,216, alive till the
// chunk's backward (HybridStack's checkpointed_forward passes it, as
// TransformerBlock's does; checkpointed_attention_mask.h): 83,886,080.
TEST(HybridModel, PipelineSegmentsAndFullRecompute) {
  const std::string eight =
      "--hybrid-layer-pattern MMMM|MMMM --hidden-size 4096 --num-attention-heads 32 "
      "--mamba-num-heads 128 --mamba-head-dim 64 --normalization RMSNorm "
      "--position-embedding-type none --disable-bias-linear --vocab-size 131072 "
      "--hidden-dropout 0 --attention-dropout 0 --bf16 --micro-batch-size 1 --seq-length 4096 "
      "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2 ";
  absl::StatusOr<v1::EstimateReport> report = testing::EstimateArgs(Words(eight), 4);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->ranks_size(), 2);
  const v1::ChunkReport& chunk = report->ranks(0).chunks(0);
  EXPECT_EQ(chunk.num_decoder_layers(), 4u);
  EXPECT_TRUE(chunk.has_embedding());
  EXPECT_EQ(chunk.activation_bytes_per_microbatch(), 4 * kMambaLayerAct);
  report =
      testing::EstimateArgs(Words(eight + "--recompute-granularity full --recompute-method uniform "
                                          "--recompute-num-layers 1"),
                            4);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->ranks(0).chunks(0).activation_bytes_per_microbatch(),
            4 * kLayerInput + 4096 * 4096);
  // Four segments on PP 2: two virtual stages per rank, segment i on rank
  // i % 2.
  report = testing::EstimateArgs(
      Words(eight + "--hybrid-layer-pattern MM|MMM|M|MM --global-batch-size 4"), 4);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->virtual_pipeline_chunks(), 2u);
  EXPECT_EQ(report->ranks(0).chunks(0).num_decoder_layers(), 2u);
  EXPECT_EQ(report->ranks(1).chunks(0).num_decoder_layers(), 3u);
  EXPECT_EQ(report->ranks(0).chunks(1).num_decoder_layers(), 1u);
  EXPECT_EQ(report->ranks(1).chunks(1).num_decoder_layers(), 2u);
  EXPECT_TRUE(report->ranks(1).chunks(1).has_loss());
}

// A pattern's layer count replaces --num-layers, as validate_args does.
TEST(HybridModel, ThePatternIsTheModel) {
  const ValidatedJob j = testing::ValidatedJobFromArgs(
      Words(kNemotronH8b + "--num-layers 7 --num-experts 8 --moe-layer-freq 1"), 8);
  EXPECT_EQ(j.model.num_layers, 52);
  // No 'E' in the pattern: no MoE layer, whatever --moe-layer-freq says.
  EXPECT_EQ(std::count(j.moe.is_moe_layer.begin(), j.moe.is_moe_layer.end(), true), 0);
  const ValidatedJob moe =
      testing::ValidatedJobFromArgs(Words(kNemotronH8b + "--hybrid-layer-pattern MEM*E "
                                                         "--num-experts 8 --moe-ffn-hidden-size "
                                                         "1024"),
                                    8);
  EXPECT_EQ(moe.model.num_layers, 5);
  EXPECT_EQ(moe.moe.is_moe_layer, (std::vector<bool>{false, true, false, false, true}));
}

absl::Status Refusal(const std::string& extra, uint32_t gpus = 8) {
  return testing::EstimateArgs(Words(kNemotronH8b + extra), gpus).status();
}

TEST(HybridModel, WhatValidationRefuses) {
  // MambaMixer.__init__: groups and heads over TP; MambaContextParallel.
  absl::Status s =
      Refusal("--tensor-model-parallel-size 8 --sequence-parallel --mamba-num-groups 4");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("parallelism.tensor_model_parallel_size = 8: must divide "
                                     "model.mamba_num_groups 4"));
  s = Refusal("--mamba-num-heads 100");
  EXPECT_THAT(s.message(), HasSubstr("model.mamba_num_groups = 8: must divide "
                                     "model.mamba_num_heads 100"));
  s = Refusal(
      "--mamba-num-groups 6 --tensor-model-parallel-size 2 --sequence-parallel "
      "--context-parallel-size 4 --mamba-num-heads 96",
      8);
  EXPECT_THAT(s.message(), HasSubstr("parallelism.context_parallel_size = 4: must divide, or be "
                                     "a multiple of, model.mamba_num_groups / TP = 3"));
  // validate_args: the pattern defines the pipeline stages.
  s = Refusal("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 13");
  EXPECT_THAT(s.message(), HasSubstr("parallelism.num_layers_per_virtual_pipeline_stage is set "
                                     "with model.hybrid_layer_pattern"));
  s = Refusal("--hybrid-layer-pattern M-|M-|M- --pipeline-model-parallel-size 2");
  EXPECT_THAT(s.message(), HasSubstr("must divide the 3 pipeline segments"));
  v1::JobSpec fp8_states = testing::JobFromArgs(Words(kNemotronH8b), 8);
  fp8_states.mutable_model()->set_mamba_training_ssm_states_dtype(v1::DTYPE_FP8);
  s = Estimate(fp8_states).status();
  EXPECT_THAT(s.message(), HasSubstr("model.mamba_training_ssm_states_dtype = DTYPE_FP8: must be "
                                     "fp32 or bf16"));
  s = Refusal("--hybrid-layer-pattern M-E");
  EXPECT_THAT(s.message(), HasSubstr("has MoE layers (E), which need experts"));
  // Not modelled: UNIMPLEMENTED, naming it.
  s = Refusal("--hybrid-layer-pattern MG*-");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("gated delta net layers (G)"));
  s = Refusal("--hybrid-layer-pattern M*-/M-");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("MTP layers of a hybrid model"));
}

}  // namespace
}  // namespace oomguard
