#include "estimator/validated_job.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "estimator/activation_cpu_offload.h"
#include "estimator/attention_backend.h"
#include "estimator/context_parallel_attention.h"
#include "estimator/cuda_graph_rules.h"
#include "estimator/fp8_memory.h"
#include "estimator/fsdp_memory.h"
#include "estimator/interleaved_schedule_rules.h"
#include "estimator/job_defaults.h"
#include "estimator/known_enums.h"
#include "estimator/pipeline_layout.h"
#include "estimator/recompute_rules.h"

namespace oomguard {
namespace {

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

// Checks 1 <= value <= max for a required or defaulted size.
absl::Status CheckSize(absl::string_view field, int64_t value, int64_t max) {
  if (value < 1) return Bad(field, value, "must be at least 1");
  if (value > max) return Bad(field, value, absl::StrCat("is absurdly large (limit ", max, ")"));
  return absl::OkStatus();
}

// a x b x c, three parallel sizes (each in [1, kMaxGpus]) whose product must
// divide parallelism.num_gpus: `names` = "TP x PP x CP", `hint` says why.
// a x b is below 2^45; the product of all three can reach 2^66, so it is
// formed only when it fits in int64 (otherwise it cannot divide num_gpus).
absl::StatusOr<int64_t> DividingProduct(int64_t num_gpus, absl::string_view names, int64_t a,
                                        int64_t b, int64_t c, absl::string_view hint) {
  const int64_t ab = a * b;
  const int64_t abc = c <= std::numeric_limits<int64_t>::max() / ab ? ab * c : 0;  // 0: overflow.
  if (abc == 0 || num_gpus % abc != 0) {
    return Bad("parallelism.num_gpus", num_gpus,
               absl::StrCat("not divisible by ", names, " = ", a, " x ", b, " x ", c,
                            abc > 0 ? absl::StrCat(" = ", abc) : "", " (", hint, ")"));
  }
  return abc;
}

absl::Status CheckFraction(absl::string_view field, double value, bool allow_one) {
  if (!std::isfinite(value) || value < 0 || value > 1 || (!allow_one && value == 1)) {
    return Bad(field, value, allow_one ? "must be in [0, 1]" : "must be in [0, 1)");
  }
  return absl::OkStatus();
}

double DtypeBytes(v1::Dtype d, double fallback) {
  switch (d) {
    case v1::DTYPE_FP32:
      return 4;
    case v1::DTYPE_BF16:
    case v1::DTYPE_FP16:
      return 2;
    case v1::DTYPE_FP8:
      return 1;
    default:
      return fallback;
  }
}

// The transformer's sizes and layer options, before latent attention and MoE.
absl::Status ResolveModelShape(const v1::ModelSpec& m, const HybridSettings& hybrid,
                               ModelShape& model) {
  // A hybrid pattern is the model: Megatron-LM's validate_args takes the
  // layer count from it and ignores --num-layers.
  model.num_layers = hybrid.on ? static_cast<int64_t>(hybrid.layers.size()) : m.num_layers();
  model.hidden = m.hidden_size();
  model.heads = m.num_attention_heads();
  model.vocab = m.vocab_size();
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.num_layers", model.num_layers, kMaxLayers));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.hidden_size", model.hidden, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.num_attention_heads", model.heads, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.vocab_size", model.vocab, kMaxVocab));

  const v1::Activation act = m.activation();
  model.gated = act == v1::ACTIVATION_SWIGLU || act == v1::ACTIVATION_GEGLU;
  if (m.has_ffn_hidden_size()) {
    model.ffn = m.ffn_hidden_size();
  } else {
    model.ffn = model.gated ? (4 * model.hidden * 2 / 3) / 64 * 64 : 4 * model.hidden;
  }
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.ffn_hidden_size", model.ffn, kMaxWidth));

  model.query_groups = m.has_num_query_groups() ? m.num_query_groups() : model.heads;
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.num_query_groups", model.query_groups, kMaxWidth));
  if (model.heads % model.query_groups != 0) {
    return Bad("model.num_query_groups", model.query_groups,
               absl::StrCat("must divide model.num_attention_heads ", model.heads));
  }
  if (m.has_kv_channels()) {
    model.head_dim = m.kv_channels();
  } else {
    if (model.hidden % model.heads != 0) {
      return Bad("model.num_attention_heads", model.heads,
                 absl::StrCat("must divide model.hidden_size ", model.hidden,
                              " when model.kv_channels is not set"));
    }
    model.head_dim = model.hidden / model.heads;
  }
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.kv_channels", model.head_dim, kMaxWidth));

  model.layer_norm = m.normalization() != v1::NORMALIZATION_RMS_NORM;
  const v1::PositionEmbedding pe = m.position_embedding();
  model.rope = pe == v1::POSITION_EMBEDDING_ROPE;
  model.learned_positions =
      pe == v1::POSITION_EMBEDDING_UNSPECIFIED || pe == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE;
  model.linear_bias = m.has_add_bias_linear() ? m.add_bias_linear() : true;
  model.qkv_bias = model.linear_bias || m.add_qkv_bias();
  model.qk_layernorm = m.qk_layernorm();
  model.tied_embeddings = !m.untie_embeddings_and_output_weights();
  model.value_head = m.value_head();
  if (model.value_head && model.tied_embeddings) {
    return absl::InvalidArgumentError(
        "model.value_head: a value head is its own hidden x 1 layer; set "
        "model.untie_embeddings_and_output_weights (the critic shares no weight with its "
        "embedding)");
  }
  model.hidden_dropout = m.has_hidden_dropout() ? m.hidden_dropout() : 0.1;
  model.attention_dropout = m.has_attention_dropout() ? m.attention_dropout() : 0.1;
  OOMGUARD_RETURN_IF_ERROR(CheckFraction("model.hidden_dropout", model.hidden_dropout, false));
  OOMGUARD_RETURN_IF_ERROR(
      CheckFraction("model.attention_dropout", model.attention_dropout, false));
  return absl::OkStatus();
}

absl::Status ResolveLatentAttention(const v1::ModelSpec& m, LatentAttentionShape& mla) {
  mla.enabled = m.attention_type() == v1::ATTENTION_TYPE_MLA;
  mla.q_lora_rank = m.has_q_lora_rank() ? m.q_lora_rank() : 0;
  mla.kv_lora_rank = m.has_kv_lora_rank() ? m.kv_lora_rank() : 32;
  mla.qk_head_dim = m.has_qk_head_dim() ? m.qk_head_dim() : 128;
  mla.qk_pos_head_dim = m.has_qk_pos_emb_head_dim() ? m.qk_pos_emb_head_dim() : 64;
  mla.v_head_dim = m.has_v_head_dim() ? m.v_head_dim() : 128;
  if (!mla.enabled) return absl::OkStatus();
  if (mla.q_lora_rank > kMaxWidth) {
    return Bad("model.q_lora_rank", mla.q_lora_rank, "is absurdly large");
  }
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.kv_lora_rank", mla.kv_lora_rank, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.qk_head_dim", mla.qk_head_dim, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.qk_pos_emb_head_dim", mla.qk_pos_head_dim, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.v_head_dim", mla.v_head_dim, kMaxWidth));
  return absl::OkStatus();
}

