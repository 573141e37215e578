#include "jobspec/megatron_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"
#include "tests/jobspec/megatron_line_util.h"

namespace oomguard {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------
// Looking flags up.

TEST(FindMegatronFlagTest, KnownFlagGivesItsField) {
  const MegatronFlag* flag = FindMegatronFlag("--tensor-model-parallel-size");
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->name, "tensor-model-parallel-size");
  EXPECT_EQ(flag->Spelling(), "--tensor-model-parallel-size");
  EXPECT_EQ(flag->arity, FlagArity::kOne);
  EXPECT_THAT(flag->fields, ElementsAre("parallelism.tensor_model_parallel_size"));
  EXPECT_FALSE(flag->unimplemented);
  EXPECT_EQ(FindMegatronFlag("tensor-model-parallel-size"), flag);
}

TEST(FindMegatronFlagTest, UnderscoreSpellingIsTheSameFlag) {
  EXPECT_EQ(FindMegatronFlag("--tensor_model_parallel_size"),
            FindMegatronFlag("--tensor-model-parallel-size"));
  EXPECT_EQ(CanonicalFlagName("--use_distributed_optimizer"), "use-distributed-optimizer");
  EXPECT_EQ(CanonicalFlagName("num_layers"), "num-layers");
}

TEST(FindMegatronFlagTest, UnknownAndIgnoredFlagsAreNull) {
  for (const char* name :
       {"--frobnicate", "--lr", "--data-path", "--tp-comm-overlap-cfg", "", "--", "--num-gpus"}) {
    EXPECT_EQ(FindMegatronFlag(name), nullptr) << name;
  }
}

TEST(FindMegatronFlagTest, RemovedFsdpSpellingIsUnimplemented) {
  const MegatronFlag* flag = FindMegatronFlag("--use_custom_fsdp");
  ASSERT_NE(flag, nullptr);
  EXPECT_TRUE(flag->unimplemented);
  EXPECT_THAT(flag->fields, IsEmpty());
}

TEST(FindMegatronFlagTest, FsdpFlagsSetTheImplementation) {
  for (const char* name : {"--use-torch-fsdp2", "--use-megatron-fsdp"}) {
    const MegatronFlag* flag = FindMegatronFlag(name);
    ASSERT_NE(flag, nullptr) << name;
    EXPECT_FALSE(flag->unimplemented) << name;
    EXPECT_THAT(flag->fields, ElementsAre("parallelism.fsdp_implementation")) << name;
  }
}

TEST(FindMegatronFlagTest, SwitchSetsItsField) {
  const MegatronFlag* flag = FindMegatronFlag("--sequence-parallel");
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->arity, FlagArity::kSwitch);
  EXPECT_THAT(flag->fields, ElementsAre("parallelism.sequence_parallel"));
}

TEST(FindMegatronFlagTest, FieldsOfFlagsWithHandlersOfTheirOwn) {
  EXPECT_THAT(FindMegatronFlag("--moe-layer-freq")->fields,
              ElementsAre("model.moe_layer_freq", "model.moe_layer_pattern"));
  // Set by the resolution of the flags that depend on each other.
  EXPECT_THAT(FindMegatronFlag("--group-query-attention")->fields,
              ElementsAre("model.num_query_groups"));
  EXPECT_THAT(FindMegatronFlag("--tokenizer-type")->fields, ElementsAre("model.vocab_size"));
  // --fp8-format sets its format and the `fp8` switch older clients read.
  EXPECT_THAT(FindMegatronFlag("--fp8-format")->fields,
              ElementsAre("precision.fp8_format", "precision.fp8"));
  // The recipe is modelled now (estimator/fp8_memory.h): it sets its field.
  EXPECT_THAT(FindMegatronFlag("--fp8-recipe")->fields, ElementsAre("precision.fp8_recipe"));
  // Read and ignored.
  EXPECT_THAT(FindMegatronFlag("--rampup-batch-size")->fields, IsEmpty());
}

