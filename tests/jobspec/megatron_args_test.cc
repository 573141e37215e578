#include "jobspec/megatron_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// Splits `line` and applies it to `job`.
absl::Status ApplyLine(const std::string& line, ArgsMode mode, v1::JobSpec* job,
                       std::vector<std::string>* notes = nullptr) {
  absl::StatusOr<std::vector<std::string>> args = SplitArgumentLine(line);
  if (!args.ok()) return args.status();
  return ApplyMegatronArgs(*args, mode, job, notes);
}

// Parses a whole command line into a fresh JobSpec; fails the test on error.
v1::JobSpec ParseFull(const std::string& line, std::vector<std::string>* notes = nullptr) {
  v1::JobSpec job;
  absl::Status status = ApplyLine(line, ArgsMode::kFullCommandLine, &job, notes);
  EXPECT_TRUE(status.ok()) << status << " for: " << line;
  return job;
}

absl::Status ParseError(const std::string& line, ArgsMode mode = ArgsMode::kFullCommandLine) {
  v1::JobSpec job;
  return ApplyLine(line, mode, &job);
}

std::vector<uint32_t> Repeat(uint32_t value, int count) {
  return std::vector<uint32_t>(static_cast<size_t>(count), value);
}

std::vector<uint32_t> Concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<uint32_t> Pattern(const v1::JobSpec& job) {
  return {job.model().moe_layer_pattern().begin(), job.model().moe_layer_pattern().end()};
}

// ---------------------------------------------------------------------------
// SplitArgumentLine

TEST(SplitArgumentLineTest, SplitsOnWhitespace) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("  --num-layers\t32 \n --bf16  ");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--num-layers", "32", "--bf16"));
}

TEST(SplitArgumentLineTest, EmptyLineHasNoWords) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(" \t\n");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, IsEmpty());
}