absl::Status ResolveMoe(const v1::ModelSpec& m, const ModelShape& model, MoeSettings& moe) {
  moe.experts = m.num_experts();
  if (moe.experts > kMaxWidth) return Bad("model.num_experts", moe.experts, "is absurdly large");
  moe.expert_ffn = m.has_moe_ffn_hidden_size() ? m.moe_ffn_hidden_size() : model.ffn;
  moe.topk = m.has_moe_router_topk() ? m.moe_router_topk() : 2;
  moe.shared_ffn = m.moe_shared_expert_intermediate_size();
  moe.grouped_gemm = m.moe_grouped_gemm();
  moe.router_fp32 = m.moe_router_dtype_fp32();
  moe.flex_dispatcher = m.moe_token_dispatcher() == v1::TOKEN_DISPATCHER_FLEX;
  moe.allgather_dispatcher = m.moe_token_dispatcher() == v1::TOKEN_DISPATCHER_UNSPECIFIED ||
                             m.moe_token_dispatcher() == v1::TOKEN_DISPATCHER_ALLGATHER;
  moe.force_balance = m.moe_router_force_load_balancing();
  moe.capacity_factor = m.has_moe_expert_capacity_factor() ? m.moe_expert_capacity_factor() : 0;
  moe.pad_to_capacity = m.moe_pad_expert_input_to_capacity();
  moe.is_moe_layer.assign(model.num_layers, false);
  if (moe.experts > 0) {
    OOMGUARD_RETURN_IF_ERROR(CheckSize("model.moe_ffn_hidden_size", moe.expert_ffn, kMaxWidth));
    if (moe.topk < 1 || moe.topk > moe.experts) {
      return Bad("model.moe_router_topk", moe.topk,
                 absl::StrCat("must be in [1, model.num_experts = ", moe.experts, "]"));
    }
    if (!std::isfinite(moe.capacity_factor) || moe.capacity_factor < 0) {
      return Bad("model.moe_expert_capacity_factor", moe.capacity_factor, "must be > 0");
    }
    if (m.moe_layer_pattern_size() > 0) {
      if (m.moe_layer_pattern_size() != model.num_layers) {
        return Bad(
            "model.moe_layer_pattern", absl::StrCat(m.moe_layer_pattern_size(), " entries"),
            absl::StrCat("needs one entry per layer (model.num_layers = ", model.num_layers, ")"));
      }
      for (int i = 0; i < m.moe_layer_pattern_size(); ++i) {
        uint32_t v = m.moe_layer_pattern(i);
        if (v > 1) {
          return Bad(absl::StrCat("model.moe_layer_pattern[", i, "]"), v, "must be 0 or 1");
        }
        moe.is_moe_layer[i] = v == 1;
      }
    } else {
      const int64_t freq = m.has_moe_layer_freq() ? m.moe_layer_freq() : 1;
      OOMGUARD_RETURN_IF_ERROR(CheckSize("model.moe_layer_freq", freq, model.num_layers));
      for (int64_t i = 0; i < model.num_layers; ++i) moe.is_moe_layer[i] = i % freq == 0;
    }
  } else if (m.moe_layer_pattern_size() > 0 || m.moe_shared_expert_intermediate_size() > 0) {
    return Bad("model.num_experts", 0, "MoE fields are set but the model has no experts");
  }
  return absl::OkStatus();
}

// A hybrid model's pattern (hybrid_layer_allocation.py): its layers, their
// pipeline segments and its MTP depths. Its MoE layers are the 'E' layers
// (moe_layer_freq does not apply to a hybrid stack).
absl::Status ResolveHybridPattern(const v1::ModelSpec& m, HybridSettings& hybrid,
                                  int64_t& mtp_depths) {
  hybrid.on = !m.hybrid_layer_pattern().empty();
  if (!hybrid.on) return absl::OkStatus();
  OOMGUARD_ASSIGN_OR_RETURN(const HybridPattern pattern,
                            ParseHybridLayerPattern(m.hybrid_layer_pattern()));
  hybrid.layers = pattern.Layers();
  if (pattern.has_pipes()) {
    for (const std::vector<HybridLayer>& segment : pattern.segments) {
      hybrid.segment_layers.push_back(static_cast<int64_t>(segment.size()));
    }
  }
  // validate_args: the pattern's MTP depths replace --mtp-num-layers.
  mtp_depths = pattern.mtp_depths;
  return absl::OkStatus();
}

void MarkHybridMoeLayers(const HybridSettings& hybrid, MoeSettings& moe) {
  for (size_t i = 0; i < hybrid.layers.size(); ++i) {
    moe.is_moe_layer[i] = hybrid.layers[i] == HybridLayer::kMoe;
  }
}

// JobSpec.model: the model shape, latent attention, MoE and MTP layers.
absl::Status ResolveModel(const v1::ModelSpec& m, ValidatedJob& j) {
  int64_t hybrid_mtp_depths = 0;
  OOMGUARD_RETURN_IF_ERROR(ResolveHybridPattern(m, j.hybrid, hybrid_mtp_depths));
  OOMGUARD_RETURN_IF_ERROR(ResolveModelShape(m, j.hybrid, j.model));
  OOMGUARD_RETURN_IF_ERROR(ResolveLatentAttention(m, j.mla));
  OOMGUARD_RETURN_IF_ERROR(ResolveMoe(m, j.model, j.moe));
  j.model.mtp_layers = m.mtp_num_layers();
  if (j.hybrid.on) {
    const bool moe_layers = std::find(j.hybrid.layers.begin(), j.hybrid.layers.end(),
                                      HybridLayer::kMoe) != j.hybrid.layers.end();
    if (moe_layers && j.moe.experts == 0) {
      return Bad("model.num_experts", 0,
                 "model.hybrid_layer_pattern has MoE layers (E), which need experts");
    }
    if (j.moe.experts > 0) MarkHybridMoeLayers(j.hybrid, j.moe);
    if (hybrid_mtp_depths > 0) j.model.mtp_layers = hybrid_mtp_depths;
  }
  if (j.model.value_head && j.model.mtp_layers > 0) {
    return Bad("model.mtp_num_layers", j.model.mtp_layers,
               "a model with a value head (model.value_head) predicts no further tokens");
  }
  if (j.model.mtp_layers > 64) {
    return Bad("model.mtp_num_layers", j.model.mtp_layers, "is absurdly large");
  }
  j.moe.mtp_layer_is_moe = j.moe.experts > 0 && j.moe.is_moe_layer.back();
  return absl::OkStatus();
}

// Virtual pipeline stages per PP rank, from either of the two flags that
// set them (1 when neither is set).
absl::StatusOr<int64_t> ResolveVirtualStages(const v1::ParallelismSpec& spec,
                                             const ModelShape& model, int64_t pp) {
  if (spec.has_num_layers_per_virtual_pipeline_stage() &&
      spec.has_num_virtual_stages_per_pipeline_rank()) {
    return Bad("parallelism.num_virtual_stages_per_pipeline_rank",
               spec.num_virtual_stages_per_pipeline_rank(),
               "set either it or num_layers_per_virtual_pipeline_stage, not both");
  }
  if (spec.has_num_layers_per_virtual_pipeline_stage()) {
    const int64_t per = spec.num_layers_per_virtual_pipeline_stage();
    OOMGUARD_RETURN_IF_ERROR(
        CheckSize("parallelism.num_layers_per_virtual_pipeline_stage", per, kMaxLayers));
    if (model.num_layers % (per * pp) != 0) {
      return Bad(
          "parallelism.num_layers_per_virtual_pipeline_stage", per,
          absl::StrCat("model.num_layers ", model.num_layers, " is not divisible by it x PP ", pp));
    }
    return model.num_layers / (per * pp);
  }
  if (spec.has_num_virtual_stages_per_pipeline_rank()) {
    const int64_t vpp = spec.num_virtual_stages_per_pipeline_rank();
    OOMGUARD_RETURN_IF_ERROR(
        CheckSize("parallelism.num_virtual_stages_per_pipeline_rank", vpp, kMaxLayers));
    return vpp;
  }
  return int64_t{1};
}