TEST(FindMegatronFlagTest, WordsAreTheChoices) {
  const MegatronFlag* flag = FindMegatronFlag("--recompute-granularity");
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->WordFor(v1::RECOMPUTE_GRANULARITY_SELECTIVE), "selective");
  EXPECT_EQ(flag->WordFor(v1::RECOMPUTE_GRANULARITY_UNSPECIFIED), "");
  EXPECT_THAT(FindMegatronFlag("--recompute-modules")->words, SizeIs(7));
  EXPECT_THAT(FindMegatronFlag("--num-layers")->words, IsEmpty());
}

// ---------------------------------------------------------------------------
// The reverse: the flag that sets a field.

TEST(FindMegatronFlagForFieldTest, GivesTheMainFlag) {
  struct Case {
    const char* field;
    const char* flag;
  };
  const Case cases[] = {
      {"parallelism.pipeline_model_parallel_size", "--pipeline-model-parallel-size"},
      {"parallelism.tensor_model_parallel_size", "--tensor-model-parallel-size"},
      {"parallelism.sequence_parallel", "--sequence-parallel"},
      {"parallelism.pipeline_model_parallel_layout", "--pipeline-model-parallel-layout"},
      {"recompute.granularity", "--recompute-granularity"},
      {"recompute.modules", "--recompute-modules"},
      {"runtime.cuda_graph_impl", "--cuda-graph-impl"},
      {"runtime.cuda_graph_modules", "--cuda-graph-scope"},
      {"model.position_embedding", "--position-embedding-type"},
      {"model.num_query_groups", "--num-query-groups"},
      {"model.vocab_size", "--vocab-size"},
      {"precision.main_grads_dtype", "--main-grads-dtype"},
      {"training.attention_backend", "--attention-backend"},
      {"training.global_batch_size", "--global-batch-size"},
      {"model.hybrid_layer_pattern", "--hybrid-layer-pattern"},
  };
  for (const Case& c : cases) {
    const MegatronFlag* flag = FindMegatronFlagForField(c.field);
    ASSERT_NE(flag, nullptr) << c.field;
    EXPECT_EQ(flag->Spelling(), c.flag) << c.field;
  }
  EXPECT_EQ(FindMegatronFlagForField("parallelism.num_gpus"), nullptr);
  EXPECT_EQ(FindMegatronFlagForField("parallelism"), nullptr);
  EXPECT_EQ(FindMegatronFlagForField("no.such_field"), nullptr);
}

TEST(RecomputeModuleWordTest, EveryModuleHasTheWordTheParserReads) {
  EXPECT_EQ(RecomputeModuleWord(v1::RECOMPUTE_MODULE_MOE_ACT), "moe_act");
  EXPECT_EQ(RecomputeModuleWord(v1::RECOMPUTE_MODULE_UNSPECIFIED), "");
  const google::protobuf::EnumDescriptor* modules = v1::RecomputeModule_descriptor();
  for (int i = 0; i < modules->value_count(); ++i) {
    const auto module = static_cast<v1::RecomputeModule>(modules->value(i)->number());
    if (module == v1::RECOMPUTE_MODULE_UNSPECIFIED) continue;
    const std::string word(RecomputeModuleWord(module));
    ASSERT_FALSE(word.empty()) << modules->value(i)->name();
    v1::JobSpec job;
    ASSERT_TRUE(
        ApplyMegatronArgs({"--recompute-modules", word}, ArgsMode::kOverrides, &job, nullptr).ok())
        << word;
    EXPECT_THAT(job.recompute().modules(), ElementsAre(module)) << word;
  }
}

// ---------------------------------------------------------------------------
// The table says what the parser does: the fields a flag sets are the ones
// it names.

