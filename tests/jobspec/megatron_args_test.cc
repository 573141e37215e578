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
#include "jobspec/ignored_flags.h"
#include "oomguard/v1/job.pb.h"
#include "tests/jobspec/megatron_line_util.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

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
  // --grad-reduce-in-bf16 counts for bf16 parameters only (validate_args):
  // fp16 parameters keep their fp16 gradient buffer.
  EXPECT_EQ(job.precision().main_grads_dtype(), v1::DTYPE_FP16);
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
      // Issue 12 (D): above 32 bits is out of range, and the message says so.
      {"--hidden-size 99999999999",
       R"(--hidden-size: expected an integer in [0, 4294967295], got "99999999999")"},
      {"--micro-batch-size 4294967296",
       R"(--micro-batch-size: expected an integer in [0, 4294967295], got "4294967296")"},
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

// Issue 25 item 12: a word holding a variable's value (arg_sources,
// MegatronJob.argv_sources) is named in every error about it, its value never
// shown: it may be a secret from the environment.
TEST(ApplyMegatronArgsTest, WordsFromVariablesAreNamedNotShown) {
  const std::string secret = "sk-secret-123";
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> sources;
    const char* message;
  };
  const Case cases[] = {
      {{"--micro-batch-size", secret},
       {"", "$(WANDB_API_KEY)"},
       "--micro-batch-size: expected a non-negative integer, got the value of $(WANDB_API_KEY) "
       "(not shown)"},
      {{"--micro-batch-size=" + secret},
       {"$WANDB_API_KEY"},
       "--micro-batch-size: expected a non-negative integer, got the value of $WANDB_API_KEY "
       "(not shown)"},
      {{"--normalization", secret},
       {"", "$NORM"},
       "--normalization: expected one of LayerNorm|RMSNorm, got the value of $NORM (not shown)"},
      {{"--recompute-modules", "core_attn", secret},
       {"", "", "$M"},
       "--recompute-modules: expected one of core_attn|moe_act|layernorm|mla_up_proj|mlp|moe|"
       "shared_experts, got the value of $M (not shown)"},
      {{"--moe-layer-freq", secret}, {"", "$F"}, "got the value of $F (not shown)"},
      {{"--bf16", secret}, {"", "$K"}, "--bf16 takes no value, got the value of $K (not shown)"},
      {{"--num-layers", "4", secret},
       {"", "", "$K"},
       "unexpected argument the value of $K (not shown) after --num-layers"},
  };
  for (const Case& c : cases) {
    v1::JobSpec job;
    const absl::Status status =
        ApplyMegatronArgs(c.args, ArgsMode::kOverrides, &job, nullptr, c.sources);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(status.message(), HasSubstr(c.message));
    EXPECT_THAT(status.message(), Not(HasSubstr("secret")));
  }
  // Literal words are still shown; sources that do not match the words are
  // refused.
  v1::JobSpec job;
  EXPECT_THAT(
      ApplyMegatronArgs({"--num-layers", "4x"}, ArgsMode::kOverrides, &job, nullptr, {"$L", ""})
          .message(),
      HasSubstr(R"(got "4x")"));
  EXPECT_EQ(
      ApplyMegatronArgs({"--num-layers", "4"}, ArgsMode::kOverrides, &job, nullptr, {"$L"}).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ApplyMegatronArgsTest, LongBadValuesAreTruncatedInMessages) {
  v1::JobSpec job;
  absl::Status status = ApplyMegatronArgs({"--num-layers", std::string(10000, '9')},
                                          ArgsMode::kFullCommandLine, &job, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), 200u);
}

// Issue 12 (C): a long flag name or value is echoed cut short, in errors
// and in notes.
TEST(ApplyMegatronArgsTest, LongFlagsAreTruncatedInMessagesAndNotes) {
  v1::JobSpec job;
  absl::Status status =
      ApplyMegatronArgs({"--pipeline-model-parallel-layout=" + std::string(10000, 't'), "extra"},
                        ArgsMode::kFullCommandLine, &job, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("unexpected argument \"extra\" after "
                                          "--pipeline-model-parallel-layout=ttt"));
  EXPECT_LT(status.message().size(), 200u);

  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyMegatronArgs({"--" + std::string(10000, 'x'), "--vocab-size", "8"},
                                ArgsMode::kFullCommandLine, &job, &notes)
                  .ok());
  EXPECT_THAT(notes, IsEmpty());
  ASSERT_THAT(job.unmodelled_settings(), SizeIs(1));
  EXPECT_EQ(job.unmodelled_settings(0).flag(), "--" + std::string(78, 'x') + "...");
}