// validate_args with --hybrid-layer-pattern: the pattern's '|' segments
// define the pipeline stages, so the flags that define them otherwise are
// refused (first / last stage layers only with pipes).
absl::Status CheckHybridPipelineFlags(const v1::ParallelismSpec& spec, bool pipes) {
  const char* refused = nullptr;
  if (pipes && spec.has_decoder_first_pipeline_num_layers()) {
    refused = "parallelism.decoder_first_pipeline_num_layers";
  } else if (pipes && spec.has_decoder_last_pipeline_num_layers()) {
    refused = "parallelism.decoder_last_pipeline_num_layers";
  }
  if (spec.has_num_layers_per_virtual_pipeline_stage()) {
    refused = "parallelism.num_layers_per_virtual_pipeline_stage";
  } else if (spec.has_num_virtual_stages_per_pipeline_rank()) {
    refused = "parallelism.num_virtual_stages_per_pipeline_rank";
  } else if (!spec.pipeline_model_parallel_layout().empty()) {
    refused = "parallelism.pipeline_model_parallel_layout";
  } else if (spec.account_for_embedding_in_pipeline_split()) {
    refused = "parallelism.account_for_embedding_in_pipeline_split";
  } else if (spec.account_for_loss_in_pipeline_split()) {
    refused = "parallelism.account_for_loss_in_pipeline_split";
  }
  if (refused != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        refused,
        " is set with model.hybrid_layer_pattern, which Megatron-LM refuses: a hybrid model's "
        "pipeline stages are the pattern's '|' segments"));
  }
  return absl::OkStatus();
}

// The virtual stages of a pattern with '|' segments
// (hybrid_layer_allocation.py select_pipeline_segment): segment i is
// virtual stage i / PP of pipeline rank i % PP, which is stage index i; the
// first holds the embedding, the last the loss. The segments must be a
// multiple of PP (validate_args); more than PP make virtual stages.
absl::StatusOr<std::vector<StageContents>> PlaceHybridSegments(const HybridSettings& hybrid,
                                                               int64_t pp) {
  const auto segments = static_cast<int64_t>(hybrid.segment_layers.size());
  if (segments % pp != 0) {
    return Bad("parallelism.pipeline_model_parallel_size", pp,
               absl::StrCat("must divide the ", segments,
                            " pipeline segments ('|') of model.hybrid_layer_pattern"));
  }
  if (segments > kMaxVirtualStages) {
    return Bad("model.hybrid_layer_pattern", absl::StrCat(segments, " segments"),
               absl::StrCat("is absurdly many virtual stages (limit ", kMaxVirtualStages, ")"));
  }
  std::vector<StageContents> stages(segments);
  int64_t first = 0;
  for (int64_t i = 0; i < segments; ++i) {
    stages[i].first_layer = static_cast<int>(first);
    stages[i].num_layers = static_cast<int>(hybrid.segment_layers[i]);
    first += hybrid.segment_layers[i];
  }
  stages.front().has_embedding = true;
  stages.back().has_loss = true;
  return stages;
}

absl::Status ResolveParallelism(const v1::ParallelismSpec& spec, ValidatedJob& j,
                                std::vector<std::string>* notes) {
  const ModelShape& model = j.model;
  const MoeSettings& moe = j.moe;
  Parallelism& par = j.parallelism;
  par.world = spec.num_gpus();
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.num_gpus", par.world, kMaxGpus));
  par.tp = TensorParallelSize(spec);
  par.pp = PipelineParallelSize(spec);
  par.cp = ContextParallelSize(spec);
  par.ep = ExpertParallelSize(spec);
  par.etp = ExpertTensorParallelSize(spec);
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.tensor_model_parallel_size", par.tp, kMaxGpus));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.pipeline_model_parallel_size", par.pp, kMaxGpus));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.context_parallel_size", par.cp, kMaxGpus));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.expert_model_parallel_size", par.ep, kMaxGpus));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("parallelism.expert_tensor_parallel_size", par.etp, kMaxGpus));
  OOMGUARD_ASSIGN_OR_RETURN(
      const int64_t model_parallel,
      DividingProduct(par.world, "TP x PP x CP", par.tp, par.pp, par.cp, "W/PP = TP*CP*DP"));
  par.dp = par.world / model_parallel;
  OOMGUARD_ASSIGN_OR_RETURN(
      const int64_t expert_parallel,
      DividingProduct(par.world, "PP x EP x ETP", par.pp, par.ep, par.etp, "W/PP = EP*ETP*EDP"));
  par.edp = par.world / expert_parallel;
  if (moe.experts == 0 && par.ep > 1) {
    return Bad("parallelism.expert_model_parallel_size", par.ep,
               "needs an MoE model (model.num_experts > 0)");
  }
  if (moe.experts > 0 && moe.experts % par.ep != 0) {
    return Bad("parallelism.expert_model_parallel_size", par.ep,
               absl::StrCat("must divide model.num_experts ", moe.experts));
  }
  if (model.heads % par.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", par.tp,
               absl::StrCat("must divide model.num_attention_heads ", model.heads));
  }
  if (!j.mla.enabled && model.query_groups % par.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", par.tp,
               absl::StrCat("must divide model.num_query_groups ", model.query_groups));
  }
  if (model.ffn % par.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", par.tp,
               absl::StrCat("must divide model.ffn_hidden_size ", model.ffn));
  }
  if (moe.experts > 0 && moe.expert_ffn % par.etp != 0) {
    return Bad("parallelism.expert_tensor_parallel_size", par.etp,
               absl::StrCat("must divide model.moe_ffn_hidden_size ", moe.expert_ffn));
  }
  par.sp = spec.sequence_parallel();
  if (par.sp && par.tp == 1) {
    par.sp = false;
    if (notes) notes->push_back("sequence_parallel has no effect at TP=1 (Megatron turns it off)");
  }
  if (moe.experts > 0 && par.tp > 1 && !par.sp) {
    return Bad("parallelism.sequence_parallel", "false",
               "Megatron-Core requires sequence parallelism for MoE models with TP > 1");
  }
  par.overlap_moe_ep = spec.overlap_moe_expert_parallel_comm();
  par.shared_expert_overlap = spec.moe_shared_expert_overlap();
  par.tp_comm_overlap = spec.tp_comm_overlap();

  if (j.hybrid.on) {
    OOMGUARD_RETURN_IF_ERROR(CheckHybridPipelineFlags(spec, !j.hybrid.segment_layers.empty()));
  }
  OOMGUARD_ASSIGN_OR_RETURN(par.vpp, ResolveVirtualStages(spec, model, par.pp));
  // Each virtual stage is placed in memory and reported: PP x VPP stays
  // within kMaxVirtualStages (a layout's stages are counted after placing).
  if (par.pp > kMaxVirtualStages) {
    return Bad("parallelism.pipeline_model_parallel_size", par.pp,
               absl::StrCat("is absurdly large (limit ", kMaxVirtualStages, " pipeline stages)"));
  }
  if (par.vpp > kMaxVirtualStages / par.pp) {
    return Bad("parallelism.num_virtual_stages_per_pipeline_rank", par.vpp,
               absl::StrCat("times pipeline_model_parallel_size ", par.pp,
                            " is absurdly large (limit ", kMaxVirtualStages, " virtual stages)"));
  }
  PlacementInput place;
  place.num_layers = model.num_layers;
  place.mtp_layers = model.mtp_layers;
  place.pp = par.pp;
  place.vpp = par.vpp;
  place.first_stage_layers = spec.has_decoder_first_pipeline_num_layers()
                                 ? int64_t{spec.decoder_first_pipeline_num_layers()}
                                 : -1;
  place.last_stage_layers = spec.has_decoder_last_pipeline_num_layers()
                                ? int64_t{spec.decoder_last_pipeline_num_layers()}
                                : -1;
  place.account_for_embedding = spec.account_for_embedding_in_pipeline_split();
  place.account_for_loss = spec.account_for_loss_in_pipeline_split();
  place.layout = spec.pipeline_model_parallel_layout();
  if (!j.hybrid.segment_layers.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(j.stages, PlaceHybridSegments(j.hybrid, par.pp));
  } else {
    OOMGUARD_ASSIGN_OR_RETURN(j.stages, PlaceLayers(place));
  }
  if (static_cast<int64_t>(j.stages.size()) > kMaxVirtualStages) {
    return Bad(
        "parallelism.pipeline_model_parallel_layout", Quote(place.layout),
        absl::StrCat("has ", j.stages.size(), " virtual stages (limit ", kMaxVirtualStages, ")"));
  }
  par.vpp = static_cast<int64_t>(j.stages.size()) / par.pp;
  if (par.vpp > 1 && par.pp == 1) {
    return Bad("parallelism.pipeline_model_parallel_size", 1,
               "virtual pipeline stages need pipeline_model_parallel_size > 1");
  }
  for (StageContents& st : j.stages) {
    for (int l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
      if (!moe.is_moe_layer[l]) ++st.num_dense_layers;
      if (j.hybrid.on) {
        st.num_mamba_layers += j.hybrid.layers[l] == HybridLayer::kMamba;
        st.num_attention_layers += j.hybrid.layers[l] == HybridLayer::kAttention;
      }
    }
  }
  par.group_size = spec.has_microbatch_group_size_per_vp_stage()
                       ? spec.microbatch_group_size_per_vp_stage()
                       : par.pp;
  OOMGUARD_RETURN_IF_ERROR(
      CheckSize("parallelism.microbatch_group_size_per_vp_stage", par.group_size, kMaxBatch));
  return absl::OkStatus();
}

