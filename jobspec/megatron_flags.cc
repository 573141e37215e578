#include "jobspec/megatron_flags.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "jobspec/flag_kinds.h"
#include "jobspec/flag_resolution.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/job_field.h"
#include "jobspec/layer_pattern.h"

namespace oomguard {
namespace {

using google::protobuf::FieldDescriptor;

// ---------------------------------------------------------------------------
// Words.

const std::vector<FlagWord>& DtypeWords() {
  static const auto* const kWords = new std::vector<FlagWord>{
      {"fp32", v1::DTYPE_FP32},
      {"bf16", v1::DTYPE_BF16},
      {"fp16", v1::DTYPE_FP16},
      {"fp8", v1::DTYPE_FP8},
  };
  return *kWords;
}

const std::vector<FlagWord>& RecomputeModuleWords() {
  static const auto* const kWords = new std::vector<FlagWord>{
      {"core_attn", v1::RECOMPUTE_MODULE_CORE_ATTN},
      {"moe_act", v1::RECOMPUTE_MODULE_MOE_ACT},
      {"layernorm", v1::RECOMPUTE_MODULE_LAYERNORM},
      {"mla_up_proj", v1::RECOMPUTE_MODULE_MLA_UP_PROJ},
      {"mlp", v1::RECOMPUTE_MODULE_MLP},
      {"moe", v1::RECOMPUTE_MODULE_MOE},
      {"shared_experts", v1::RECOMPUTE_MODULE_SHARED_EXPERTS},
  };
  return *kWords;
}

// ---------------------------------------------------------------------------
// Handlers of their own, in table order.

// --main-grads-dtype, with Megatron-LM's choices. Not written: only its
// default (fp32) is accepted without the precision-aware optimizer
// (optimizer_config.py), and the two switches after it write every
// gradient buffer (ResolveGradBufferDtype).
MegatronFlag MainGradsDtypeFlag() {
  MegatronFlag flag = AlsoRecord(
      Word("precision.main_grads_dtype", {{"fp32", v1::DTYPE_FP32}, {"bf16", v1::DTYPE_BF16}}),
      [](ParseState& s) { s.main_grads_dtype = s.job->precision().main_grads_dtype(); });
  flag.write = nullptr;
  return flag;
}

absl::Status RecordNumQueryGroups(const FlagUse& flag, ParseState& s) {
  OOMGUARD_ASSIGN_OR_RETURN(s.num_query_groups, ParseUint32(flag));
  return absl::OkStatus();
}

absl::Status RecordGroupQueryAttention(const FlagUse&, ParseState& s) {
  s.group_query_attention = true;
  return absl::OkStatus();
}

absl::Status RecordTokenizerType(const FlagUse& flag, ParseState& s) {
  s.tokenizer_type = std::string(flag.value());
  return absl::OkStatus();
}

// --moe-layer-freq: an integer (every Nth layer is MoE) into the first
// field, or a list expression (layer_pattern.h) into the second.
absl::Status ApplyMoeLayerFreq(const FlagUse& flag, absl::Span<const JobField> fields,
                               ParseState& s) {
  const JobField& every_nth = fields[0];
  const JobField& pattern_field = fields[1];
  uint32_t every = 0;
  if (IsDigits(flag.value()) && absl::SimpleAtoi(flag.value(), &every)) {
    every_nth.SetUint32(s.job, every);
    pattern_field.Clear(s.job);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<uint32_t>> pattern = ParseLayerPattern(flag.value());
  if (!pattern.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag.display,
                     ": expected an integer or a list expression such as "
                     "([0]*3+[1]*11), got ",
                     ShownWord(flag.value(), flag.sources.empty() ? "" : flag.sources.front()),
                     " (", pattern.status().message(), ")"));
  }
  every_nth.Clear(s.job);
  pattern_field.Clear(s.job);
  for (const uint32_t layer : *pattern) pattern_field.AddUint32(s.job, layer);
  return absl::OkStatus();
}

// --moe-router-dtype: whether the router computes in fp32 (or fp64).
absl::Status ApplyMoeRouterDtype(const FlagUse& flag, absl::Span<const JobField> fields,
                                 ParseState& s) {
  fields[0].SetBool(s.job, flag.value() == "fp32" || flag.value() == "fp64");
  return absl::OkStatus();
}

// --moe-layer-freq as written: the pattern as a list expression, else the
// integer.
MegatronFlag MoeLayerFreq() {
  const JobField every_nth = FieldAt("model.moe_layer_freq", FieldDescriptor::CPPTYPE_UINT32);
  const JobField pattern =
      FieldAt("model.moe_layer_pattern", FieldDescriptor::CPPTYPE_UINT32, /*repeated=*/true);
  MegatronFlag flag = Custom(FlagArity::kOne, {every_nth, pattern}, ApplyMoeLayerFreq);
  flag.write = [every_nth, pattern](const v1::JobSpec& job) {
    return std::optional<std::vector<std::string>>(
        {pattern.IsSet(job) ? FormatLayerPattern(pattern.GetUint32s(job))
                            : absl::StrCat(every_nth.GetUint32(job))});
  };
  return flag;
}

// --moe-router-dtype: fp32 for a router in fp32 (fp64 reads the same; it is
// a not-modelled choice, ignored_flags.h UnmodelledChoiceReason).
MegatronFlag MoeRouterDtype() {
  const JobField fp32 = FieldAt("model.moe_router_dtype_fp32", FieldDescriptor::CPPTYPE_BOOL);
  MegatronFlag flag = Custom(FlagArity::kOne, {fp32}, ApplyMoeRouterDtype);
  flag.write = [fp32](const v1::JobSpec& job) -> std::optional<std::vector<std::string>> {
    if (!fp32.GetBool(job)) return std::nullopt;
    return std::vector<std::string>{"fp32"};
  };
  return flag;
}

absl::Status NoteRampupBatchSize(const FlagUse& flag, ParseState& s) {
  s.Note(absl::StrCat(flag.display,
                      ": batch size ramps up; memory is estimated at the "
                      "final global batch size (--global-batch-size)"));
  return absl::OkStatus();
}

// `--step-batch-size-schedule "0:384 200B:768 400B:1152"`: the last step's
// batch size is the one the job ends with.
absl::Status RecordStepBatchSizeSchedule(const FlagUse& flag, ParseState& s) {
  std::vector<absl::string_view> steps;
  for (absl::string_view value : flag.values) {
    for (absl::string_view step :
         absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      steps.push_back(step);
    }
  }
  uint32_t final_size = 0;
  if (!steps.empty()) {
    std::pair<absl::string_view, absl::string_view> step =
        absl::StrSplit(steps.back(), absl::MaxSplits(':', 1));
    if (IsDigits(step.second) && absl::SimpleAtoi(step.second, &final_size)) {
      s.final_scheduled_batch_size = final_size;
    }
  }
  s.Note(absl::StrCat(flag.display,
                      ": batch size changes during training; memory is "
                      "estimated at the final global batch size"));
  return absl::OkStatus();
}

absl::Status RecordCrossEntropyLossFusion(const FlagUse&, ParseState& s) {
  s.cross_entropy_loss_fusion = true;
  return absl::OkStatus();
}

absl::Status RecordCrossEntropyFusionImpl(const FlagUse& flag, ParseState& s) {
  OOMGUARD_ASSIGN_OR_RETURN(const int impl, ParseWord(flag, flag.value(),
                                                      {{"native", v1::CROSS_ENTROPY_FUSION_NATIVE},
                                                       {"te", v1::CROSS_ENTROPY_FUSION_TE}}));
  s.cross_entropy_fusion_impl = static_cast<v1::CrossEntropyFusion>(impl);
  return absl::OkStatus();
}

// --spec MODULE NAME (arguments.py _add_experimental_args, nargs='*'): the
// layer spec the model builder imports (spec_utils.py import_module).
// hybrid_builders.py needs one; gpt_builders.py replaces its own layer
// choice with it. Modelled: the hybrid stack spec, in its module or in the
// mamba module that re-exports it (models/mamba/mamba_layer_specs.py), by
// either name (mamba_stack_spec = hybrid_stack_spec in
// models/hybrid/hybrid_layer_specs.py): the Mamba, attention, MLP and MoE
// layers of --hybrid-layer-pattern that oomguard costs (checked in
// flag_resolution.cc). Any other spec (a custom layer, `local`, the
// inference or gated-delta-product stacks) builds layers oomguard does not
// model: it is noted, and the model read from the other flags.
bool IsHybridStackSpec(absl::Span<const absl::string_view> values) {
  if (values.size() != 2) return false;
  const bool module = values[0] == "megatron.core.models.hybrid.hybrid_layer_specs" ||
                      values[0] == "megatron.core.models.mamba.mamba_layer_specs";
  const bool name = values[1] == "hybrid_stack_spec" || values[1] == "mamba_stack_spec";
  return module && name;
}

absl::Status ApplySpec(const FlagUse& flag, ParseState& s) {
  std::vector<std::string> shown;
  for (size_t i = 0; i < flag.values.size(); ++i) {
    shown.push_back(ShownWord(flag.values[i], i < flag.sources.size() ? flag.sources[i] : ""));
  }
  s.spec = absl::StrJoin(shown, " ");
  s.hybrid_stack_spec = IsHybridStackSpec(flag.values);
  if (!s.hybrid_stack_spec) {
    // Not modelled: the job is not judged unless the policy says to.
    s.Unmodelled("--spec", "",
                 absl::StrCat("the layer spec ", *s.spec,
                              " is not the hybrid stack spec "
                              "(megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec): "
                              "its layers are not modelled; those of the other flags are assumed"));
  }
  return absl::OkStatus();
}

void NoteVirtualPipelineSpelling(ParseState& s) {
  s.Note(
      "--virtual-pipeline-model-parallel-size: read as --num-virtual-stages-per-pipeline-rank; "
      "Megatron-LM itself refuses this spelling as an unrecognized argument");
}

// ---------------------------------------------------------------------------
// The table.

class FlagTable {
 public:
  void Add(absl::string_view name, MegatronFlag flag) {
    flag.name = std::string(name);
    if (!by_name_.emplace(flag.name, flags_.size()).second) FlagTableBug(name);
    for (const std::string& field : flag.fields) by_field_.emplace(field, flags_.size());
    flags_.push_back(std::move(flag));
  }