// The paths of the fields (model.num_layers, ...) where `a` and `b` differ.
std::set<std::string> ChangedFields(const v1::JobSpec& a, const v1::JobSpec& b) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::Message;
  std::set<std::string> changed;
  const google::protobuf::Descriptor* job = v1::JobSpec::descriptor();
  for (int i = 0; i < job->field_count(); ++i) {
    const FieldDescriptor* part = job->field(i);
    // The settings parts: unmodelled_settings is no flag's field.
    if (part->is_repeated()) continue;
    const Message& in_a = a.GetReflection()->GetMessage(a, part);
    const Message& in_b = b.GetReflection()->GetMessage(b, part);
    for (int j = 0; j < part->message_type()->field_count(); ++j) {
      // Each message with every field but the j-th cleared.
      std::unique_ptr<Message> only_a(in_a.New());
      std::unique_ptr<Message> only_b(in_b.New());
      only_a->CopyFrom(in_a);
      only_b->CopyFrom(in_b);
      for (int k = 0; k < part->message_type()->field_count(); ++k) {
        if (k == j) continue;
        const FieldDescriptor* other = part->message_type()->field(k);
        only_a->GetReflection()->ClearField(only_a.get(), other);
        only_b->GetReflection()->ClearField(only_b.get(), other);
      }
      if (only_a->SerializeAsString() != only_b->SerializeAsString()) {
        changed.insert(absl::StrCat(part->name(), ".", part->message_type()->field(j)->name()));
      }
    }
  }
  return changed;
}

TEST(MegatronFlagsTest, EveryFlagSetsExactlyTheFieldsItNames) {
  // Values to try on flags whose values are not enum words.
  const std::vector<std::string> samples = {"7",     "0.5",      "fp32", "te", "Llama2Tokenizer",
                                            "[1]*2", "0:8 10:16"};
  // A whole command line of nothing but the flag, and the flag over a
  // preset whose cross-entropy fusion is on.
  v1::JobSpec full_base;
  ASSERT_TRUE(ApplyMegatronArgs({}, ArgsMode::kFullCommandLine, &full_base, nullptr).ok());
  v1::JobSpec preset;
  preset.mutable_training()->set_cross_entropy_fusion(v1::CROSS_ENTROPY_FUSION_NATIVE);

  ASSERT_THAT(MegatronFlags(), SizeIs(testing::Gt(90u)));
  for (const MegatronFlag& flag : MegatronFlags()) {
    if (flag.unimplemented) continue;
    std::vector<std::vector<std::string>> uses;
    if (flag.arity == FlagArity::kSwitch) {
      uses.push_back({flag.Spelling()});
    } else if (!flag.words.empty()) {
      for (const FlagWord& word : flag.words) {
        uses.push_back({flag.Spelling(), std::string(word.word)});
      }
    } else {
      for (const std::string& sample : samples) uses.push_back({flag.Spelling(), sample});
    }
    std::set<std::string> changed;
    for (const std::vector<std::string>& use : uses) {
      v1::JobSpec full;
      if (ApplyMegatronArgs(use, ArgsMode::kFullCommandLine, &full, nullptr).ok()) {
        for (const std::string& field : ChangedFields(full_base, full)) changed.insert(field);
      }
      v1::JobSpec over = preset;
      if (ApplyMegatronArgs(use, ArgsMode::kOverrides, &over, nullptr).ok()) {
        for (const std::string& field : ChangedFields(preset, over)) changed.insert(field);
      }
    }
    EXPECT_EQ(changed, std::set<std::string>(flag.fields.begin(), flag.fields.end()))
        << flag.Spelling();
  }
}