// JobSpec.training, and model.max_positions (its default is the sequence
// length).
absl::Status ResolveTraining(const v1::JobSpec& job, ValidatedJob& j) {
  const v1::TrainingSpec& t = job.training();
  const Parallelism& par = j.parallelism;
  TrainingSettings& training = j.training;
  training.micro_batch = t.micro_batch_size();
  training.seq = t.seq_length();
  OOMGUARD_RETURN_IF_ERROR(CheckSize("training.micro_batch_size", training.micro_batch, kMaxBatch));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("training.seq_length", training.seq, kMaxSeq));
  training.global_batch =
      t.has_global_batch_size() ? t.global_batch_size() : training.micro_batch * par.dp;
  OOMGUARD_RETURN_IF_ERROR(
      CheckSize("training.global_batch_size", training.global_batch, kMaxBatch));
  if (training.global_batch % (training.micro_batch * par.dp) != 0) {
    return Bad("training.global_batch_size", training.global_batch,
               absl::StrCat("not divisible by micro_batch_size x DP = ", training.micro_batch,
                            " x ", par.dp));
  }
  training.num_microbatches = training.global_batch / (training.micro_batch * par.dp);
  OOMGUARD_RETURN_IF_ERROR(CheckMicroBatchGroups(
      par, training, job.parallelism().has_microbatch_group_size_per_vp_stage()));
  if (par.sp && training.seq % par.tp != 0) {
    return Bad("training.seq_length", training.seq,
               absl::StrCat("must be divisible by TP ", par.tp, " with sequence parallelism"));
  }
  if (par.cp > 1 && training.seq % (2 * par.cp) != 0) {
    return Bad("training.seq_length", training.seq,
               absl::StrCat("must be divisible by 2 x CP = ", 2 * par.cp));
  }
  if (j.model.learned_positions) {
    j.model.max_positions = job.model().has_max_position_embeddings()
                                ? job.model().max_position_embeddings()
                                : training.seq;
    if (j.model.max_positions < training.seq) {
      return Bad("model.max_position_embeddings", j.model.max_positions,
                 absl::StrCat("is shorter than training.seq_length ", training.seq));
    }
  } else {
    j.model.max_positions = 0;
  }
  // The attention kernel and its softmax: estimator/attention_backend.h,
  // once the GPU architecture is known.
  training.transformer_engine = t.transformer_impl() != v1::TRANSFORMER_IMPL_LOCAL;
  training.ce_fusion = t.cross_entropy_fusion();
  switch (t.output_logit_dtype()) {
    case v1::DTYPE_UNSPECIFIED:
      training.logit_bytes = 0;
      break;
    case v1::DTYPE_BF16:
      training.logit_bytes = 2;
      break;
    case v1::DTYPE_FP32:
      training.logit_bytes = 4;
      break;
    default:
      // arguments.py: choices bf16 and fp32.
      return Bad("training.output_logit_dtype", v1::Dtype_Name(t.output_logit_dtype()),
                 "must be DTYPE_BF16 or DTYPE_FP32 (--output-logit-dtype bf16|fp32)");
  }
  const v1::Dtype params = job.precision().params_dtype() == v1::DTYPE_UNSPECIFIED
                               ? v1::DTYPE_BF16
                               : job.precision().params_dtype();
  training.logit_cast = training.logit_bytes > 0 && t.output_logit_dtype() != params;
  training.rope_fused =
      j.model.rope && (t.has_rope_fusion() ? t.rope_fusion() : true) && training.transformer_engine;
  training.defer_embedding_wgrad = t.defer_embedding_wgrad_compute();
  training.wgrad_deferral_limit = t.wgrad_deferral_limit();
  training.dense_mask =
      t.has_create_attention_mask_in_dataloader() ? t.create_attention_mask_in_dataloader() : true;
  if (training.wgrad_deferral_limit > 0 && !training.defer_embedding_wgrad) {
    return Bad("training.wgrad_deferral_limit", training.wgrad_deferral_limit,
               "needs training.defer_embedding_wgrad_compute");
  }
  return absl::OkStatus();
}