  const std::vector<MegatronFlag>& flags() const { return flags_; }
  const MegatronFlag* Find(absl::string_view name) const { return At(by_name_, name); }
  const MegatronFlag* FindForField(absl::string_view path) const { return At(by_field_, path); }

 private:
  using Index = std::map<std::string, size_t, std::less<>>;

  const MegatronFlag* At(const Index& index, absl::string_view key) const {
    auto it = index.find(key);
    return it == index.end() ? nullptr : &flags_[it->second];
  }

  std::vector<MegatronFlag> flags_;
  Index by_name_;
  Index by_field_;  // The first flag that sets each field.
};

void AddModelFlags(FlagTable& t) {
  t.Add("num-layers", Uint("model.num_layers"));
  t.Add("hidden-size", Uint("model.hidden_size"));
  t.Add("ffn-hidden-size", Uint("model.ffn_hidden_size"));
  t.Add("num-attention-heads", Uint("model.num_attention_heads"));
  t.Add("num-query-groups",
        Resolved(FlagArity::kOne, {"model.num_query_groups"}, RecordNumQueryGroups));
  t.Add("group-query-attention",
        Resolved(FlagArity::kSwitch, {"model.num_query_groups"}, RecordGroupQueryAttention));
  t.Add("kv-channels", Uint("model.kv_channels"));
  t.Add("vocab-size",
        AlsoRecord(Uint("model.vocab_size"), [](ParseState& s) { s.vocab_size_given = true; }));
  t.Add("tokenizer-type", Resolved(FlagArity::kOne, {"model.vocab_size"}, RecordTokenizerType));
  t.Add("make-vocab-size-divisible-by", Uint("model.make_vocab_size_divisible_by"));
  t.Add("max-position-embeddings", Uint("model.max_position_embeddings"));
  t.Add("swiglu", Switch("model.activation", v1::ACTIVATION_SWIGLU));
  t.Add("squared-relu", Switch("model.activation", v1::ACTIVATION_SQUARED_RELU));
  t.Add("normalization", Word("model.normalization", {{"LayerNorm", v1::NORMALIZATION_LAYER_NORM},
                                                      {"RMSNorm", v1::NORMALIZATION_RMS_NORM}}));
  t.Add("position-embedding-type",
        Word("model.position_embedding",
             {{"learned_absolute", v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE},
              {"rope", v1::POSITION_EMBEDDING_ROPE},
              {"yarn", v1::POSITION_EMBEDDING_ROPE},
              {"mrope", v1::POSITION_EMBEDDING_ROPE},
              {"none", v1::POSITION_EMBEDDING_NONE}}));
  // Legacy spellings of --position-embedding-type.
  t.Add("use-rotary-position-embeddings",
        Switch("model.position_embedding", v1::POSITION_EMBEDDING_ROPE));
  t.Add("no-position-embedding", Switch("model.position_embedding", v1::POSITION_EMBEDDING_NONE));
  t.Add("disable-bias-linear", Switch("model.add_bias_linear", false));
  t.Add("add-qkv-bias", Switch("model.add_qkv_bias", true));
  t.Add("qk-layernorm", Switch("model.qk_layernorm", true));
  t.Add("untie-embeddings-and-output-weights",
        Switch("model.untie_embeddings_and_output_weights", true));
  t.Add("hidden-dropout", Real("model.hidden_dropout", kProbability));
  t.Add("attention-dropout", Real("model.attention_dropout", kProbability));
  t.Add("multi-latent-attention", Switch("model.attention_type", v1::ATTENTION_TYPE_MLA));
  t.Add("q-lora-rank", Uint("model.q_lora_rank"));
  t.Add("kv-lora-rank", Uint("model.kv_lora_rank"));
  t.Add("qk-head-dim", Uint("model.qk_head_dim"));
  t.Add("qk-pos-emb-head-dim", Uint("model.qk_pos_emb_head_dim"));
  t.Add("v-head-dim", Uint("model.v_head_dim"));
  t.Add("num-experts", Uint("model.num_experts"));
  t.Add("moe-ffn-hidden-size", Uint("model.moe_ffn_hidden_size"));
  t.Add("moe-router-topk", Uint("model.moe_router_topk"));
  t.Add("moe-shared-expert-intermediate-size", Uint("model.moe_shared_expert_intermediate_size"));
  t.Add("moe-layer-freq", MoeLayerFreq());
  t.Add("moe-grouped-gemm", Switch("model.moe_grouped_gemm", true));
  t.Add("moe-token-dispatcher-type",
        Word("model.moe_token_dispatcher", {{"allgather", v1::TOKEN_DISPATCHER_ALLGATHER},
                                            {"alltoall", v1::TOKEN_DISPATCHER_ALLTOALL},
                                            {"flex", v1::TOKEN_DISPATCHER_FLEX}}));
  t.Add("moe-router-dtype", MoeRouterDtype());
  t.Add("moe-router-force-load-balancing", Switch("model.moe_router_force_load_balancing", true));
  t.Add("moe-expert-capacity-factor", Real("model.moe_expert_capacity_factor", kPositive));
  t.Add("moe-pad-expert-input-to-capacity", Switch("model.moe_pad_expert_input_to_capacity", true));
  t.Add("moe-flex-dispatcher-backend", Word("model.moe_flex_dispatcher_backend",
                                            {{"deepep", v1::FLEX_DISPATCHER_BACKEND_DEEPEP},
                                             {"hybridep", v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP},
                                             {"ncclep", v1::FLEX_DISPATCHER_BACKEND_NCCLEP}}));
  t.Add("moe-flex-dispatcher-num-sms", Uint("model.moe_flex_dispatcher_num_sms"));
  t.Add("moe-deepep-num-sms", Uint("model.moe_deepep_num_sms"));
  t.Add("moe-hybridep-num-sms", Uint("model.moe_hybridep_num_sms"));
  t.Add("moe-enable-deepep", Switch("model.moe_enable_deepep", true));
  t.Add("moe-expert-rank-capacity-factor",
        Real("model.moe_expert_rank_capacity_factor", kPositive));
  t.Add("moe-paged-stash", Switch("model.moe_paged_stash", true));
  t.Add("mtp-num-layers", Uint("model.mtp_num_layers"));
  // Hybrid (Mamba) models: the pattern (the deprecated spelling after the
  // current one, which the writer uses) and the Mamba mixer's sizes
  // (TransformerConfig.mamba_*, megatron/core/ssm/mamba_mixer.py).
  t.Add("hybrid-layer-pattern", AlsoRecord(Text("model.hybrid_layer_pattern"),
                                           [](ParseState& s) { s.hybrid_layer_pattern = true; }));
  t.Add("hybrid-override-pattern",
        AlsoRecord(Text("model.hybrid_layer_pattern"),
                   [](ParseState& s) { s.hybrid_override_pattern = true; }));
  t.Add("spec", Unmapped(FlagArity::kList, ApplySpec));
  t.Add("mamba-state-dim", Uint("model.mamba_state_dim"));
  t.Add("mamba-head-dim", Uint("model.mamba_head_dim"));
  t.Add("mamba-num-groups", Uint("model.mamba_num_groups"));
  t.Add("mamba-num-heads", Uint("model.mamba_num_heads"));
  t.Add("mamba-training-ssm-states-dtype",
        Word("model.mamba_training_ssm_states_dtype",
             {{"fp32", v1::DTYPE_FP32}, {"bf16", v1::DTYPE_BF16}}));
}

// Fully sharded data parallelism: the implementation (the two switches are
// recorded, as Megatron-LM refuses them together: flag_resolution.h) and
// Megatron-FSDP's settings (megatron/core/distributed/
// distributed_data_parallel_config.py, arguments.py _add_distributed_args).
void AddFsdpFlags(FlagTable& t) {
  t.Add("use-megatron-fsdp",
        AlsoRecord(Switch("parallelism.fsdp_implementation", v1::FSDP_IMPLEMENTATION_MEGATRON_FSDP),
                   [](ParseState& s) { s.megatron_fsdp = true; }));
  t.Add("use-torch-fsdp2",
        AlsoRecord(Switch("parallelism.fsdp_implementation", v1::FSDP_IMPLEMENTATION_TORCH_FSDP2),
                   [](ParseState& s) { s.torch_fsdp2 = true; }));
  t.Add("data-parallel-sharding-strategy",
        Word("parallelism.data_parallel_sharding_strategy",
             {{"no_shard", v1::SHARDING_STRATEGY_NO_SHARD},
              {"optim", v1::SHARDING_STRATEGY_OPTIM},
              {"optim_grads", v1::SHARDING_STRATEGY_OPTIM_GRADS},
              {"optim_grads_params", v1::SHARDING_STRATEGY_OPTIM_GRADS_PARAMS}}));
  // Megatron-LM's choices: no_shard and optim only.
  t.Add("outer-dp-sharding-strategy", Word("parallelism.outer_dp_sharding_strategy",
                                           {{"no_shard", v1::SHARDING_STRATEGY_NO_SHARD},
                                            {"optim", v1::SHARDING_STRATEGY_OPTIM}}));
  t.Add("fsdp-double-buffer", Switch("parallelism.fsdp_double_buffer", true));
  t.Add("megatron-fsdp-max-pool-double-buffer",
        Switch("parallelism.megatron_fsdp_max_pool_double_buffer", true));
  const std::vector<FlagWord> fsdp_dtypes = {{"fp32", v1::FSDP_DTYPE_FP32},
                                             {"bf16", v1::FSDP_DTYPE_BF16},
                                             {"fp16", v1::FSDP_DTYPE_FP16},
                                             {"auto", v1::FSDP_DTYPE_AUTO}};
  t.Add("megatron-fsdp-main-params-dtype",
        Word("parallelism.megatron_fsdp_main_params_dtype", fsdp_dtypes));
  t.Add("megatron-fsdp-main-grads-dtype",
        Word("parallelism.megatron_fsdp_main_grads_dtype", fsdp_dtypes));
  t.Add("suggested-communication-unit-size", Uint("parallelism.suggested_communication_unit_size"));
  t.Add("torch-fsdp2-no-reshard-after-forward",
        Switch("parallelism.torch_fsdp2_reshard_after_forward", false));
  t.Add("megatron-fsdp-version", Uint("parallelism.megatron_fsdp_version"));
}

void AddParallelismFlags(FlagTable& t) {
  t.Add("tensor-model-parallel-size", Uint("parallelism.tensor_model_parallel_size"));
  t.Add("pipeline-model-parallel-size", Uint("parallelism.pipeline_model_parallel_size"));
  t.Add("context-parallel-size", Uint("parallelism.context_parallel_size"));
  // No choices in arguments.py: the word goes to Transformer Engine, which
  // knows these four (attn_forward_func_with_cp; "allgather", the spelling
  // of Megatron-LM's help text, is not one of them).
  t.Add("cp-comm-type",
        WordSequence("parallelism.cp_comm_type", {{"p2p", v1::CP_COMM_TYPE_P2P},
                                                  {"a2a", v1::CP_COMM_TYPE_A2A},
                                                  {"all_gather", v1::CP_COMM_TYPE_ALL_GATHER},
                                                  {"a2a+p2p", v1::CP_COMM_TYPE_A2A_P2P}}));
  t.Add("hierarchical-context-parallel-sizes",
        UintList("parallelism.hierarchical_context_parallel_sizes"));
  t.Add("expert-model-parallel-size", Uint("parallelism.expert_model_parallel_size"));
  t.Add("expert-tensor-parallel-size", Uint("parallelism.expert_tensor_parallel_size"));
  t.Add("sequence-parallel", Switch("parallelism.sequence_parallel", true));
  t.Add("num-layers-per-virtual-pipeline-stage",
        Uint("parallelism.num_layers_per_virtual_pipeline_stage"));
  t.Add("num-virtual-stages-per-pipeline-rank",
        Uint("parallelism.num_virtual_stages_per_pipeline_rank"));
  // Its legacy spelling: Megatron-LM's flag for four days of February 2021
  // (commits dd88906264 to dcef906978). Its README showed it until 2026 and
  // some forks still register it, but Megatron-LM's own parser refuses it
  // (megatron/training/arguments.py lists virtual_pipeline_model_parallel_size
  // among the config fields with "no CLI argument"), hence the note.
  t.Add("virtual-pipeline-model-parallel-size",
        AlsoRecord(Uint("parallelism.num_virtual_stages_per_pipeline_rank"),
                   NoteVirtualPipelineSpelling));
  t.Add("microbatch-group-size-per-virtual-pipeline-stage",
        Uint("parallelism.microbatch_group_size_per_vp_stage"));
  t.Add("decoder-first-pipeline-num-layers", Uint("parallelism.decoder_first_pipeline_num_layers"));
  t.Add("decoder-last-pipeline-num-layers", Uint("parallelism.decoder_last_pipeline_num_layers"));
  t.Add("account-for-embedding-in-pipeline-split",
        Switch("parallelism.account_for_embedding_in_pipeline_split", true));
  t.Add("account-for-loss-in-pipeline-split",
        Switch("parallelism.account_for_loss_in_pipeline_split", true));
  t.Add("pipeline-model-parallel-layout", Text("parallelism.pipeline_model_parallel_layout"));
  t.Add("overlap-moe-expert-parallel-comm",
        Switch("parallelism.overlap_moe_expert_parallel_comm", true));
  t.Add("moe-shared-expert-overlap", Switch("parallelism.moe_shared_expert_overlap", true));
  t.Add("tp-comm-overlap", Switch("parallelism.tp_comm_overlap", true));
  AddFsdpFlags(t);
  t.Add("delay-wgrad-compute", Switch("parallelism.delay_wgrad_compute", true));
  t.Add("ep-overlap-early-attn-memory-release",
        Switch("parallelism.ep_overlap_early_attn_memory_release", true));
}

void AddTrainingFlags(FlagTable& t) {
  t.Add("micro-batch-size", Uint("training.micro_batch_size"));
  t.Add("global-batch-size", AlsoRecord(Uint("training.global_batch_size"),
                                        [](ParseState& s) { s.global_batch_size_given = true; }));
  t.Add("seq-length", Uint("training.seq_length"));
  t.Add("defer-embedding-wgrad-compute", Switch("training.defer_embedding_wgrad_compute", true));
  t.Add("wgrad-deferral-limit", Uint("training.wgrad_deferral_limit"));
  t.Add("no-masked-softmax-fusion", Switch("training.masked_softmax_fusion", false));
  t.Add("output-logit-dtype",
        Word("training.output_logit_dtype", {{"bf16", v1::DTYPE_BF16}, {"fp32", v1::DTYPE_FP32}}));
  t.Add("rampup-batch-size", Unmapped(FlagArity::kList, NoteRampupBatchSize));
  t.Add("step-batch-size-schedule",
        Resolved(FlagArity::kList, {"training.global_batch_size"}, RecordStepBatchSizeSchedule));
  t.Add("attention-backend",
        Word("training.attention_backend", {{"auto", v1::ATTENTION_BACKEND_UNSPECIFIED},
                                            {"flash", v1::ATTENTION_BACKEND_FLASH},
                                            {"fused", v1::ATTENTION_BACKEND_FUSED},
                                            {"unfused", v1::ATTENTION_BACKEND_UNFUSED},
                                            {"local", v1::ATTENTION_BACKEND_LOCAL}}));
  t.Add("use-flash-attn", Switch("training.attention_backend", v1::ATTENTION_BACKEND_FLASH));
  t.Add("transformer-impl",
        Word("training.transformer_impl",
             {{"transformer_engine", v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE},
              {"local", v1::TRANSFORMER_IMPL_LOCAL},
              {"inference_optimized", v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE}}));
  t.Add("cross-entropy-loss-fusion", Resolved(FlagArity::kSwitch, {"training.cross_entropy_fusion"},
                                              RecordCrossEntropyLossFusion));
  t.Add("cross-entropy-fusion-impl",
        Resolved(FlagArity::kOne, {"training.cross_entropy_fusion"}, RecordCrossEntropyFusionImpl));
  t.Add("no-rope-fusion", Switch("training.rope_fusion", false));
  t.Add("no-create-attention-mask-in-dataloader",
        Switch("training.create_attention_mask_in_dataloader", false));
}

void AddRecomputeFlags(FlagTable& t) {
  t.Add("recompute-granularity",
        Word("recompute.granularity", {{"full", v1::RECOMPUTE_GRANULARITY_FULL},
                                       {"selective", v1::RECOMPUTE_GRANULARITY_SELECTIVE},
                                       {"none", v1::RECOMPUTE_GRANULARITY_NONE}}));
  t.Add("recompute-method", Word("recompute.method", {{"uniform", v1::RECOMPUTE_METHOD_UNIFORM},
                                                      {"block", v1::RECOMPUTE_METHOD_BLOCK}}));
  t.Add("recompute-num-layers", Uint("recompute.num_layers"));
  t.Add("recompute-modules", WordList("recompute.modules", RecomputeModuleWords()));
  // Megatron's legacy switch: selective recompute with the default modules.
  t.Add("recompute-activations",
        Switch("recompute.granularity", v1::RECOMPUTE_GRANULARITY_SELECTIVE));
  t.Add("cpu-offloading-num-layers", Uint("recompute.cpu_offloading_num_layers"));
  t.Add("fine-grained-activation-offloading",
        Switch("recompute.fine_grained_activation_offloading", true));
  t.Add("offload-modules", TextList("recompute.offload_modules"));
}

void AddPrecisionFlags(FlagTable& t) {
  t.Add("bf16", AlsoRecord(Switch("precision.params_dtype", v1::DTYPE_BF16),
                           [](ParseState& s) { s.bf16 = true; }));
  t.Add("fp16", AlsoRecord(Switch("precision.params_dtype", v1::DTYPE_FP16),
                           [](ParseState& s) { s.fp16 = true; }));
  // FP8 training (estimator/fp8_memory.h). --fp8-format also sets the
  // `fp8` switch older clients read.
  MegatronFlag fp8_format =
      AlsoRecord(Word("precision.fp8_format", {{"e4m3", v1::PrecisionSpec::FP8_FORMAT_E4M3},
                                               {"hybrid", v1::PrecisionSpec::FP8_FORMAT_HYBRID}}),
                 [](ParseState& s) { s.job->mutable_precision()->set_fp8(true); });
  fp8_format.fields.push_back("precision.fp8");
  t.Add("fp8-format", std::move(fp8_format));
  // `custom` (a quantizer factory) is not modelled, so not a choice.
  t.Add("fp8-recipe",
        Word("precision.fp8_recipe", {{"delayed", v1::PrecisionSpec::FP8_RECIPE_DELAYED},
                                      {"tensorwise", v1::PrecisionSpec::FP8_RECIPE_TENSORWISE},
                                      {"blockwise", v1::PrecisionSpec::FP8_RECIPE_BLOCKWISE},
                                      {"mxfp8", v1::PrecisionSpec::FP8_RECIPE_MXFP8}}));
  t.Add("fp8-param-gather", Switch("precision.fp8_param_gather", true));
  t.Add("reuse-grad-buf-for-mxfp8-param-ag",
        Switch("precision.reuse_grad_buf_for_mxfp8_param_ag", true));
  // NVFP4 training (estimator/fp8_memory.h); `custom` (a quantizer
  // factory) is not modelled, so not a choice of --fp4-recipe.
  t.Add("fp4-format", Word("precision.fp4_format", {{"e2m1", v1::PrecisionSpec::FP4_FORMAT_E2M1}}));
  t.Add("fp4-recipe",
        Word("precision.fp4_recipe", {{"nvfp4", v1::PrecisionSpec::FP4_RECIPE_NVFP4}}));
  t.Add("fp4-param-gather", Switch("precision.fp4_param_gather", true));
  t.Add("first-last-layers-bf16", Switch("precision.first_last_layers_bf16", true));
  t.Add("num-layers-at-start-in-bf16", Uint("precision.num_layers_at_start_in_bf16"));
  t.Add("num-layers-at-end-in-bf16", Uint("precision.num_layers_at_end_in_bf16"));
  t.Add("moe-router-padding-for-fp8", Switch("precision.moe_router_padding_for_fp8", true));
  t.Add("moe-router-padding-for-quantization",
        Switch("precision.moe_router_padding_for_fp8", true));
  t.Add("optimizer", Word("precision.optimizer", {{"adam", v1::OPTIMIZER_ADAM},
                                                  {"sgd", v1::OPTIMIZER_SGD},
                                                  {"muon", v1::OPTIMIZER_MUON},
                                                  {"dist_muon", v1::OPTIMIZER_MUON}}));
  t.Add("use-distributed-optimizer", Switch("precision.use_distributed_optimizer", true));
  t.Add("num-distributed-optimizer-instances",
        Uint("precision.num_distributed_optimizer_instances"));
  // The gradient buffer's dtype follows these three and the parameter dtype
  // (ResolveGradBufferDtype in flag_resolution.cc); each sets the field as
  // read, and the resolution corrects it at the end of the line.
  t.Add("main-grads-dtype", MainGradsDtypeFlag());
  t.Add("grad-reduce-in-bf16", AlsoRecord(Switch("precision.main_grads_dtype", v1::DTYPE_BF16),
                                          [](ParseState& s) { s.grad_reduce_in_bf16 = true; }));
  t.Add("accumulate-allreduce-grads-in-fp32",
        AlsoRecord(Switch("precision.main_grads_dtype", v1::DTYPE_FP32),
                   [](ParseState& s) { s.accumulate_allreduce_grads_in_fp32 = true; }));
  t.Add("use-precision-aware-optimizer", Switch("precision.use_precision_aware_optimizer", true));
  t.Add("main-params-dtype", Word("precision.main_params_dtype", DtypeWords()));
  t.Add("exp-avg-dtype", Word("precision.exp_avg_dtype", DtypeWords()));
  t.Add("exp-avg-sq-dtype", Word("precision.exp_avg_sq_dtype", DtypeWords()));
  t.Add("optimizer-cpu-offload", Switch("precision.optimizer_cpu_offload", true));
  t.Add("optimizer-offload-fraction", Real("precision.optimizer_offload_fraction", kFraction));
}

void AddRuntimeFlags(FlagTable& t) {
  t.Add("cuda-graph-impl", Word("runtime.cuda_graph_impl",
                                {{"none", v1::CUDA_GRAPH_IMPL_NONE},
                                 {"local", v1::CUDA_GRAPH_IMPL_LOCAL},
                                 {"transformer_engine", v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE},
                                 {"full_iteration", v1::CUDA_GRAPH_IMPL_FULL_ITERATION}}));
  // Legacy spellings of --cuda-graph-impl.
  t.Add("enable-cuda-graph", Switch("runtime.cuda_graph_impl", v1::CUDA_GRAPH_IMPL_LOCAL));
  t.Add("external-cuda-graph",
        Switch("runtime.cuda_graph_impl", v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE));
  t.Add("cuda-graph-scope", TextList("runtime.cuda_graph_modules"));
  t.Add("cuda-graph-modules", TextList("runtime.cuda_graph_modules"));
  t.Add("optimizer-cuda-graph", Switch("runtime.optimizer_cuda_graph", true));
  t.Add("use-nccl-ub", Switch("runtime.use_nccl_ub", true));
  t.Add("no-gradient-accumulation-fusion", Switch("runtime.gradient_accumulation_fusion", false));
}

// Megatron-LM features oomguard refuses (ignored_flags.h).
void AddUnimplementedFlags(FlagTable& t) {
  for (absl::string_view name : UnimplementedFlags()) {
    t.Add(name, MegatronFlag{.unimplemented = true});
  }
}

const FlagTable& Flags() {
  static const FlagTable* const kTable = [] {
    auto* table = new FlagTable;
    AddModelFlags(*table);
    AddParallelismFlags(*table);
    AddTrainingFlags(*table);
    AddRecomputeFlags(*table);
    AddPrecisionFlags(*table);
    AddRuntimeFlags(*table);
    AddUnimplementedFlags(*table);
    return table;
  }();
  return *kTable;
}

}  // namespace

std::string MegatronFlag::Spelling() const { return absl::StrCat("--", name); }

absl::string_view MegatronFlag::WordFor(int value) const {
  return oomguard::WordFor(words, value).value_or(absl::string_view());
}

std::string CanonicalFlagName(std::string_view std_name) {
  absl::string_view name(std_name.data(), std_name.size());
  absl::ConsumePrefix(&name, "--");
  std::string canonical(name);
  std::replace(canonical.begin(), canonical.end(), '_', '-');
  return canonical;
}

const MegatronFlag* FindMegatronFlag(std::string_view name) {
  return Flags().Find(CanonicalFlagName(name));
}

const std::vector<MegatronFlag>& MegatronFlags() { return Flags().flags(); }

const MegatronFlag* FindMegatronFlagForField(std::string_view field_path) {
  return Flags().FindForField(absl::string_view(field_path.data(), field_path.size()));
}

absl::string_view RecomputeModuleWord(v1::RecomputeModule module) {
  return WordFor(RecomputeModuleWords(), module).value_or(absl::string_view());
}

}  // namespace oomguard