// Hybrid models: the pattern under either spelling (not both, as
// validate_args refuses), the Mamba sizes and the SSM states' dtype. The
// pattern's symbols are read by validation (estimator/hybrid_layer_pattern.h).
TEST(MegatronFlagsTest, HybridFlags) {
  v1::JobSpec job = ParseFull(
      "--hybrid-layer-pattern 'M-M*|M-/M-' --mamba-state-dim 256 --mamba-head-dim 80 "
      "--mamba-num-groups 4 --mamba-num-heads 96 --mamba-training-ssm-states-dtype fp32 "
      "--is-hybrid-model --vocab-size 8");
  EXPECT_EQ(job.model().hybrid_layer_pattern(), "M-M*|M-/M-");
  EXPECT_EQ(job.model().mamba_state_dim(), 256u);
  EXPECT_EQ(job.model().mamba_head_dim(), 80u);
  EXPECT_EQ(job.model().mamba_num_groups(), 4u);
  EXPECT_EQ(job.model().mamba_num_heads(), 96u);
  EXPECT_EQ(job.model().mamba_training_ssm_states_dtype(), v1::DTYPE_FP32);
  job = ParseFull("--hybrid-override-pattern 'M-M-' --mamba-training-ssm-states-dtype bf16");
  EXPECT_EQ(job.model().hybrid_layer_pattern(), "M-M-");
  EXPECT_EQ(job.model().mamba_training_ssm_states_dtype(), v1::DTYPE_BF16);
  absl::Status both = ParseError("--hybrid-override-pattern M- --hybrid-layer-pattern M-");
  EXPECT_EQ(both.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(both.message(), HasSubstr("--hybrid-override-pattern with --hybrid-layer-pattern"));
  absl::Status dtype = ParseError("--mamba-training-ssm-states-dtype fp16");
  EXPECT_EQ(dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dtype.message(), HasSubstr("--mamba-training-ssm-states-dtype"));
}

// --spec: the hybrid stack spec (either module, either name) is the model
// of --hybrid-layer-pattern, read without a note; without a pattern (none
// given, none in the job the flags override) Megatron-LM's HybridModel has
// no layers. Any other spec is noted, naming it, and the layers of the other
// flags are assumed.
TEST(MegatronFlagsTest, HybridStackSpec) {
  for (const char* spec : {"megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec",
                           "megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec",
                           "megatron.core.models.mamba.mamba_layer_specs hybrid_stack_spec"}) {
    std::vector<std::string> notes;
    const v1::JobSpec job = ParseFull(
        absl::StrCat("--spec ", spec, " --hybrid-layer-pattern M-M* --vocab-size 8"), &notes);
    EXPECT_EQ(job.model().hybrid_layer_pattern(), "M-M*") << spec;
    EXPECT_THAT(notes, IsEmpty()) << spec;
    const absl::Status alone = ParseError(absl::StrCat("--spec ", spec, " --vocab-size 8"));
    EXPECT_EQ(alone.code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(alone.message(),
                HasSubstr("builds a hybrid model from --hybrid-layer-pattern, which is not given"));
  }
  v1::JobSpec preset;
  preset.mutable_model()->set_hybrid_layer_pattern("M-");
  EXPECT_TRUE(ApplyLine("--spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec",
                        ArgsMode::kOverrides, &preset)
                  .ok());
  EXPECT_EQ(preset.model().hybrid_layer_pattern(), "M-");

  // Any other spec is a setting oomguard does not model (the job is not
  // judged unless the policy says to), naming the spec.
  const std::pair<const char*, const char*> others[] = {
      {"local", R"(the layer spec "local" )"},
      {"megatron.core.models.hybrid.hybrid_layer_specs gdp_stack_spec",
       R"(the layer spec "megatron.core.models.hybrid.hybrid_layer_specs" "gdp_stack_spec" )"},
      {"my.layers custom_spec", R"(the layer spec "my.layers" "custom_spec" )"}};
  for (const auto& [spec, shown] : others) {
    std::vector<std::string> notes;
    const v1::JobSpec job =
        ParseFull(absl::StrCat("--spec ", spec, " --num-layers 2 --vocab-size 8"), &notes);
    EXPECT_EQ(job.model().num_layers(), 2u) << spec;
    EXPECT_THAT(notes, IsEmpty()) << spec;
    ASSERT_EQ(job.unmodelled_settings_size(), 1) << spec;
    EXPECT_EQ(job.unmodelled_settings(0).flag(), "--spec") << spec;
    EXPECT_THAT(job.unmodelled_settings(0).reason(),
                AllOf(StartsWith(shown), HasSubstr("its layers are not modelled")))
        << spec;
  }
}

TEST(MegatronFlagsTest, ParallelismFlags) {
  const v1::JobSpec job = ParseFull(
      "--pipeline-model-parallel-size 4 "
      "--num-layers-per-virtual-pipeline-stage 2 "
      "--num-virtual-stages-per-pipeline-rank 3 "
      "--microbatch-group-size-per-virtual-pipeline-stage 5 "
      "--decoder-first-pipeline-num-layers 6 "
      "--decoder-last-pipeline-num-layers 7 "
      "--account-for-embedding-in-pipeline-split "
      "--account-for-loss-in-pipeline-split "
      "--overlap-moe-expert-parallel-comm --moe-shared-expert-overlap --tp-comm-overlap "
      "--vocab-size 8");
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
  EXPECT_TRUE(p.moe_shared_expert_overlap());
  EXPECT_TRUE(p.tp_comm_overlap());
  EXPECT_FALSE(p.has_tensor_model_parallel_size());
}

// --cp-comm-type keeps one word per layer, in order (TransformerConfig's
// per-layer list); --hierarchical-context-parallel-sizes its integers.
// "allgather" (Megatron-LM's help text) is not a word Transformer Engine
// reads: refused, naming the words it reads.
TEST(MegatronFlagsTest, ContextParallelCommFlags) {
  const v1::JobSpec job = ParseFull(
      "--cp-comm-type p2p p2p a2a a2a+p2p all_gather "
      "--hierarchical-context-parallel-sizes 2 4 --vocab-size 8");
  EXPECT_THAT(job.parallelism().cp_comm_type(),
              ElementsAre(v1::CP_COMM_TYPE_P2P, v1::CP_COMM_TYPE_P2P, v1::CP_COMM_TYPE_A2A,
                          v1::CP_COMM_TYPE_A2A_P2P, v1::CP_COMM_TYPE_ALL_GATHER));
  EXPECT_THAT(job.parallelism().hierarchical_context_parallel_sizes(), ElementsAre(2u, 4u));
  const absl::Status status = ParseError("--cp-comm-type allgather --vocab-size 8");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("--cp-comm-type"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("all_gather"));
  EXPECT_THAT(
      std::string(ParseError("--hierarchical-context-parallel-sizes 2 x --vocab-size 8").message()),
      HasSubstr("a non-negative integer"));
}

TEST(MegatronFlagsTest, OutputLogitDtype) {
  EXPECT_EQ(ParseFull("--output-logit-dtype fp32 --vocab-size 8").training().output_logit_dtype(),
            v1::DTYPE_FP32);
  EXPECT_EQ(ParseFull("--output-logit-dtype bf16 --vocab-size 8").training().output_logit_dtype(),
            v1::DTYPE_BF16);
  EXPECT_EQ(ParseError("--output-logit-dtype fp16 --vocab-size 8").code(),
            absl::StatusCode::kInvalidArgument);
}

// Issue 12 (G): the legacy spelling of the number of virtual stages per
// pipeline rank sets the same field, with a note that Megatron-LM itself
// refuses it; the field's main flag stays --num-virtual-stages-per-pipeline-rank.
TEST(MegatronFlagsTest, VirtualPipelineModelParallelSizeIsTheVirtualStageCount) {
  std::vector<std::string> notes;
  const v1::JobSpec job =
      ParseFull("--vocab-size 8 --virtual-pipeline-model-parallel-size 4", &notes);
  EXPECT_EQ(job.parallelism().num_virtual_stages_per_pipeline_rank(), 4u);
  EXPECT_THAT(notes, ElementsAre("--virtual-pipeline-model-parallel-size: read as "
                                 "--num-virtual-stages-per-pipeline-rank; Megatron-LM itself "
                                 "refuses this spelling as an unrecognized argument"));
  EXPECT_EQ(ParseFull("--vocab-size 8 --virtual_pipeline_model_parallel_size=2")
                .parallelism()
                .num_virtual_stages_per_pipeline_rank(),
            2u);
  EXPECT_EQ(
      FindMegatronFlagForField("parallelism.num_virtual_stages_per_pipeline_rank")->Spelling(),
      "--num-virtual-stages-per-pipeline-rank");
}

TEST(MegatronFlagsTest, ModelFlagsWithoutDefaults) {
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
  // fp64 is a choice oomguard does not model: recorded (the job is not
  // judged unless asked) and, judged anyway, read as if the flag were absent.
  const v1::JobSpec fp64 = ParseFull("--moe-router-dtype fp64 --vocab-size 8");
  EXPECT_FALSE(fp64.model().moe_router_dtype_fp32());
  ASSERT_EQ(fp64.unmodelled_settings_size(), 1);
  EXPECT_EQ(fp64.unmodelled_settings(0).flag(), "--moe-router-dtype");
  EXPECT_EQ(fp64.unmodelled_settings(0).value(), "fp64");
  EXPECT_EQ(ParseFull("--position-embedding-type none --vocab-size 8").model().position_embedding(),
            v1::POSITION_EMBEDDING_NONE);
  EXPECT_EQ(ParseFull("--position-embedding-type learned_absolute "
                      "--vocab-size 8")
                .model()
                .position_embedding(),
            v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
}

TEST(MegatronFlagsTest, Fp8Flags) {
  const v1::PrecisionSpec p =
      ParseFull(
          "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8 --first-last-layers-bf16 "
          "--num-layers-at-start-in-bf16 2 --num-layers-at-end-in-bf16 3 "
          "--moe-router-padding-for-fp8 --vocab-size 8")
          .precision();
  EXPECT_TRUE(p.fp8());
  EXPECT_EQ(p.fp8_format(), v1::PrecisionSpec::FP8_FORMAT_E4M3);
  EXPECT_EQ(p.fp8_recipe(), v1::PrecisionSpec::FP8_RECIPE_MXFP8);
  EXPECT_TRUE(p.first_last_layers_bf16());
  EXPECT_EQ(p.num_layers_at_start_in_bf16(), 2u);
  EXPECT_EQ(p.num_layers_at_end_in_bf16(), 3u);
  EXPECT_TRUE(p.moe_router_padding_for_fp8());
  for (const char* recipe : {"delayed", "tensorwise", "blockwise"}) {
    EXPECT_TRUE(
        ParseFull(absl::StrCat("--fp8-format hybrid --fp8-recipe ", recipe, " --vocab-size 8"))
            .precision()
            .fp8_recipe() != v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED);
  }
  EXPECT_TRUE(ParseFull("--moe-router-padding-for-quantization --vocab-size 8")
                  .precision()
                  .moe_router_padding_for_fp8());
}

TEST(MegatronFlagsTest, Fp4Flags) {
  const v1::PrecisionSpec p = ParseFull(
                                  "--bf16 --fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather "
                                  "--fp4-quantizer-factory pkg.mod.factory --vocab-size 8")
                                  .precision();
  EXPECT_FALSE(p.fp8());
  EXPECT_EQ(p.fp4_format(), v1::PrecisionSpec::FP4_FORMAT_E2M1);
  EXPECT_EQ(p.fp4_recipe(), v1::PrecisionSpec::FP4_RECIPE_NVFP4);
  EXPECT_TRUE(p.fp4_param_gather());
  EXPECT_TRUE(ParseFull("--reuse-grad-buf-for-mxfp8-param-ag --vocab-size 8")
                  .precision()
                  .reuse_grad_buf_for_mxfp8_param_ag());
}

// `custom` recipes are Megatron-LM's but not modelled (JobSpec.
// unmodelled_settings, megatron_args_test.cc); other words are not
// Megatron-LM's.
TEST(MegatronFlagsTest, Fp8FlagsRefuseUnknownWords) {
  for (const char* args :
       {"--fp8-recipe custom2", "--fp8-format e5m2", "--fp4-recipe nvfp8", "--fp4-format e3m0"}) {
    const absl::Status status = ParseError(absl::StrCat(args, " --vocab-size 8"));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << args;
    const std::vector<std::string> words = absl::StrSplit(args, ' ');
    EXPECT_THAT(std::string(status.message()), HasSubstr(words[0])) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(words[1])) << status;
  }
}

TEST(MegatronFlagsTest, PrecisionAndOptimizerFlags) {
  const v1::JobSpec job = ParseFull(
      "--bf16 --fp8-format hybrid --fp8-recipe blockwise --fp8-param-gather "
      "--optimizer dist_muon --use-precision-aware-optimizer "
      "--main-params-dtype fp16 --main-grads-dtype bf16 --exp-avg-dtype fp8 "
      "--exp-avg-sq-dtype bf16 --optimizer-cpu-offload "
      "--optimizer-offload-fraction 0.5 --vocab-size 8");
  const v1::PrecisionSpec& p = job.precision();
  EXPECT_EQ(p.params_dtype(), v1::DTYPE_BF16);
  EXPECT_TRUE(p.fp8());
  EXPECT_EQ(p.fp8_format(), v1::PrecisionSpec::FP8_FORMAT_HYBRID);
  EXPECT_EQ(p.fp8_recipe(), v1::PrecisionSpec::FP8_RECIPE_BLOCKWISE);
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

TEST(MegatronFlagsTest, RecomputeAndOffloadFlags) {
  const v1::JobSpec job = ParseFull(
      "--recompute-activations --cpu-offloading-num-layers 3 "
      "--fine-grained-activation-offloading --offload-modules expert_fc1 "
      "moe_act attn_norm --vocab-size 8");
  const v1::RecomputeSpec& r = job.recompute();
  EXPECT_EQ(r.granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(r.modules(), IsEmpty());
  EXPECT_EQ(r.cpu_offloading_num_layers(), 3u);
  EXPECT_TRUE(r.fine_grained_activation_offloading());
  EXPECT_THAT(r.offload_modules(), ElementsAre("expert_fc1", "moe_act", "attn_norm"));

  const v1::JobSpec all = ParseFull(
      "--recompute-method uniform --recompute-modules core_attn moe_act "
      "layernorm mla_up_proj mlp moe shared_experts --vocab-size 8");
  EXPECT_EQ(all.recompute().method(), v1::RECOMPUTE_METHOD_UNIFORM);
  EXPECT_THAT(all.recompute().modules(), SizeIs(7));
}

TEST(MegatronFlagsTest, RuntimeFlags) {
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
  // Megatron-LM's full-iteration graph (TransformerConfig.cuda_graph_impl).
  EXPECT_EQ(
      ParseFull("--cuda-graph-impl full_iteration --vocab-size 8").runtime().cuda_graph_impl(),
      v1::CUDA_GRAPH_IMPL_FULL_ITERATION);
  EXPECT_TRUE(ParseFull("--optimizer-cuda-graph --vocab-size 8").runtime().optimizer_cuda_graph());
}

TEST(MegatronFlagsTest, TransformerImplWords) {
  EXPECT_EQ(ParseFull("--transformer-impl inference_optimized --vocab-size 8")
                .training()
                .transformer_impl(),
            v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE);
  EXPECT_EQ(ParseFull("--attention-backend local --vocab-size 8").training().attention_backend(),
            v1::ATTENTION_BACKEND_LOCAL);
  EXPECT_EQ(ParseFull("--attention-backend fused --vocab-size 8").training().attention_backend(),
            v1::ATTENTION_BACKEND_FUSED);
}

}  // namespace
}  // namespace oomguard