absl::Status ResolveRecompute(const v1::RecomputeSpec& r, const ModelShape& model,
                              const MoeSettings& moe, RecomputeSettings& recompute) {
  recompute.granularity = r.granularity() == v1::RECOMPUTE_GRANULARITY_UNSPECIFIED
                              ? v1::RECOMPUTE_GRANULARITY_NONE
                              : r.granularity();
  recompute.method = r.method();
  recompute.num_layers = r.has_num_layers() ? r.num_layers() : 0;
  recompute.modules = 0;
  if (recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL) {
    if (recompute.method == v1::RECOMPUTE_METHOD_UNSPECIFIED) {
      return Bad("recompute.method", "unset", "full recompute needs uniform or block");
    }
    if (!r.has_num_layers()) {
      return Bad("recompute.num_layers", "unset", "full recompute needs --recompute-num-layers");
    }
    if (recompute.method == v1::RECOMPUTE_METHOD_UNIFORM) {
      OOMGUARD_RETURN_IF_ERROR(
          CheckSize("recompute.num_layers", recompute.num_layers, model.num_layers));
    } else if (recompute.num_layers > model.num_layers) {
      return Bad("recompute.num_layers", recompute.num_layers,
                 absl::StrCat("exceeds model.num_layers ", model.num_layers));
    }
  }
  if (r.modules_size() > 0 && recompute.granularity != v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    return Bad("recompute.modules", v1::RecomputeModule_Name(r.modules(0)),
               "needs recompute.granularity = SELECTIVE");
  }
  if (recompute.granularity == v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    const std::vector<v1::RecomputeModule> modules = SelectiveRecomputeModules(r);
    for (size_t i = 0; i < modules.size(); ++i) {
      const v1::RecomputeModule mod = modules[i];
      if (mod == v1::RECOMPUTE_MODULE_UNSPECIFIED || !v1::RecomputeModule_IsValid(mod)) {
        return Bad(absl::StrCat("recompute.modules[", i, "]"), static_cast<int>(mod),
                   "unknown module");
      }
      if (RecomputeNeedsGroupedGemm(mod) && moe.experts > 0 && !moe.grouped_gemm) {
        return Bad(absl::StrCat("recompute.modules[", i, "]"), "moe_act",
                   "Megatron-Core supports moe_act recompute only with model.moe_grouped_gemm");
      }
      recompute.modules |= 1u << mod;
    }
    for (v1::RecomputeModule covered : modules) {
      for (v1::RecomputeModule mod : modules) {
        if (covered != mod && RecomputeModuleCovers(covered, mod)) {
          return Bad("recompute.modules", "moe,moe_act",
                     "moe already recomputes moe_act; pick one");
        }
      }
    }
  }
  // N > 0 turns the offloading on (validate_args in megatron/training/
  // arguments.py); Megatron-Core refuses N >= num_layers
  // (TransformerConfig.__post_init__).
  recompute.cpu_offloading_layers = r.cpu_offloading_num_layers();
  if (recompute.cpu_offloading_layers >= model.num_layers) {
    return Bad("recompute.cpu_offloading_num_layers", recompute.cpu_offloading_layers,
               absl::StrCat("must be below model.num_layers ", model.num_layers,
                            " (--cpu-offloading-num-layers: Megatron-Core keeps the last "
                            "layer's activations on the GPU)"));
  }
  recompute.offload_modules.clear();
  if (r.fine_grained_activation_offloading()) {
    recompute.offload_modules.assign(r.offload_modules().begin(), r.offload_modules().end());
  }
  return absl::OkStatus();
}

absl::Status ResolvePrecision(const v1::PrecisionSpec& p, ValidatedJob& j) {
  const Parallelism& par = j.parallelism;
  PrecisionSettings& precision = j.precision;
  const v1::Dtype params =
      p.params_dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : p.params_dtype();
  if (params == v1::DTYPE_FP8) {
    return Bad("precision.params_dtype", "DTYPE_FP8",
               "use precision.fp8_param_gather for FP8 weights");
  }
  const bool low_precision = params != v1::DTYPE_FP32;
  precision.param_bytes = DtypeBytes(params, 2);
  precision.grad_bytes = DtypeBytes(p.main_grads_dtype(), params == v1::DTYPE_FP16 ? 2 : 4);
  if (!low_precision) precision.grad_bytes = 4;
  precision.optimizer =
      p.optimizer() == v1::OPTIMIZER_UNSPECIFIED ? v1::OPTIMIZER_ADAM : p.optimizer();
  // Megatron-FSDP (version 1) turns the distributed optimizer on
  // (arguments.py validate_args: "Using DistributedOptimizer...").
  precision.distributed_optimizer = p.use_distributed_optimizer() || j.fsdp.megatron();
  const bool aware = p.use_precision_aware_optimizer();
  // optimizer/optimizer_config.py __post_init__: without the precision-aware
  // optimizer the state dtypes can only be their default, fp32.
  const auto non_default = [](v1::Dtype d) {
    return d != v1::DTYPE_UNSPECIFIED && d != v1::DTYPE_FP32;
  };
  if (!aware && (non_default(p.exp_avg_dtype()) || non_default(p.exp_avg_sq_dtype()) ||
                 non_default(p.main_params_dtype()))) {
    return Bad("precision.use_precision_aware_optimizer", "false",
               "optimizer state dtypes other than fp32 need the precision-aware optimizer");
  }
  // megatron/training/arguments.py validate_args: the hybrid-device
  // optimizer runs through the precision-aware optimizer's code path.
  if (p.optimizer_cpu_offload() && !aware) {
    return Bad("precision.optimizer_cpu_offload", "true",
               "needs precision.use_precision_aware_optimizer (Megatron-LM refuses "
               "--optimizer-cpu-offload without --use-precision-aware-optimizer)");
  }
  // ... and, with --fp8-param-gather, the delayed-scaling recipe.
  if (p.optimizer_cpu_offload() && p.fp8_param_gather() &&
      p.fp8_recipe() != v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED &&
      p.fp8_recipe() != v1::PrecisionSpec::FP8_RECIPE_DELAYED) {
    return Bad("precision.fp8_recipe", v1::PrecisionSpec::Fp8Recipe_Name(p.fp8_recipe()),
               "must be FP8_RECIPE_DELAYED (--fp8-recipe delayed) with "
               "precision.optimizer_cpu_offload and precision.fp8_param_gather (Megatron-LM "
               "refuses --optimizer-cpu-offload with --fp8-param-gather and another recipe)");
  }
  if (aware) {
    // optimizer/optimizer_config.py __post_init__ and optimizer/__init__.py
    // get_megatron_optimizer refuse these.
    if (precision.optimizer != v1::OPTIMIZER_ADAM) {
      return Bad("precision.use_precision_aware_optimizer", "true",
                 "Megatron-Core supports the precision-aware optimizer with Adam only");
    }
    if (!precision.distributed_optimizer) {
      return Bad("precision.use_precision_aware_optimizer", "true",
                 "needs precision.use_distributed_optimizer (Megatron-Core supports the "
                 "precision-aware optimizer with the distributed optimizer only)");
    }
    // Transformer Engine's FusedAdam keeps its master weights in fp32 or
    // fp16 only (pytorch/optimizers/fused_adam.py FusedAdam.__init__).
    if (p.main_params_dtype() != v1::DTYPE_UNSPECIFIED && p.main_params_dtype() != v1::DTYPE_FP32 &&
        p.main_params_dtype() != v1::DTYPE_FP16) {
      return Bad("precision.main_params_dtype", v1::Dtype_Name(p.main_params_dtype()),
                 "must be DTYPE_FP32 or DTYPE_FP16 (--main-params-dtype fp32 or fp16)");
    }
  }
  precision.optimizer_instances =
      p.has_num_distributed_optimizer_instances() ? p.num_distributed_optimizer_instances() : 1;
  OOMGUARD_RETURN_IF_ERROR(CheckSize("precision.num_distributed_optimizer_instances",
                                     precision.optimizer_instances, 1 << 20));
  if (precision.optimizer_instances > 1) {
    if (!precision.distributed_optimizer) {
      return Bad("precision.num_distributed_optimizer_instances", precision.optimizer_instances,
                 "needs precision.use_distributed_optimizer");
    }
    if ((par.dp * par.cp) % precision.optimizer_instances != 0 ||
        (j.is_moe_model() && par.edp % precision.optimizer_instances != 0)) {
      return Bad("precision.num_distributed_optimizer_instances", precision.optimizer_instances,
                 absl::StrCat("must divide DP x CP = ", par.dp * par.cp,
                              j.is_moe_model() ? absl::StrCat(" and expert DP = ", par.edp) : ""));
    }
  }
  // Without --optimizer-cpu-offload Megatron-Core reads no offload fraction.
  if (p.optimizer_cpu_offload()) {
    OOMGUARD_RETURN_IF_ERROR(
        CheckFraction("precision.optimizer_offload_fraction", OptimizerOffloadFraction(p), true));
  }
  precision.fp8 = p.fp8() || p.fp8_param_gather();
  // validate_args turns --fp8-param-gather off under Torch FSDP2 (TE 2.0+).
  precision.fp8_param_gather =
      p.fp8_param_gather() && j.fsdp.implementation != v1::FSDP_IMPLEMENTATION_TORCH_FSDP2;
  return absl::OkStatus();
}