// The spelling Megatron-LM removed is refused, saying which to write.
TEST(ApplyMegatronArgsTest, RemovedFsdpSpellingIsUnimplemented) {
  for (const char* flag : {"--use-custom-fsdp", "--use_custom_fsdp"}) {
    absl::Status status = ParseError(absl::StrCat("--num-layers 2 ", flag, " --bf16"));
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << flag;
    EXPECT_THAT(status.message(), HasSubstr(flag));
    EXPECT_THAT(status.message(), HasSubstr("--use-megatron-fsdp"));
  }
}

// Megatron-LM's validate_args exits on --checkpoint-activations (no longer
// valid): an invalid job, naming the flags that replace it.
TEST(ApplyMegatronArgsTest, CheckpointActivationsIsRefused) {
  absl::Status status = ParseError("--num-layers 2 --checkpoint-activations --bf16");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--checkpoint-activations: Megatron-LM exits on it"));
  EXPECT_THAT(status.message(), HasSubstr("--recompute-granularity full"));
}

TEST(ApplyMegatronArgsTest, FsdpFlagsSetTheirFields) {
  v1::JobSpec job;
  std::vector<std::string> notes;
  const std::vector<std::string> args = absl::StrSplit(
      "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads "
      "--outer-dp-sharding-strategy optim --fsdp-double-buffer "
      "--megatron-fsdp-main-params-dtype auto --megatron-fsdp-main-grads-dtype fp32 "
      "--suggested-communication-unit-size 500000000 --megatron-fsdp-version 1 "
      "--megatron-fsdp-max-pool-double-buffer",
      ' ');
  ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kOverrides, &job, &notes).ok());
  const v1::ParallelismSpec& p = job.parallelism();
  EXPECT_EQ(p.fsdp_implementation(), v1::FSDP_IMPLEMENTATION_MEGATRON_FSDP);
  EXPECT_EQ(p.data_parallel_sharding_strategy(), v1::SHARDING_STRATEGY_OPTIM_GRADS);
  EXPECT_EQ(p.outer_dp_sharding_strategy(), v1::SHARDING_STRATEGY_OPTIM);
  EXPECT_TRUE(p.fsdp_double_buffer());
  EXPECT_TRUE(p.megatron_fsdp_max_pool_double_buffer());
  EXPECT_EQ(p.megatron_fsdp_main_params_dtype(), v1::FSDP_DTYPE_AUTO);
  EXPECT_EQ(p.megatron_fsdp_main_grads_dtype(), v1::FSDP_DTYPE_FP32);
  EXPECT_EQ(p.suggested_communication_unit_size(), 500000000u);
  EXPECT_EQ(p.megatron_fsdp_version(), 1u);
  EXPECT_THAT(notes, IsEmpty());

  v1::JobSpec fsdp2;
  ASSERT_TRUE(ApplyMegatronArgs({"--use-torch-fsdp2", "--torch-fsdp2-no-reshard-after-forward"},
                                ArgsMode::kFullCommandLine, &fsdp2, nullptr)
                  .ok());
  EXPECT_EQ(fsdp2.parallelism().fsdp_implementation(), v1::FSDP_IMPLEMENTATION_TORCH_FSDP2);
  ASSERT_TRUE(fsdp2.parallelism().has_torch_fsdp2_reshard_after_forward());
  EXPECT_FALSE(fsdp2.parallelism().torch_fsdp2_reshard_after_forward());
}

// Megatron-LM's --outer-dp-sharding-strategy takes no_shard and optim only.
TEST(ApplyMegatronArgsTest, OuterShardingTakesMegatronLmsChoices) {
  absl::Status status = ParseError("--use-megatron-fsdp --outer-dp-sharding-strategy optim_grads");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--outer-dp-sharding-strategy"));
}

// Megatron-LM refuses both FSDP implementations together.
TEST(ApplyMegatronArgsTest, BothFsdpImplementationsAreRefused) {
  for (const char* line : {"--use-megatron-fsdp --use-torch-fsdp2",
                           "--use-torch-fsdp2 --num-layers 2 --use-megatron-fsdp"}) {
    absl::Status status = ParseError(line);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(status.message(), HasSubstr("--use-megatron-fsdp with --use-torch-fsdp2"));
  }
}