TEST(SplitArgumentLineTest, QuotesAndEscapes) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine(R"(--moe-layer-freq '([0]*3+[1]*58)' --layout "Et|(tt|)*30mL" )"
                        R"(a\ b "q\"d\\e\$f\`g\n" 'x\y' '' "")");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--moe-layer-freq", "([0]*3+[1]*58)", "--layout", "Et|(tt|)*30mL",
                                  "a b", R"(q"d\e$f`g\n)", R"(x\y)", "", ""));
}

TEST(SplitArgumentLineTest, AdjacentQuotedPartsFormOneWord) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(R"(--a='x y'"z"w)");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, ElementsAre("--a=x yzw"));
}

TEST(SplitArgumentLineTest, BackslashNewlineIsAContinuation) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("--num-layers 4 \\\n  --hidden-size 1\\\n024 \\\r\n --bf16 \"a\\\nb\"");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--num-layers", "4", "--hidden-size", "1024", "--bf16", "ab"));
}

TEST(SplitArgumentLineTest, NeverExpandsOrExecutes) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("--data-path $(rm -rf /) `id` ${HOME} $HOME a;b c|d \"$(x)\" '`y`'");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--data-path", "$(rm", "-rf", "/)", "`id`", "${HOME}", "$HOME",
                                  "a;b", "c|d", "$(x)", "`y`"));
}

TEST(SplitArgumentLineTest, TrailingBackslashStaysLiteral) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine("a\\");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, ElementsAre("a\\"));
}

TEST(SplitArgumentLineTest, UnterminatedQuotesAreErrors) {
  for (const char* line : {"--a 'open", "--a \"open", "--a \"x\\\""}) {
    absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(line);
    EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(words.status().message(), HasSubstr("unterminated")) << line;
  }
}

TEST(SplitArgumentLineTest, RejectsLinesOverOneMebibyte) {
  const std::string at_limit(size_t{1} << 20, 'x');
  EXPECT_TRUE(SplitArgumentLine(at_limit).ok());
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(at_limit + "x");
  EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(words.status().message(), HasSubstr("argument line longer than 1048576 bytes"));
}

// ---------------------------------------------------------------------------
// Whole command lines.

constexpr char kDeepSeekV3Line[] =
    "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 "
    "--num-attention-heads 128 --kv-channels 128 --vocab-size 129280 "
    "--make-vocab-size-divisible-by 3232 --max-position-embeddings 4096 "
    "--seq-length 4096 --micro-batch-size 1 --global-batch-size 8192 "
    "--normalization RMSNorm --norm-epsilon 1e-6 --swiglu "
    "--position-embedding-type rope --rotary-base 10000 "
    "--rotary-scaling-factor 40 --mscale 1.0 --mscale-all-dim 1.0 "
    "--disable-bias-linear --untie-embeddings-and-output-weights "
    "--attention-dropout 0.0 --hidden-dropout 0.0 --qk-layernorm "
    "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 "
    "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 "
    "--num-experts 256 --moe-layer-freq ([0]*3+[1]*58) "
    "--moe-ffn-hidden-size 2048 --moe-shared-expert-intermediate-size 2048 "
    "--moe-router-topk 8 --moe-router-score-function sigmoid "
    "--moe-router-enable-expert-bias --moe-router-dtype fp32 "
    "--moe-grouped-gemm --moe-token-dispatcher-type flex "
    "--moe-permute-fusion --moe-aux-loss-coeff 1e-4 --mtp-num-layers 1 "
    "--mtp-loss-scaling-factor 0.1 "
    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 16 "
    "--expert-model-parallel-size 64 --expert-tensor-parallel-size 1 "
    "--context-parallel-size 1 --sequence-parallel "
    "--pipeline-model-parallel-layout Et|(tt|)*30mL "
    "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
    "--bf16 --transformer-impl transformer_engine --attention-backend auto "
    "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te "
    "--recompute-granularity selective --recompute-modules mla_up_proj "
    "moe_act layernorm --tokenizer-type HuggingFaceTokenizer "
    "--tokenizer-model deepseek-ai/DeepSeek-V3 --data-path /data/x "
    "--lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --weight-decay 0.1 "
    "--clip-grad 1.0 --train-iters 1000 --log-interval 1 --save /ckpt";

TEST(ApplyMegatronArgsTest, DeepSeekV3Line) {
  std::vector<std::string> notes;
  const v1::JobSpec job = ParseFull(kDeepSeekV3Line, &notes);
  EXPECT_THAT(notes, IsEmpty());

  const v1::ModelSpec& m = job.model();
  EXPECT_EQ(m.num_layers(), 61u);
  EXPECT_EQ(m.hidden_size(), 7168u);
  EXPECT_EQ(m.ffn_hidden_size(), 18432u);
  EXPECT_EQ(m.num_attention_heads(), 128u);
  EXPECT_FALSE(m.has_num_query_groups());
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.vocab_size(), 129280u);
  EXPECT_EQ(m.make_vocab_size_divisible_by(), 3232u);
  EXPECT_EQ(m.max_position_embeddings(), 4096u);
  EXPECT_EQ(m.activation(), v1::ACTIVATION_SWIGLU);
  EXPECT_EQ(m.normalization(), v1::NORMALIZATION_RMS_NORM);
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_ROPE);
  ASSERT_TRUE(m.has_add_bias_linear());
  EXPECT_FALSE(m.add_bias_linear());
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  EXPECT_TRUE(m.qk_layernorm());
  EXPECT_EQ(m.hidden_dropout(), 0.0);
  EXPECT_TRUE(m.has_attention_dropout());
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA);
  EXPECT_EQ(m.q_lora_rank(), 1536u);
  EXPECT_EQ(m.kv_lora_rank(), 512u);
  EXPECT_EQ(m.qk_head_dim(), 128u);
  EXPECT_EQ(m.qk_pos_emb_head_dim(), 64u);
  EXPECT_EQ(m.v_head_dim(), 128u);
  EXPECT_EQ(m.num_experts(), 256u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 2048u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2048u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_FALSE(m.has_moe_layer_freq());
  EXPECT_EQ(Pattern(job), Concat(Repeat(0, 3), Repeat(1, 58)));
  EXPECT_TRUE(m.moe_grouped_gemm());
  EXPECT_EQ(m.moe_token_dispatcher(), v1::TOKEN_DISPATCHER_FLEX);
  EXPECT_TRUE(m.moe_router_dtype_fp32());
  EXPECT_EQ(m.mtp_num_layers(), 1u);

  const v1::ParallelismSpec& p = job.parallelism();
  EXPECT_EQ(p.num_gpus(), 0u);  // Not a Megatron flag: the caller sets it.
  EXPECT_EQ(p.tensor_model_parallel_size(), 2u);
  EXPECT_EQ(p.pipeline_model_parallel_size(), 16u);
  EXPECT_EQ(p.expert_model_parallel_size(), 64u);
  EXPECT_EQ(p.expert_tensor_parallel_size(), 1u);
  EXPECT_EQ(p.context_parallel_size(), 1u);
  EXPECT_TRUE(p.sequence_parallel());
  EXPECT_EQ(p.pipeline_model_parallel_layout(), "Et|(tt|)*30mL");

  const v1::TrainingSpec& t = job.training();
  EXPECT_EQ(t.micro_batch_size(), 1u);
  EXPECT_EQ(t.global_batch_size(), 8192u);
  EXPECT_EQ(t.seq_length(), 4096u);
  EXPECT_EQ(t.attention_backend(), v1::ATTENTION_BACKEND_UNSPECIFIED);
  EXPECT_EQ(t.transformer_impl(), v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE);
  EXPECT_EQ(t.cross_entropy_fusion(), v1::CROSS_ENTROPY_FUSION_TE);
  EXPECT_FALSE(t.has_rope_fusion());

  EXPECT_EQ(job.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(job.recompute().modules(),
              ElementsAre(v1::RECOMPUTE_MODULE_MLA_UP_PROJ, v1::RECOMPUTE_MODULE_MOE_ACT,
                          v1::RECOMPUTE_MODULE_LAYERNORM));
  EXPECT_EQ(job.precision().params_dtype(), v1::DTYPE_BF16);
  EXPECT_TRUE(job.precision().use_distributed_optimizer());
  EXPECT_EQ(job.precision().main_grads_dtype(), v1::DTYPE_UNSPECIFIED);
}

TEST(ApplyMegatronArgsTest, LlamaStyleDenseLine) {
  const v1::JobSpec job = ParseFull(
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
      "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
      "--vocab-size 128256 --seq-length 8192 --max-position-embeddings 8192 "
      "--micro-batch-size 1 --global-batch-size 128 --swiglu "
      "--normalization RMSNorm --position-embedding-type rope --no-rope-fusion "
      "--disable-bias-linear --fp16 --use-flash-attn --transformer-impl local "
      "--recompute-granularity full --recompute-method block "
      "--recompute-num-layers 4 --grad-reduce-in-bf16");
  EXPECT_EQ(job.model().num_query_groups(), 8u);
  EXPECT_EQ(job.model().vocab_size(), 128256u);
  EXPECT_EQ(job.model().activation(), v1::ACTIVATION_SWIGLU);
  ASSERT_TRUE(job.training().has_rope_fusion());
  EXPECT_FALSE(job.training().rope_fusion());
  EXPECT_EQ(job.training().attention_backend(), v1::ATTENTION_BACKEND_FLASH);
  EXPECT_EQ(job.training().transformer_impl(), v1::TRANSFORMER_IMPL_LOCAL);
  EXPECT_EQ(job.precision().params_dtype(), v1::DTYPE_FP16);
  EXPECT_EQ(job.precision().main_grads_dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(job.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(job.recompute().method(), v1::RECOMPUTE_METHOD_BLOCK);
  EXPECT_EQ(job.recompute().num_layers(), 4u);
  EXPECT_THAT(job.recompute().modules(), IsEmpty());
}

TEST(ApplyMegatronArgsTest, FullModeDefaults) {
  std::vector<std::string> notes;
  const v1::JobSpec job = ParseFull(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
      "--seq-length 128 --micro-batch-size 1",
      &notes);
  EXPECT_EQ(job.precision().params_dtype(), v1::DTYPE_FP32);
  EXPECT_EQ(job.model().vocab_size(), 50257u);
  EXPECT_FALSE(job.model().has_num_query_groups());
  EXPECT_THAT(notes, ElementsAre("vocab size not given by --vocab-size; assumed 50257 "
                                 "(GPT-2 BPE, Megatron's test default); pass "
                                 "--vocab-size for exact logits memory"));
}

TEST(ApplyMegatronArgsTest, EqualsFormUnderscoresAndOverrides) {
  const v1::JobSpec job = ParseFull(
      "--num_layers=12 --hidden-size=1024 --num-layers 24 "
      "--use_distributed_optimizer --tensor_model_parallel_size=4 "
      "--hidden-dropout=0.25 --recompute-modules=mlp "
      "--recompute-modules core_attn moe_act core_attn "
      "--attention-backend flash --attention-backend=unfused "
      "--squared-relu --swiglu");
  EXPECT_EQ(job.model().num_layers(), 24u);
  EXPECT_EQ(job.model().hidden_size(), 1024u);
  EXPECT_TRUE(job.precision().use_distributed_optimizer());
  EXPECT_EQ(job.parallelism().tensor_model_parallel_size(), 4u);
  EXPECT_DOUBLE_EQ(job.model().hidden_dropout(), 0.25);
  EXPECT_THAT(job.recompute().modules(),
              ElementsAre(v1::RECOMPUTE_MODULE_CORE_ATTN, v1::RECOMPUTE_MODULE_MOE_ACT));
  EXPECT_EQ(job.training().attention_backend(), v1::ATTENTION_BACKEND_UNFUSED);
  EXPECT_EQ(job.model().activation(), v1::ACTIVATION_SWIGLU);
}

TEST(ApplyMegatronArgsTest, ParallelismFlags) {
  const v1::JobSpec job = ParseFull(
      "--pipeline-model-parallel-size 4 "
      "--num-layers-per-virtual-pipeline-stage 2 "
      "--num-virtual-stages-per-pipeline-rank 3 "
      "--microbatch-group-size-per-virtual-pipeline-stage 5 "
      "--decoder-first-pipeline-num-layers 6 "
      "--decoder-last-pipeline-num-layers 7 "
      "--account-for-embedding-in-pipeline-split "
      "--account-for-loss-in-pipeline-split "
      "--overlap-moe-expert-parallel-comm --vocab-size 8");
  const v1::ParallelismSpec& p = job.parallelism();
  EXPECT_EQ(p.pipeline_model_parallel_size(), 4u);
  EXPECT_EQ(p.num_layers_per_virtual_pipeline_stage(), 2u);
  EXPECT_EQ(p.num_virtual_stages_per_pipeline_rank(), 3u);
  EXPECT_EQ(p.microbatch_group_size_per_vp_stage(), 5u);
  EXPECT_EQ(p.decoder_first_pipeline_num_layers(), 6u);
  EXPECT_EQ(p.decoder_last_pipeline_num_layers(), 7u);
  EXPECT_TRUE(p.account_for_embedding_in_pipeline_split());
  EXPECT_TRUE(p.account_for_loss_in_pipeline_split());
  EXPECT_TRUE(p.overlap_moe_expert_parallel_comm());
  EXPECT_FALSE(p.has_tensor_model_parallel_size());
}

TEST(ApplyMegatronArgsTest, ModelFlagsWithoutDefaults) {
  const v1::JobSpec job = ParseFull(
      "--add-qkv-bias --position-embedding-type yarn "
      "--normalization LayerNorm --attention-dropout 0.5 "
      "--moe-router-force-load-balancing --moe-expert-capacity-factor 1.5 "
      "--moe-pad-expert-input-to-capacity --moe-token-dispatcher-type alltoall "
      "--moe-router-dtype bf16 --moe-layer-freq 2 --vocab-size 8");
  const v1::ModelSpec& m = job.model();
  EXPECT_TRUE(m.add_qkv_bias());
  EXPECT_FALSE(m.has_add_bias_linear());
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_ROPE);
  EXPECT_EQ(m.normalization(), v1::NORMALIZATION_LAYER_NORM);
  EXPECT_DOUBLE_EQ(m.attention_dropout(), 0.5);
  EXPECT_TRUE(m.moe_router_force_load_balancing());
  EXPECT_DOUBLE_EQ(m.moe_expert_capacity_factor(), 1.5);
  EXPECT_TRUE(m.moe_pad_expert_input_to_capacity());
  EXPECT_EQ(m.moe_token_dispatcher(), v1::TOKEN_DISPATCHER_ALLTOALL);
  EXPECT_FALSE(m.moe_router_dtype_fp32());
  EXPECT_EQ(m.moe_layer_freq(), 2u);
  EXPECT_THAT(m.moe_layer_pattern(), IsEmpty());
  EXPECT_EQ(ParseFull("--moe-router-dtype fp64 --vocab-size 8").model().moe_router_dtype_fp32(),
            true);
  EXPECT_EQ(ParseFull("--position-embedding-type none --vocab-size 8").model().position_embedding(),
            v1::POSITION_EMBEDDING_NONE);
  EXPECT_EQ(ParseFull("--position-embedding-type learned_absolute "
                      "--vocab-size 8")
                .model()
                .position_embedding(),
            v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
}

TEST(ApplyMegatronArgsTest, PrecisionAndOptimizerFlags) {
  const v1::JobSpec job = ParseFull(
      "--bf16 --fp8-format hybrid --fp8-recipe blockwise --fp8-param-gather "
      "--optimizer dist_muon --use-precision-aware-optimizer "
      "--main-params-dtype fp16 --main-grads-dtype bf16 --exp-avg-dtype fp8 "
      "--exp-avg-sq-dtype bf16 --optimizer-cpu-offload "
      "--optimizer-offload-fraction 0.5 --vocab-size 8");
  const v1::PrecisionSpec& p = job.precision();
  EXPECT_EQ(p.params_dtype(), v1::DTYPE_BF16);
  EXPECT_TRUE(p.fp8());
  EXPECT_TRUE(p.fp8_param_gather());
  EXPECT_EQ(p.optimizer(), v1::OPTIMIZER_MUON);
  EXPECT_TRUE(p.use_precision_aware_optimizer());
  EXPECT_EQ(p.main_params_dtype(), v1::DTYPE_FP16);
  EXPECT_EQ(p.main_grads_dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(p.exp_avg_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(p.exp_avg_sq_dtype(), v1::DTYPE_BF16);
  EXPECT_TRUE(p.optimizer_cpu_offload());
  EXPECT_DOUBLE_EQ(p.optimizer_offload_fraction(), 0.5);

  const v1::JobSpec sgd = ParseFull(
      "--optimizer sgd --grad-reduce-in-bf16 "
      "--accumulate-allreduce-grads-in-fp32 --vocab-size 8");
  EXPECT_EQ(sgd.precision().optimizer(), v1::OPTIMIZER_SGD);
  EXPECT_EQ(sgd.precision().main_grads_dtype(), v1::DTYPE_FP32);
}

TEST(ApplyMegatronArgsTest, RecomputeAndOffloadFlags) {
  const v1::JobSpec job = ParseFull(
      "--recompute-activations --cpu-offloading --cpu-offloading-num-layers 3 "
      "--fine-grained-activation-offloading --offload-modules expert_fc1 "
      "moe_act attn_norm --vocab-size 8");
  const v1::RecomputeSpec& r = job.recompute();
  EXPECT_EQ(r.granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(r.modules(), IsEmpty());
  EXPECT_TRUE(r.cpu_offloading());
  EXPECT_EQ(r.cpu_offloading_num_layers(), 3u);
  EXPECT_TRUE(r.fine_grained_activation_offloading());
  EXPECT_THAT(r.offload_modules(), ElementsAre("expert_fc1", "moe_act", "attn_norm"));

  const v1::JobSpec all = ParseFull(
      "--recompute-method uniform --recompute-modules core_attn moe_act "
      "layernorm mla_up_proj mlp moe shared_experts --vocab-size 8");
  EXPECT_EQ(all.recompute().method(), v1::RECOMPUTE_METHOD_UNIFORM);
  EXPECT_THAT(all.recompute().modules(), SizeIs(7));
}

TEST(ApplyMegatronArgsTest, RuntimeFlags) {
  const v1::JobSpec job = ParseFull(
      "--cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp "
      "moe_router --use-nccl-ub --vocab-size 8");
  EXPECT_EQ(job.runtime().cuda_graph_impl(), v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE);
  EXPECT_THAT(job.runtime().cuda_graph_modules(), ElementsAre("attn", "mlp", "moe_router"));
  EXPECT_TRUE(job.runtime().use_nccl_ub());

  EXPECT_EQ(ParseFull("--enable-cuda-graph --vocab-size 8").runtime().cuda_graph_impl(),
            v1::CUDA_GRAPH_IMPL_LOCAL);
  const v1::JobSpec scoped = ParseFull(
      "--external-cuda-graph --cuda-graph-scope moe_router moe_preprocess "
      "--vocab-size 8");
  EXPECT_EQ(scoped.runtime().cuda_graph_impl(), v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE);
  EXPECT_THAT(scoped.runtime().cuda_graph_modules(), ElementsAre("moe_router", "moe_preprocess"));
}

TEST(ApplyMegatronArgsTest, TransformerImplWords) {
  EXPECT_EQ(ParseFull("--transformer-impl inference_optimized --vocab-size 8")
                .training()
                .transformer_impl(),
            v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE);
  EXPECT_EQ(ParseFull("--attention-backend local --vocab-size 8").training().attention_backend(),
            v1::ATTENTION_BACKEND_LOCAL);
  EXPECT_EQ(ParseFull("--attention-backend fused --vocab-size 8").training().attention_backend(),
            v1::ATTENTION_BACKEND_FUSED);
}

// ---------------------------------------------------------------------------
// Flags that depend on each other.

TEST(ApplyMegatronArgsTest, QueryGroupsNeedGroupQueryAttentionInFullMode) {
  std::vector<std::string> notes;
  const v1::JobSpec mha = ParseFull("--num-query-groups 8 --vocab-size 8", &notes);
  EXPECT_FALSE(mha.model().has_num_query_groups());
  EXPECT_THAT(notes, ElementsAre(HasSubstr("--group-query-attention")));

  EXPECT_EQ(ParseFull("--num-query-groups 8 --group-query-attention "
                      "--vocab-size 8")
                .model()
                .num_query_groups(),
            8u);
  // Megatron's --num-query-groups default is 1.
  EXPECT_EQ(ParseFull("--group-query-attention --vocab-size 8").model().num_query_groups(), 1u);

  v1::JobSpec preset;
  preset.mutable_model()->set_num_query_groups(4);
  ASSERT_TRUE(ApplyLine("--num-query-groups 2", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.model().num_query_groups(), 2u);
  ASSERT_TRUE(ApplyLine("--group-query-attention", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.model().num_query_groups(), 2u);
}

TEST(ApplyMegatronArgsTest, CrossEntropyFusionFlagOrderDoesNotMatter) {
  struct Case {
    const char* line;
    v1::CrossEntropyFusion expected;
  };
  const Case cases[] = {
      {"--cross-entropy-loss-fusion", v1::CROSS_ENTROPY_FUSION_NATIVE},
      {"--cross-entropy-loss-fusion --cross-entropy-fusion-impl te", v1::CROSS_ENTROPY_FUSION_TE},
      {"--cross-entropy-fusion-impl te --cross-entropy-loss-fusion", v1::CROSS_ENTROPY_FUSION_TE},
      {"--cross-entropy-fusion-impl native --cross-entropy-loss-fusion",
       v1::CROSS_ENTROPY_FUSION_NATIVE},
      {"--cross-entropy-fusion-impl te", v1::CROSS_ENTROPY_FUSION_UNSPECIFIED},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseFull(absl::StrCat(c.line, " --vocab-size 8")).training().cross_entropy_fusion(),
              c.expected)
        << c.line;
  }
  v1::JobSpec preset;
  preset.mutable_training()->set_cross_entropy_fusion(v1::CROSS_ENTROPY_FUSION_NATIVE);
  ASSERT_TRUE(ApplyLine("--cross-entropy-fusion-impl te", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.training().cross_entropy_fusion(), v1::CROSS_ENTROPY_FUSION_TE);
}

TEST(ApplyMegatronArgsTest, VocabFromTokenizerType) {
  struct Case {
    const char* tokenizer;
    uint32_t vocab;
    bool noted;
  };
  const Case cases[] = {
      {"GPT2BPETokenizer", 50257, false},         {"Llama2Tokenizer", 32000, true},
      {"BertWordPieceLowerCase", 30522, true},    {"BertWordPieceCase", 30522, true},
      {"GPTSentencePieceTokenizer", 50257, true}, {"HuggingFaceTokenizer", 50257, true},
  };
  for (const Case& c : cases) {
    std::vector<std::string> notes;
    const v1::JobSpec job = ParseFull(absl::StrCat("--tokenizer-type ", c.tokenizer), &notes);
    EXPECT_EQ(job.model().vocab_size(), c.vocab) << c.tokenizer;
    EXPECT_EQ(notes.size(), c.noted ? 1u : 0u) << c.tokenizer;
  }
  EXPECT_EQ(ParseFull("--tokenizer-type GPT2BPETokenizer --vocab-size 1000").model().vocab_size(),
            1000u);
}

TEST(ApplyMegatronArgsTest, NullTokenizerNeedsVocabSizeAndAddsEod) {
  absl::Status status = ParseError("--tokenizer-type NullTokenizer");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--vocab-size"));

  EXPECT_EQ(ParseFull("--tokenizer-type NullTokenizer --vocab-size 8192").model().vocab_size(),
            8193u);
}

TEST(ApplyMegatronArgsTest, StepBatchSizeScheduleGivesFinalBatchSize) {
  std::vector<std::string> notes;
  const v1::JobSpec job =
      ParseFull("--step-batch-size-schedule 0:384 200B:768 400B:1152 --vocab-size 8", &notes);
  EXPECT_EQ(job.training().global_batch_size(), 1152u);
  EXPECT_THAT(notes, ElementsAre(HasSubstr("final global batch size")));

  const v1::JobSpec quoted = ParseFull(
      "--step-batch-size-schedule '0:384 200B:768' --global-batch-size 64 "
      "--rampup-batch-size 16 16 1000 --vocab-size 8");
  EXPECT_EQ(quoted.training().global_batch_size(), 64u);
}

// ---------------------------------------------------------------------------
// --moe-layer-freq expressions.

TEST(MoeLayerFreqTest, EvaluatesListExpressions) {
  struct Case {
    const char* expression;
    std::vector<uint32_t> pattern;
  };
  const Case cases[] = {
      {"([0]*3+[1]*11)", Concat(Repeat(0, 3), Repeat(1, 11))},
      {"[1]*48", Repeat(1, 48)},
      {"[0,1,0,1]", {0, 1, 0, 1}},
      {"[0]*1+[1]*15", Concat(Repeat(0, 1), Repeat(1, 15))},
      {"( [0] * 2 + 3 * [1] )", {0, 0, 1, 1, 1}},
      {"([0,1]*2+[1,])*2", {0, 1, 0, 1, 1, 0, 1, 0, 1, 1}},
      {"[1]*(2+1)", {1, 1, 1}},
  };
  for (const Case& c : cases) {
    v1::JobSpec job;
    ASSERT_TRUE(ApplyMegatronArgs({absl::StrCat("--moe-layer-freq=", c.expression)},
                                  ArgsMode::kFullCommandLine, &job, nullptr)
                    .ok())
        << c.expression;
    EXPECT_EQ(Pattern(job), c.pattern) << c.expression;
    EXPECT_FALSE(job.model().has_moe_layer_freq()) << c.expression;
  }
}

TEST(MoeLayerFreqTest, LaterIntegerReplacesPattern) {
  const v1::JobSpec job = ParseFull("--moe-layer-freq [1]*4 --moe-layer-freq 3 --vocab-size 8");
  EXPECT_EQ(job.model().moe_layer_freq(), 3u);
  EXPECT_THAT(job.model().moe_layer_pattern(), IsEmpty());
}

TEST(MoeLayerFreqTest, RejectsOtherExpressions) {
  const std::string deep = std::string(100, '(') + "[1]" + std::string(100, ')');
  for (const std::string& expression : std::vector<std::string>{
           "[2]*3", "[1]*", "[1]*[1]", "[0]+1", "foo", "[1]*100000", "[]", "([0]*3+[1]*11",
           "[1]*3)", "[1.5]", "__import__('os')", deep, "-1"}) {
    v1::JobSpec job;
    absl::Status status = ApplyMegatronArgs({"--moe-layer-freq", expression},
                                            ArgsMode::kFullCommandLine, &job, nullptr);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expression;
    EXPECT_THAT(status.message(), HasSubstr("--moe-layer-freq")) << expression;
    EXPECT_THAT(status.message(), HasSubstr(expression.substr(0, 40))) << expression;
  }
}

// ---------------------------------------------------------------------------
// Errors.

TEST(ApplyMegatronArgsTest, BadValuesNameTheFlagAndTheValue) {
  struct Case {
    const char* line;
    const char* message;
  };
  const Case cases[] = {
      {"--num-layers -4", R"(--num-layers: expected a non-negative integer, got "-4")"},
      {"--num-layers 4x", R"(--num-layers: expected a non-negative integer, got "4x")"},
      {"--hidden-size 99999999999",
       R"(--hidden-size: expected a non-negative integer, got "99999999999")"},
      {"--num_layers=+4", R"(--num_layers: expected a non-negative integer, got "+4")"},
      {"--seq-length 1.5", R"(--seq-length: expected a non-negative integer)"},
      {"--hidden-dropout 1.0", R"(--hidden-dropout: expected a number in [0, 1), got "1.0")"},
      {"--attention-dropout -0.1",
       R"(--attention-dropout: expected a number in [0, 1), got "-0.1")"},
      {"--hidden-dropout nan", R"(--hidden-dropout: expected a number)"},
      {"--optimizer-offload-fraction 1.5",
       R"(--optimizer-offload-fraction: expected a number in [0, 1], got "1.5")"},
      {"--moe-expert-capacity-factor 0",
       R"(--moe-expert-capacity-factor: expected a positive number, got "0")"},
      {"--moe-expert-capacity-factor inf",
       R"(--moe-expert-capacity-factor: expected a positive number, got "inf")"},
      {"--recompute-modules core_attn attn",
       R"(--recompute-modules: expected one of core_attn|moe_act|layernorm|mla_up_proj|mlp|moe|shared_experts, got "attn")"},
      {"--normalization rmsnorm",
       R"(--normalization: expected one of LayerNorm|RMSNorm, got "rmsnorm")"},
      {"--position-embedding-type alibi", R"(--position-embedding-type: expected one of)"},
      {"--optimizer adagrad", R"(--optimizer: expected one of)"},
      {"--exp-avg-dtype int8", R"(--exp-avg-dtype: expected one of)"},
      {"--recompute-granularity partial", R"(--recompute-granularity: expected one of)"},
      {"--cuda-graph-impl cudnn", R"(--cuda-graph-impl: expected one of)"},
      {"--moe-token-dispatcher-type deepep", R"(--moe-token-dispatcher-type: expected one of)"},
      {"--cross-entropy-fusion-impl triton",
       R"(--cross-entropy-fusion-impl: expected one of native|te, got "triton")"},
      {"--num-layers", "--num-layers: missing value"},
      {"--num-layers --hidden-size 4", "--num-layers: missing value"},
      {"--bf16=yes", R"(--bf16 takes no value, got "yes")"},
      {"--bf16=", R"(--bf16 takes no value, got "")"},
      {"--bf16 yes", R"(--bf16 takes no value, got "yes")"},
      {"--num-layers 4 5", R"(unexpected argument "5" after --num-layers)"},
      {"pretrain_gpt.py --num-layers 4", R"(unexpected argument "pretrain_gpt.py")"},
      {"--bf16 -x", R"(unexpected argument "-x" after --bf16)"},
      {"--bf16 --fp16", "--bf16 and --fp16 cannot both be given"},
      {"--", R"(empty flag name in "--")"},
      {"--num-layers 4\x01", R"(got "4\x01")"},
      {"--tokenizer-type a --num-layers \"\\\"\"", R"(got "\"")"},
  };
  for (const Case& c : cases) {
    absl::Status status = ParseError(c.line);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.line;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.line;
  }
}

TEST(ApplyMegatronArgsTest, LongBadValuesAreTruncatedInMessages) {
  v1::JobSpec job;
  absl::Status status = ApplyMegatronArgs({"--num-layers", std::string(10000, '9')},
                                          ArgsMode::kFullCommandLine, &job, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), 200u);
}

TEST(ApplyMegatronArgsTest, FsdpIsUnimplemented) {
  for (const char* flag : {"--use-torch-fsdp2", "--use-megatron-fsdp", "--use_custom_fsdp"}) {
    absl::Status status = ParseError(absl::StrCat("--num-layers 2 ", flag, " --bf16"));
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << flag;
    EXPECT_THAT(status.message(), HasSubstr(flag));
  }
}

// ---------------------------------------------------------------------------
// Notes.

TEST(ApplyMegatronArgsTest, UnknownFlagsAreSkippedWithANote) {
  std::vector<std::string> notes;
  const v1::JobSpec job = ParseFull(
      "--frobnicate 1 2 -3 --num-layers 4 --shiny-new-switch "
      "--tp-comm-overlap --vocab-size 8",
      &notes);
  EXPECT_EQ(job.model().num_layers(), 4u);
  EXPECT_THAT(notes, ElementsAre("ignored unknown flag --frobnicate",
                                 "ignored unknown flag --shiny-new-switch",
                                 HasSubstr("--tp-comm-overlap")));
}

TEST(ApplyMegatronArgsTest, MemoryIrrelevantFlagsAreSilent) {
  std::vector<std::string> notes;
  ParseFull(
      "--vocab-size 8 --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine "
      "--lr-warmup-iters 100 --adam-beta1 0.9 --adam-beta2 0.95 "
      "--adam-eps 1e-8 --weight-decay 0.1 --clip-grad 1.0 --seed 1234 "
      "--init-method-std 0.02 --tokenizer-model /m --data-path 1.0 /d "
      "--split 99,1,0 --eval-iters 10 --eval-interval 1000 --save /s "
      "--load /l --save-interval 500 --log-interval 1 "
      "--log-throughput --tensorboard-dir /tb --wandb-project p "
      "--distributed-backend nccl --distributed-timeout-minutes 60 "
      "--use-mcore-models --manual-gc --manual-gc-interval 10 "
      "--overlap-grad-reduce --overlap-param-gather "
      "--no-gradient-accumulation-fusion --attention-softmax-in-fp32 "
      "--rotary-base 10000 --rotary-percent 0.5 --mscale 1.0 "
      "--norm-epsilon 1e-5 --apply-layernorm-1p "
      "--moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2 "
      "--moe-permute-fusion --no-check-for-nan-in-loss-and-grad "
      "--train-iters 100 --train-samples 1000 --exit-interval 5 "
      "--use-checkpoint-opt_param-scheduler",
      &notes);
  EXPECT_THAT(notes, IsEmpty());
}

TEST(ApplyMegatronArgsTest, NotesAreDeduplicatedAndBounded) {
  std::vector<std::string> notes = {"a note from the caller"};
  v1::JobSpec job;
  ASSERT_TRUE(ApplyMegatronArgs({"--same", "--same", "--vocab-size", "8"},
                                ArgsMode::kFullCommandLine, &job, &notes)
                  .ok());
  EXPECT_THAT(notes, ElementsAre("a note from the caller", "ignored unknown flag --same"));

  std::vector<std::string> args;
  for (int i = 0; i < 1000; ++i) args.push_back(absl::StrCat("--unknown-", i));
  notes.clear();
  ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kOverrides, &job, &notes).ok());
  ASSERT_THAT(notes, SizeIs(65));
  EXPECT_EQ(notes.front(), "ignored unknown flag --unknown-0");
  EXPECT_EQ(notes.back(), "further notes omitted");
}

TEST(ApplyMegatronArgsTest, NullNotesAreAllowed) {
  v1::JobSpec job;
  EXPECT_TRUE(ApplyMegatronArgs({"--unknown", "--num-layers", "1"}, ArgsMode::kFullCommandLine,
                                &job, nullptr)
                  .ok());
  EXPECT_EQ(job.model().num_layers(), 1u);
}

// ---------------------------------------------------------------------------
// Override mode.

TEST(ApplyMegatronArgsTest, OverrideModeKeepsPresetFields) {
  v1::JobSpec preset;
  v1::ModelSpec* model = preset.mutable_model();
  model->set_name("Qwen3-30B-A3B");
  model->set_num_layers(48);
  model->set_hidden_size(2048);
  model->set_num_attention_heads(32);
  model->set_num_query_groups(4);
  model->set_vocab_size(151936);
  model->set_num_experts(128);
  model->mutable_moe_layer_pattern()->Add(1);
  preset.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  preset.mutable_parallelism()->set_num_gpus(32);
  const v1::JobSpec before = preset;

  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyLine("--tensor-model-parallel-size 4 --seq-length 10240 "
                        "--recompute-granularity full --recompute-method "
                        "uniform --recompute-num-layers 1 "
                        "--tokenizer-type GPT2BPETokenizer",
                        ArgsMode::kOverrides, &preset, &notes)
                  .ok());
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_EQ(preset.model().SerializeAsString(), before.model().SerializeAsString());
  EXPECT_EQ(preset.precision().params_dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(preset.parallelism().num_gpus(), 32u);
  EXPECT_EQ(preset.parallelism().tensor_model_parallel_size(), 4u);
  EXPECT_EQ(preset.training().seq_length(), 10240u);
  EXPECT_EQ(preset.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);

  ASSERT_TRUE(ApplyLine("--vocab-size 1000 --fp16", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.model().vocab_size(), 1000u);
  EXPECT_EQ(preset.precision().params_dtype(), v1::DTYPE_FP16);
}

TEST(ApplyMegatronArgsTest, NullJobIsAnError) {
  EXPECT_EQ(ApplyMegatronArgs({}, ArgsMode::kOverrides, nullptr, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// ApplyEnvironment

TEST(ApplyEnvironmentTest, ExpandableSegments) {
  struct Case {
    const char* conf;
    bool expandable;
  };
  const Case cases[] = {
      {"expandable_segments:True", true},
      {"max_split_size_mb:512, expandable_segments : true", true},
      {"expandable_segments:TRUE,garbage_collection_threshold:0.6", true},
      {"expandable_segments:False", false},
      {"expandable_segments:True,expandable_segments:False", false},
      {"max_split_size_mb:512", false},
      {"", false},
  };
  for (const Case& c : cases) {
    v1::JobSpec job;
    ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", std::string(c.conf)}}, &job);
    EXPECT_EQ(job.runtime().expandable_segments(), c.expandable) << c.conf;
  }
  v1::JobSpec preset;
  preset.mutable_runtime()->set_expandable_segments(true);
  ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"}}, &preset);
  EXPECT_FALSE(preset.runtime().expandable_segments());
  ApplyEnvironment({{"PYTORCH_ALLOC_CONF", "expandable_segments:True"}}, &preset);
  EXPECT_TRUE(preset.runtime().expandable_segments());
}

TEST(ApplyEnvironmentTest, NcclGraphRegister) {
  v1::JobSpec job;
  ApplyEnvironment({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}, &job);
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
  EXPECT_FALSE(job.runtime().expandable_segments());
  ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "0"}}, &job);
  EXPECT_TRUE(job.runtime().nccl_graph_register_disabled());
  ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "1"}}, &job);
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
}

// ---------------------------------------------------------------------------
// Calibration argument lines: every flag must be mapped or accepted on
// purpose, so none may produce an "ignored unknown flag" note.

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

const std::string kCalibrationDir = OOMGUARD_SOURCE_DIR "/../shared/calibration/";

bool HasFsdpFlag(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--use-torch-fsdp2" || arg == "--use-megatron-fsdp" || arg == "--use-custom-fsdp") {
      return true;
    }
  }
  return false;
}

void ExpectNoUnknownFlags(const std::vector<std::string>& notes, const std::string& where) {
  for (const std::string& note : notes) {
    EXPECT_THAT(note, Not(HasSubstr("unknown flag"))) << where;
  }
}

TEST(CalibrationTest, EveryMegatronCiLineParses) {
  const std::string path = kCalibrationDir + "megatron_ci_h100.jsonl";
  const std::string content = ReadFile(path);
  if (content.empty()) GTEST_SKIP() << path << " not found";
  int parsed = 0;
  int refused = 0;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    if (line.empty()) continue;
    google::protobuf::Struct record;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &record).ok())
        << line;
    const std::string name = record.fields().at("case").string_value();
    std::vector<std::string> args;
    for (const google::protobuf::Value& arg : record.fields().at("argv").list_value().values()) {
      args.push_back(arg.string_value());
    }
    v1::JobSpec job;
    std::vector<std::string> notes;
    absl::Status status = ApplyMegatronArgs(args, ArgsMode::kFullCommandLine, &job, &notes);
    if (HasFsdpFlag(args)) {
      EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << name;
      ++refused;
      continue;
    }
    ASSERT_TRUE(status.ok()) << name << ": " << status;
    ExpectNoUnknownFlags(notes, name);
    EXPECT_GT(job.model().num_layers() + job.model().hidden_size(), 0u) << name;
    EXPECT_GT(job.model().vocab_size(), 0u) << name;

    std::map<std::string, std::string> env;
    for (const auto& [key, value] : record.fields().at("env").struct_value().fields()) {
      env[key] = value.string_value();
    }
    ApplyEnvironment(env, &job);
    EXPECT_EQ(job.runtime().expandable_segments(),
              absl::StrContains(env["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True"))
        << name;
    ++parsed;
  }
  EXPECT_GT(parsed, 80);
  EXPECT_EQ(refused, 3);
}

TEST(CalibrationTest, MegatronCiDeepSeekProxyLine) {
  const std::string content = ReadFile(kCalibrationDir + "megatron_ci_h100.jsonl");
  if (content.empty()) GTEST_SKIP() << "calibration data not found";
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    if (!absl::StrContains(line, "\"mixtral/deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release\"")) {
      continue;
    }
    google::protobuf::Struct record;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &record).ok());
    std::vector<std::string> args;
    for (const google::protobuf::Value& arg : record.fields().at("argv").list_value().values()) {
      args.push_back(arg.string_value());
    }
    v1::JobSpec job;
    std::vector<std::string> notes;
    ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kFullCommandLine, &job, &notes).ok());
    EXPECT_EQ(Pattern(job), Concat(Repeat(0, 3), Repeat(1, 11)));
    EXPECT_EQ(job.model().num_layers(), 14u);
    EXPECT_EQ(job.model().vocab_size(), 50257u);  // GPTSentencePiece: assumed.
    EXPECT_EQ(job.parallelism().pipeline_model_parallel_layout(), "Et*2|(tt|)*5t|tmL");
    EXPECT_EQ(job.training().attention_backend(), v1::ATTENTION_BACKEND_FLASH);
    EXPECT_EQ(job.training().cross_entropy_fusion(), v1::CROSS_ENTROPY_FUSION_NATIVE);
    EXPECT_EQ(job.model().moe_token_dispatcher(), v1::TOKEN_DISPATCHER_FLEX);
    EXPECT_THAT(
        notes, ElementsAre(HasSubstr("--moe-flex-dispatcher-backend"), HasSubstr("assumed 50257")));
    return;
  }
  FAIL() << "DeepSeek-V3 proxy case not found";
}

// Splits one CSV record (RFC 4180 quoting) into fields.
std::vector<std::string> SplitCsvRecord(absl::string_view record) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < record.size(); ++i) {
    const char c = record[i];
    if (quoted) {
      if (c == '"' && i + 1 < record.size() && record[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

uint32_t ToUint(const std::string& text) { return static_cast<uint32_t>(std::stoul(text)); }

TEST(CalibrationTest, EverySweepLineParsesAndMatchesItsColumns) {
  const std::string path = kCalibrationDir + "h100_single_gpu_sweep.csv";
  const std::string content = ReadFile(path);
  if (content.empty()) GTEST_SKIP() << path << " not found";
  std::vector<absl::string_view> lines = absl::StrSplit(content, '\n', absl::SkipEmpty());
  ASSERT_GT(lines.size(), 1u);
  const std::vector<std::string> header = SplitCsvRecord(lines[0]);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name :
       {"argv", "num_layers", "hidden", "ffn_hidden", "heads", "kv_heads", "head_dim", "vocab",
        "num_experts", "topk", "moe_ffn_hidden", "seq_len", "micro_batch", "recompute_granularity",
        "recompute_modules", "dist_opt", "ce_fusion", "moe_grouped_gemm_flag"}) {
    ASSERT_TRUE(column.count(name)) << name;
  }
  int parsed = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> row = SplitCsvRecord(lines[i]);
    ASSERT_EQ(row.size(), header.size()) << lines[i];
    auto at = [&](const char* name) { return row[column.at(name)]; };
    std::vector<std::string> notes;
    v1::JobSpec job;
    const std::string& argv = at("argv");
    ASSERT_TRUE(ApplyLine(argv, ArgsMode::kFullCommandLine, &job, &notes).ok()) << argv;
    ExpectNoUnknownFlags(notes, argv);
    const v1::ModelSpec& m = job.model();
    EXPECT_EQ(m.num_layers(), ToUint(at("num_layers"))) << argv;
    EXPECT_EQ(m.hidden_size(), ToUint(at("hidden"))) << argv;
    if (m.has_ffn_hidden_size()) {  // MoE rows leave it to the default.
      EXPECT_EQ(m.ffn_hidden_size(), ToUint(at("ffn_hidden"))) << argv;
    }
    EXPECT_EQ(m.num_attention_heads(), ToUint(at("heads"))) << argv;
    EXPECT_EQ(m.num_query_groups(), ToUint(at("kv_heads"))) << argv;
    EXPECT_EQ(m.kv_channels(), ToUint(at("head_dim"))) << argv;
    EXPECT_EQ(m.vocab_size(), ToUint(at("vocab"))) << argv;
    EXPECT_EQ(m.num_experts(), ToUint(at("num_experts"))) << argv;
    if (m.num_experts() > 0) {
      EXPECT_EQ(m.moe_router_topk(), ToUint(at("topk"))) << argv;
      EXPECT_EQ(m.moe_ffn_hidden_size(), ToUint(at("moe_ffn_hidden"))) << argv;
    }
    EXPECT_EQ(m.moe_grouped_gemm(), at("moe_grouped_gemm_flag") == "true") << argv;
    EXPECT_EQ(job.training().seq_length(), ToUint(at("seq_len"))) << argv;
    EXPECT_EQ(job.training().micro_batch_size(), ToUint(at("micro_batch"))) << argv;
    EXPECT_EQ(job.precision().params_dtype(), v1::DTYPE_BF16) << argv;
    EXPECT_EQ(job.precision().use_distributed_optimizer(), at("dist_opt") == "true") << argv;
    EXPECT_EQ(job.training().cross_entropy_fusion(), at("ce_fusion") == "native"
                                                         ? v1::CROSS_ENTROPY_FUSION_NATIVE
                                                         : v1::CROSS_ENTROPY_FUSION_UNSPECIFIED)
        << argv;
    const std::string granularity = at("recompute_granularity");
    EXPECT_EQ(job.recompute().granularity(), granularity == "full" ? v1::RECOMPUTE_GRANULARITY_FULL
                                             : granularity == "selective"
                                                 ? v1::RECOMPUTE_GRANULARITY_SELECTIVE
                                                 : v1::RECOMPUTE_GRANULARITY_UNSPECIFIED)
        << argv;
    std::vector<std::string> modules;
    for (int module : job.recompute().modules()) {
      modules.push_back(absl::AsciiStrToLower(v1::RecomputeModule_Name(module))
                            .substr(std::string_view("recompute_module_").size()));
    }
    const std::string expected_modules = at("recompute_modules");
    EXPECT_EQ(absl::StrJoin(modules, "+"), expected_modules) << argv;
    ++parsed;
  }
  EXPECT_GT(parsed, 60);
}

}  // namespace
TEST(MayChangeMemoryTest, OnlyUnresolvedWordsThatMayChangeMemoryCount) {
  for (const char* word : {"--micro-batch-size $MBS", "--recompute-granularity ${R}",
                           "--tensor-model-parallel-size=$TP", "--seq-length `cat f`",
                           "$EXTRA_ARGS", "\"${EXTRA[@]}\"", "`cat args`", "--$FLAG 1"}) {
    EXPECT_TRUE(MayChangeMemory(word)) << word;
  }
  for (const char* word : {"--data-path $(cat /data/list)", "--save $CKPT", "--lr $LR",
                           "--wandb-exp-name $NAME", "--no-such-flag $X", "/data/$(date +%s)"}) {
    EXPECT_FALSE(MayChangeMemory(word)) << word;
  }
}

}  // namespace oomguard