// The optimizer's state per element of its shard: which tensors Megatron-Core
// and Transformer Engine (TE) allocate for the master weights and the moments,
// where they live, and the gradient copy the step makes. Needs the resolved
// parameter and gradient bytes, FP8 recipe and TE version.
void ResolveOptimizerState(const v1::JobSpec& job, ValidatedJob& j) {
  const v1::PrecisionSpec& p = job.precision();
  PrecisionSettings& precision = j.precision;
  const bool low_precision = precision.param_bytes < 4;
  const bool grads_16_bit = precision.grad_bytes < 4;
  const auto set_moments = [&precision](double m1, double m2) {
    const v1::Optimizer o = precision.optimizer;
    precision.moment_bytes = o == v1::OPTIMIZER_SGD || o == v1::OPTIMIZER_MUON ? m1 : m1 + m2;
    precision.adam_moment_bytes = o == v1::OPTIMIZER_MUON ? m1 + m2 : precision.moment_bytes;
  };
  precision.offload_fraction = 0;
  precision.offloaded_host_extra_bytes = 0;
  if (p.optimizer_cpu_offload()) {
    // HybridDeviceOptimizer (optimizer/cpu_offloading/hybrid_optimizer.py),
    // built by optimizer/__init__.py _get_megatron_optimizer_based_on_param_groups
    // with param_update_in_fp32=True and no state dtypes. The distributed
    // optimizer hands it the 16-bit shards themselves
    // (distrib_optimizer.py _build_model_and_main_param_groups keeps no main
    // copy under use_precision_aware_optimizer_no_fp8_or_ds_fp8, which
    // optimizer_cpu_offload makes true). _get_sub_optimizer_param_groups
    // moves the first offload_fraction of the elements to the host as a
    // pinned fp32 copy and gives every other 16-bit shard an fp32 copy on the
    // GPU; each sub-optimizer (torch's Adam on the host, FusedAdam on the GPU)
    // keeps fp32 moments beside its fp32 parameter. _set_sub_optimizer_grads
    // copies an offloaded gradient into a pinned host tensor of that fp32
    // dtype, and a GPU one into grad.to(fp32) (a copy of a 16-bit gradient).
    precision.offload_fraction = OptimizerOffloadFraction(p);
    precision.master_bytes = low_precision ? 4 : 0;
    set_moments(4, 4);
    precision.offloaded_host_extra_bytes = 4 + (low_precision ? 0 : 4);
    precision.step_grad_copy_bytes = low_precision && grads_16_bit ? 4 : 0;
    return;
  }
  const bool aware = p.use_precision_aware_optimizer();
  // TE's FusedAdam stores the moments in --exp-avg-dtype and
  // --exp-avg-sq-dtype (optimizer/__init__.py passes them with the
  // precision-aware optimizer).
  set_moments(aware ? DtypeBytes(p.exp_avg_dtype(), 4) : 4,
              aware ? DtypeBytes(p.exp_avg_sq_dtype(), 4) : 4);
  if (j.fsdp.on()) {
    // FSDP keeps its own gradient buffer and main weights (fsdp_memory.h);
    // ResolveFsdp refused the CPU offload above.
    const FsdpStateBytes fsdp = FsdpOptimizerStateBytes(job.parallelism(), precision, aware);
    precision.grad_bytes = fsdp.grad;
    precision.master_bytes = fsdp.master;
    precision.step_grad_copy_bytes = fsdp.step_grad_copy;
    return;
  }
  const v1::Dtype main_params =
      p.main_params_dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_FP32 : p.main_params_dtype();
  // optimizer/optimizer_config.py: use_precision_aware_optimizer_no_fp8_or_ds_fp8,
  // on the --fp8-recipe training.py passes whether FP8 is on or not (default
  // delayed).
  const bool te_master = aware && (main_params != v1::DTYPE_FP32 ||
                                   p.fp8_recipe() == v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED ||
                                   p.fp8_recipe() == v1::PrecisionSpec::FP8_RECIPE_DELAYED);
  if (te_master) {
    // FusedAdam keeps the master copy (fused_adam.py initialize_state: a
    // master_param per parameter in master_weight_dtype); with an fp32 master
    // of a bf16 parameter and store_param_remainders (OptimizerConfig's
    // default, passed from TE 2.1 by optimizer/__init__.py) only the 16 low
    // bits the bf16 weight lacks, as int16. The step reads the gradient buffer
    // directly (distrib_optimizer.py _copy_model_grads_to_main_grads:
    // decoupled_grad = the buffer's shard).
    const bool remainders = main_params == v1::DTYPE_FP32 && precision.param_bytes == 2 &&
                            p.params_dtype() != v1::DTYPE_FP16 &&
                            j.runtime.transformer_engine >= SoftwareVersion{2, 1};
    precision.master_bytes = remainders ? 2 : DtypeBytes(main_params, 4);
    precision.step_grad_copy_bytes = 0;
    return;
  }
  // Megatron-Core's own fp32 main copy of each 16-bit shard
  // (_build_model_and_main_param_groups: shard_model_param.clone().float()),
  // whose gradient is shard_model_grad.float() (_copy_model_grads_to_main_grads),
  // a copy when the buffer holds 16-bit gradients.
  precision.master_bytes = low_precision ? 4 : 0;
  precision.step_grad_copy_bytes = low_precision && grads_16_bit ? 4 : 0;
}

absl::Status ResolveRuntime(const v1::RuntimeSpec& r, RuntimeSettings& runtime,
                            std::vector<std::string>* notes) {
  runtime.expandable_segments = r.expandable_segments();
  runtime.nccl_ub = r.use_nccl_ub();
  runtime.nccl_graph_register_disabled = r.nccl_graph_register_disabled();
  runtime.gpus_per_node = GpusPerNode(r);
  runtime.torch_adam = r.optimizer_implementation() == v1::OPTIMIZER_IMPLEMENTATION_TORCH;
  OOMGUARD_ASSIGN_OR_RETURN(runtime.megatron_core,
                            ParseMegatronCoreVersion(r.megatron_core_version(), notes));
  OOMGUARD_ASSIGN_OR_RETURN(
      runtime.transformer_engine,
      ParseSoftwareVersion("runtime.transformer_engine_version", r.transformer_engine_version(),
                           kOldestTransformerEngine, kNewestTransformerEngine));
  runtime.gradient_accumulation_fusion =
      !r.has_gradient_accumulation_fusion() || r.gradient_accumulation_fusion();
  return absl::OkStatus();
}