// The Megatron-FSDP settings oomguard does not count are recorded as not
// modelled, never silently accepted.
TEST(ApplyMegatronArgsTest, UncountedFsdpSettingsAreNotModelled) {
  for (const char* flag :
       {"--megatron-fsdp-grad-comm-dtype bf16", "--megatron-fsdp-enable-fine-grained-param-gather",
        "--keep-fp8-transpose-cache", "--fsdp-db-use-persist-buf-on-alloc-fail",
        "--create-all-gather-group"}) {
    v1::JobSpec job;
    std::vector<std::string> notes;
    const std::vector<std::string> args =
        absl::StrSplit(absl::StrCat("--use-megatron-fsdp ", flag), ' ');
    ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kOverrides, &job, &notes).ok()) << flag;
    EXPECT_THAT(notes, IsEmpty()) << flag;
    ASSERT_THAT(job.unmodelled_settings(), SizeIs(1)) << flag;
    EXPECT_EQ(job.unmodelled_settings(0).flag(), args[1]) << flag;
    EXPECT_EQ(job.unmodelled_settings(0).value(), "") << flag;
    EXPECT_THAT(job.unmodelled_settings(0).reason(), HasSubstr("Megatron-FSDP")) << flag;
  }
}

// ---------------------------------------------------------------------------
// Notes.

TEST(ApplyMegatronArgsTest, NotesAreDeduplicatedAndBounded) {
  std::vector<std::string> notes = {"a note from the caller"};
  v1::JobSpec job;
  ASSERT_TRUE(ApplyMegatronArgs({"--rampup-batch-size", "16", "16", "100", "--rampup-batch-size",
                                 "16", "16", "100", "--vocab-size", "8"},
                                ArgsMode::kFullCommandLine, &job, &notes)
                  .ok());
  EXPECT_THAT(notes, ElementsAre("a note from the caller", HasSubstr("--rampup-batch-size")));
}

// Each setting oomguard does not model once, in order, at most 64 of them
// (a hostile line cannot grow the job): one is enough for the job not to be
// judged.
TEST(ApplyMegatronArgsTest, UnmodelledSettingsAreDeduplicatedAndBounded) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyMegatronArgs({"--same", "--same=2", "--Same", "--vocab-size", "8"},
                                ArgsMode::kFullCommandLine, &job, nullptr)
                  .ok());
  ASSERT_THAT(job.unmodelled_settings(), SizeIs(2));
  EXPECT_EQ(job.unmodelled_settings(0).flag(), "--same");
  EXPECT_EQ(job.unmodelled_settings(1).flag(), "--Same");

  std::vector<std::string> args;
  for (int i = 0; i < 1000; ++i) args.push_back(absl::StrCat("--unknown-", i));
  v1::JobSpec many;
  ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kOverrides, &many, nullptr).ok());
  ASSERT_THAT(many.unmodelled_settings(), SizeIs(64));
  EXPECT_EQ(many.unmodelled_settings(0).flag(), "--unknown-0");
  EXPECT_EQ(many.unmodelled_settings(63).flag(), "--unknown-63");
}

// The three kinds of setting oomguard does not model, each with its reason:
// a flag it knows but does not model, one it does not know (underscores read
// as dashes) and a choice value of a modelled flag it does not model (the
// flag is then not applied: the job is read as if it were absent).
TEST(ApplyMegatronArgsTest, UnmodelledSettingsCarryTheirReasons) {
  v1::JobSpec job;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyMegatronArgs(
                  {"--tp-comm-overlap-cfg", "x.yaml", "--no_such_flag", "3", "--fp8-format",
                   "hybrid", "--fp8-recipe", "custom", "--fp4-recipe=custom", "--vocab-size", "8"},
                  ArgsMode::kFullCommandLine, &job, &notes)
                  .ok());
  EXPECT_THAT(notes, IsEmpty());
  ASSERT_THAT(job.unmodelled_settings(), SizeIs(4));
  const v1::UnmodelledSetting& cfg = job.unmodelled_settings(0);
  EXPECT_EQ(cfg.flag(), "--tp-comm-overlap-cfg");
  EXPECT_EQ(cfg.value(), "");  // A flag's value is never kept.
  EXPECT_EQ(cfg.reason(), UnmodelledFlagReason("tp-comm-overlap-cfg"));
  const v1::UnmodelledSetting& unknown = job.unmodelled_settings(1);
  EXPECT_EQ(unknown.flag(), "--no-such-flag");
  EXPECT_EQ(unknown.reason(), UnknownFlagReason());
  EXPECT_THAT(unknown.reason(), HasSubstr("Megatron-Core 0.20.0 (commit d98e8a64dd)"));
  const v1::UnmodelledSetting& fp8 = job.unmodelled_settings(2);
  EXPECT_EQ(fp8.flag(), "--fp8-recipe");
  EXPECT_EQ(fp8.value(), "custom");
  EXPECT_EQ(fp8.reason(), UnmodelledChoiceReason("fp8-recipe", "custom"));
  EXPECT_EQ(job.unmodelled_settings(3).flag(), "--fp4-recipe");
  EXPECT_EQ(job.unmodelled_settings(3).value(), "custom");
  // The custom recipe is not applied; --fp8-format is.
  EXPECT_EQ(job.precision().fp8_recipe(), v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED);
  EXPECT_EQ(job.precision().fp8_format(), v1::PrecisionSpec::FP8_FORMAT_HYBRID);
  EXPECT_EQ(job.precision().fp4_recipe(), v1::PrecisionSpec::FP4_RECIPE_UNSPECIFIED);
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
// Calibration argument lines: every flag must be mapped or accepted on
// purpose, so none may be an unknown flag (JobSpec.unmodelled_settings).

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// The measured cases, copied into the repository (tests/data/calibration/README.md).
const std::string kCalibrationDir = OOMGUARD_SOURCE_DIR "/tests/data/calibration/";