// The MoE communication settings: the flex dispatcher's backend and sizes,
// HybridEP's rank budget and NVLink domain, the paged stash, and the EP
// overlap's companions, with what Megatron-LM refuses of them
// (TransformerConfig.__post_init__ in megatron/core/transformer/
// transformer_config.py, validate_args in megatron/training/arguments.py),
// and what the DeepEP and HybridEP buffers assert (deep_ep Buffer,
// HybridEPBuffer).
absl::Status ResolveExpertParallelComm(const v1::JobSpec& job, ValidatedJob& j) {
  const v1::ModelSpec& m = job.model();
  MoeSettings& moe = j.moe;
  Parallelism& par = j.parallelism;
  if (m.moe_enable_deepep()) {
    if (!moe.flex_dispatcher) {
      return Bad("model.moe_enable_deepep", "true",
                 "Megatron-Core runs DeepEP only in the flex token dispatcher "
                 "(model.moe_token_dispatcher = FLEX)");
    }
    if (m.moe_flex_dispatcher_backend() == v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP) {
      return Bad("model.moe_enable_deepep", "true",
                 "Megatron-Core takes one flex dispatcher backend, and "
                 "model.moe_flex_dispatcher_backend is hybridep");
    }
  }
  moe.flex_backend = m.moe_enable_deepep() || m.moe_flex_dispatcher_backend() ==
                                                  v1::FLEX_DISPATCHER_BACKEND_UNSPECIFIED
                         ? v1::FLEX_DISPATCHER_BACKEND_DEEPEP
                         : m.moe_flex_dispatcher_backend();
  const bool deepep = moe.flex_dispatcher && moe.flex_backend == v1::FLEX_DISPATCHER_BACKEND_DEEPEP;
  const bool hybridep =
      moe.flex_dispatcher && moe.flex_backend == v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP;
  if (deepep && moe.pad_to_capacity) {
    return Bad("model.moe_pad_expert_input_to_capacity", "true",
               "Megatron-Core's flex dispatcher with the deepep backend does not support it");
  }
  // The SM count: --moe-flex-dispatcher-num-sms, else the first deprecated
  // spelling set (TransformerConfig.__post_init__ routes it).
  const char* sms_field = nullptr;
  if (m.has_moe_flex_dispatcher_num_sms()) {
    sms_field = "model.moe_flex_dispatcher_num_sms";
    moe.flex_num_sms = m.moe_flex_dispatcher_num_sms();
  } else if (m.has_moe_deepep_num_sms()) {
    sms_field = "model.moe_deepep_num_sms";
    moe.flex_num_sms = m.moe_deepep_num_sms();
  } else if (m.has_moe_hybridep_num_sms()) {
    sms_field = "model.moe_hybridep_num_sms";
    moe.flex_num_sms = m.moe_hybridep_num_sms();
  }
  if (sms_field != nullptr) {
    OOMGUARD_RETURN_IF_ERROR(CheckSize(sms_field, moe.flex_num_sms, 1024));
    if (deepep && moe.flex_num_sms % 2 != 0) {
      return Bad(sms_field, moe.flex_num_sms,
                 "DeepEP needs an even SM count (Buffer.set_num_sms: two SMs a channel)");
    }
  }
  if (m.has_moe_expert_rank_capacity_factor()) {
    const double factor = m.moe_expert_rank_capacity_factor();
    if (!std::isfinite(factor) || factor <= 0) {
      return Bad("model.moe_expert_rank_capacity_factor", factor, "must be > 0");
    }
    if (moe.flex_backend != v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP &&
        moe.flex_backend != v1::FLEX_DISPATCHER_BACKEND_NCCLEP) {
      return Bad("model.moe_expert_rank_capacity_factor", factor,
                 "Megatron-Core needs model.moe_flex_dispatcher_backend hybridep or ncclep "
                 "with it");
    }
    // Read only by _HybridEPManager, and there replaced by the expert
    // capacity in drop-and-pad mode.
    if (hybridep && !moe.pad_to_capacity) moe.rank_capacity_factor = factor;
  }
  if (m.moe_paged_stash()) {
    if (!m.has_moe_expert_rank_capacity_factor()) {
      return Bad("model.moe_paged_stash", "true",
                 "Megatron-Core needs model.moe_expert_rank_capacity_factor with it");
    }
    return absl::UnimplementedError(
        "model.moe_paged_stash (--moe-paged-stash): routed-expert activations in a paged "
        "stash are not modelled by oomguard");
  }
  if (moe.flex_dispatcher && moe.flex_backend == v1::FLEX_DISPATCHER_BACKEND_NCCLEP) {
    return absl::UnimplementedError(
        "model.moe_flex_dispatcher_backend = ncclep (--moe-flex-dispatcher-backend ncclep): "
        "NCCL EP's buffers are not modelled by oomguard");
  }
  const int64_t group = par.ep * par.etp;  // The dispatcher's TP x EP group.
  if (j.is_moe_model() && deepep) {
    // MoEFlexTokenDispatcher asserts TP x EP > 1; DeepEP's Buffer has a
    // configuration for these group sizes only (get_dispatch_config).
    constexpr int64_t kDeepepGroups[] = {2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144, 160};
    if (std::find(std::begin(kDeepepGroups), std::end(kDeepepGroups), group) ==
        std::end(kDeepepGroups)) {
      return Bad("parallelism.expert_model_parallel_size", par.ep,
                 absl::StrCat("DeepEP runs on EP x ETP = 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, "
                              "144 or 160 ranks, not ",
                              group));
    }
  }
  const v1::RuntimeSpec& r = job.runtime();
  if (j.is_moe_model() && hybridep) {
    const bool set = r.has_hybrid_ep_ranks_per_nvlink_domain();
    j.runtime.hybrid_ep_ranks_per_domain =
        set ? r.hybrid_ep_ranks_per_nvlink_domain() : std::min(group, j.runtime.gpus_per_node);
    OOMGUARD_RETURN_IF_ERROR(CheckSize("runtime.hybrid_ep_ranks_per_nvlink_domain",
                                       j.runtime.hybrid_ep_ranks_per_domain, kMaxGpus));
    if (group % j.runtime.hybrid_ep_ranks_per_domain != 0) {
      return Bad(set ? "runtime.hybrid_ep_ranks_per_nvlink_domain" : "runtime.gpus_per_node",
                 set ? j.runtime.hybrid_ep_ranks_per_domain : j.runtime.gpus_per_node,
                 absl::StrCat("HybridEP's group of EP x ETP = ", group,
                              " ranks must be whole NVLink domains of that many ranks"));
    }
  }
  par.delay_wgrad = job.parallelism().delay_wgrad_compute();
  if (par.delay_wgrad) {
    if (!j.training.transformer_engine) {
      return Bad("parallelism.delay_wgrad_compute", "true",
                 "Megatron-LM delays weight gradients only with the transformer_engine "
                 "implementation");
    }
    if (!par.overlap_moe_ep) {
      return Bad("parallelism.delay_wgrad_compute", "true",
                 "Megatron-Core needs parallelism.overlap_moe_expert_parallel_comm with it");
    }
  }
  if (job.parallelism().ep_overlap_early_attn_memory_release() && !par.overlap_moe_ep) {
    return Bad("parallelism.ep_overlap_early_attn_memory_release", "true",
               "Megatron-Core needs parallelism.overlap_moe_expert_parallel_comm with it");
  }
  return absl::OkStatus();
}