bool HasFsdpFlag(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--use-torch-fsdp2" || arg == "--use-megatron-fsdp") return true;
  }
  return false;
}

void ExpectNoUnknownFlags(const v1::JobSpec& job, const std::string& where) {
  for (const v1::UnmodelledSetting& setting : job.unmodelled_settings()) {
    EXPECT_NE(setting.reason(), UnknownFlagReason()) << where << ": " << setting.flag();
  }
}

TEST(CalibrationTest, EveryMegatronCiLineParses) {
  const std::string path = kCalibrationDir + "megatron_ci_h100.jsonl";
  const std::string content = ReadFile(path);
  ASSERT_FALSE(content.empty()) << path << " is missing or empty";
  int parsed = 0;
  int fsdp = 0;
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
    ASSERT_TRUE(status.ok()) << name << ": " << status;
    if (HasFsdpFlag(args)) {
      EXPECT_NE(job.parallelism().fsdp_implementation(), v1::FSDP_IMPLEMENTATION_UNSPECIFIED)
          << name;
      ++fsdp;
    }
    ExpectNoUnknownFlags(job, name);
    EXPECT_GT(job.model().num_layers() + job.model().hidden_size(), 0u) << name;
    EXPECT_GT(job.model().vocab_size(), 0u) << name;

    std::map<std::string, std::string> env;
    for (const auto& [key, value] : record.fields().at("env").struct_value().fields()) {
      env[key] = value.string_value();
    }
    ASSERT_TRUE(ApplyEnvironment(env, &job).ok()) << name;
    EXPECT_EQ(job.runtime().expandable_segments(),
              absl::StrContains(env["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True"))
        << name;
    ++parsed;
  }
  EXPECT_GT(parsed, 80);
  EXPECT_EQ(fsdp, 3);
}

TEST(CalibrationTest, MegatronCiDeepSeekProxyLine) {
  const std::string content = ReadFile(kCalibrationDir + "megatron_ci_h100.jsonl");
  ASSERT_FALSE(content.empty()) << "megatron_ci_h100.jsonl is missing or empty";
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
    // Modelled since issue 26 (the flex dispatcher's buffers): no note.
    EXPECT_EQ(job.model().moe_flex_dispatcher_backend(), v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP);
    EXPECT_THAT(notes, ElementsAre(HasSubstr("assumed 50257")));
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
  ASSERT_FALSE(content.empty()) << path << " is missing or empty";
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
    ExpectNoUnknownFlags(job, argv);
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
  // A flag oomguard does not model or know would make the job not judged.
  for (const char* word :
       {"--micro-batch-size $MBS", "--recompute-granularity ${R}",
        "--tensor-model-parallel-size=$TP", "--seq-length `cat f`", "$EXTRA_ARGS",
        "\"${EXTRA[@]}\"", "`cat args`", "--$FLAG 1", "--tp-comm-overlap-cfg $CFG",
        "--no-such-flag $X", "--no_such_flag=$X"}) {
    EXPECT_TRUE(MayChangeMemory(word)) << word;
  }
  for (const char* word : {"--data-path $(cat /data/list)", "--save $CKPT", "--lr $LR",
                           "--wandb-exp-name $NAME", "/data/$(date +%s)"}) {
    EXPECT_FALSE(MayChangeMemory(word)) << word;
  }
}

}  // namespace oomguard