// The Mamba mixer's sizes and the rules MambaMixer.__init__ and
// MambaContextParallel.__init__ (megatron/core/ssm/) assert; then what of a
// hybrid model oomguard does not model (Unimplemented, naming it).
absl::Status ResolveHybridMixer(const v1::JobSpec& job, ValidatedJob& j) {
  HybridSettings& hybrid = j.hybrid;
  if (!hybrid.on) return absl::OkStatus();
  const v1::ModelSpec& m = job.model();
  hybrid.state_dim = m.has_mamba_state_dim() ? m.mamba_state_dim() : 128;
  hybrid.head_dim = m.has_mamba_head_dim() ? m.mamba_head_dim() : 64;
  hybrid.groups = m.has_mamba_num_groups() ? m.mamba_num_groups() : 8;
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.mamba_state_dim", hybrid.state_dim, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.mamba_head_dim", hybrid.head_dim, kMaxWidth));
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.mamba_num_groups", hybrid.groups, kMaxWidth));
  if (m.has_mamba_num_heads()) {
    hybrid.heads = m.mamba_num_heads();
    OOMGUARD_RETURN_IF_ERROR(CheckSize("model.mamba_num_heads", hybrid.heads, kMaxWidth));
  } else {
    const int64_t inner = 2 * j.model.hidden;  // expand = 2
    if (inner % hybrid.head_dim != 0) {
      return Bad("model.mamba_head_dim", hybrid.head_dim,
                 absl::StrCat("must divide 2 x model.hidden_size = ", inner,
                              " when model.mamba_num_heads is not set"));
    }
    hybrid.heads = inner / hybrid.head_dim;
  }
  hybrid.inner = hybrid.heads * hybrid.head_dim;
  const v1::Dtype states = m.mamba_training_ssm_states_dtype();
  if (states != v1::DTYPE_UNSPECIFIED && states != v1::DTYPE_FP32 && states != v1::DTYPE_BF16) {
    return Bad("model.mamba_training_ssm_states_dtype", v1::Dtype_Name(states),
               "must be fp32 or bf16 (Megatron-LM's choices)");
  }
  hybrid.ssm_state_bytes = DtypeBytes(states, j.precision.param_bytes >= 4 ? 4 : 2);
  const bool mamba = std::find(hybrid.layers.begin(), hybrid.layers.end(), HybridLayer::kMamba) !=
                     hybrid.layers.end();
  if (mamba) {
    const Parallelism& par = j.parallelism;
    if (hybrid.heads % hybrid.groups != 0) {
      return Bad("model.mamba_num_groups", hybrid.groups,
                 absl::StrCat("must divide model.mamba_num_heads ", hybrid.heads));
    }
    if (hybrid.heads % (par.tp * par.cp) != 0) {
      return Bad("parallelism.tensor_model_parallel_size", par.tp,
                 absl::StrCat("x context_parallel_size ", par.cp, " must divide the ", hybrid.heads,
                              " Mamba heads (model.mamba_num_heads)"));
    }
    if (hybrid.groups % par.tp != 0) {
      return Bad("parallelism.tensor_model_parallel_size", par.tp,
                 absl::StrCat("must divide model.mamba_num_groups ", hybrid.groups));
    }
    const int64_t local_groups = hybrid.groups / par.tp;
    if (local_groups % par.cp != 0 && par.cp % local_groups != 0) {
      return Bad("parallelism.context_parallel_size", par.cp,
                 absl::StrCat("must divide, or be a multiple of, model.mamba_num_groups / TP = ",
                              local_groups, " (MambaContextParallel)"));
    }
    const int64_t in_proj = 2 * hybrid.inner + 2 * hybrid.groups * hybrid.state_dim + hybrid.heads;
    if ((j.precision.fp8 || j.precision.fp4) && in_proj % 16 != 0) {
      return Bad("model.mamba_num_heads", hybrid.heads,
                 absl::StrCat("in FP8 the Mamba in_proj's width 2 x d_inner + 2 x groups x "
                              "state + heads = ",
                              in_proj, " must be a multiple of 16"));
    }
  }
  const auto unimplemented = [](absl::string_view what) {
    return absl::UnimplementedError(absl::StrCat(what, " not modelled by oomguard"));
  };
  for (const HybridLayer layer : hybrid.layers) {
    if (layer == HybridLayer::kGatedDelta) {
      return unimplemented("model.hybrid_layer_pattern: gated delta net layers (G) are");
    }
    if (layer == HybridLayer::kDsAttention) {
      return unimplemented("model.hybrid_layer_pattern: DeepSeek sparse attention layers (D) are");
    }
    if (layer == HybridLayer::kMla) {
      return unimplemented(
          "model.hybrid_layer_pattern: multi-latent attention layers (+) of a hybrid model are");
    }
  }
  if (j.model.mtp_layers > 0) {
    return unimplemented("model.hybrid_layer_pattern: the MTP layers of a hybrid model are");
  }
  if (j.fsdp.on()) return unimplemented("FSDP of a hybrid model (model.hybrid_layer_pattern) is");
  if (j.runtime.cuda_graph_impl != CudaGraphImpl::kNone) {
    return unimplemented("CUDA graphs of a hybrid model (model.hybrid_layer_pattern) are");
  }
  if (j.precision.bf16_layers_at_start + j.precision.bf16_layers_at_end > 0) {
    return unimplemented(
        "precision.first_last_layers_bf16 with a hybrid model (model.hybrid_layer_pattern) is");
  }
  if (j.parallelism.overlap_moe_ep) {
    return unimplemented(
        "parallelism.overlap_moe_expert_parallel_comm with a hybrid model "
        "(model.hybrid_layer_pattern) is");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ValidatedJob> ValidateJob(const v1::JobSpec& job, std::vector<std::string>* notes) {
  OOMGUARD_RETURN_IF_ERROR(CheckEnumsKnown(job));
  ValidatedJob j;
  OOMGUARD_RETURN_IF_ERROR(ResolveModel(job.model(), j));
  OOMGUARD_RETURN_IF_ERROR(ResolveParallelism(job.parallelism(), j, notes));
  OOMGUARD_RETURN_IF_ERROR(ResolveTraining(job, j));
  OOMGUARD_RETURN_IF_ERROR(ResolveRecompute(job.recompute(), j.model, j.moe, j.recompute));
  OOMGUARD_RETURN_IF_ERROR(ResolveFsdp(job, j, notes));
  OOMGUARD_RETURN_IF_ERROR(ResolvePrecision(job.precision(), j));
  OOMGUARD_RETURN_IF_ERROR(ResolveRuntime(job.runtime(), j.runtime, notes));
  OOMGUARD_RETURN_IF_ERROR(ResolveFp8(job.precision(), job.runtime().gpu_architecture(), j, notes));
  OOMGUARD_RETURN_IF_ERROR(ResolveAttentionBackend(job, j));
  OOMGUARD_RETURN_IF_ERROR(ResolveContextParallelComm(job.parallelism(), j));
  OOMGUARD_RETURN_IF_ERROR(ResolveCudaGraphs(job.runtime(), j));
  ResolveOptimizerState(job, j);
  OOMGUARD_RETURN_IF_ERROR(CheckSize("runtime.gpus_per_node", j.runtime.gpus_per_node, 1024));
  OOMGUARD_RETURN_IF_ERROR(ResolveExpertParallelComm(job, j));
  OOMGUARD_RETURN_IF_ERROR(ResolveHybridMixer(job, j));

  const int64_t divisor = job.model().has_make_vocab_size_divisible_by()
                              ? job.model().make_vocab_size_divisible_by()
                              : 128;
  OOMGUARD_RETURN_IF_ERROR(CheckSize("model.make_vocab_size_divisible_by", divisor, kMaxVocab));
  const int64_t multiple = divisor * j.parallelism.tp;
  j.model.padded_vocab = (j.model.vocab + multiple - 1) / multiple * multiple;

  const RecomputeSettings& recompute = j.recompute;
  if (recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL &&
      recompute.method == v1::RECOMPUTE_METHOD_UNIFORM) {
    for (const StageContents& st : j.stages) {
      if (st.num_layers > 0 && recompute.num_layers > st.num_layers) {
        return Bad("recompute.num_layers", recompute.num_layers,
                   absl::StrCat("exceeds the ", st.num_layers, " layers of a pipeline chunk"));
      }
    }
  }
  if (notes) {
    if (std::optional<std::string> why = CpuOffloadingConflict(j)) {
      notes->push_back(absl::StrCat("--cpu-offloading-num-layers: ", *why));
    }
  }
  return j;
}

}  // namespace oomguard
