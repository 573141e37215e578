#include "estimator/validated_job.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/pipeline_layout.h"
#include "estimator/recompute_rules.h"

namespace oomguard {
namespace {

// Upper bounds past which a value is taken as a typo, not a job.
constexpr int64_t kMaxLayers = 100000;
constexpr int64_t kMaxWidth = int64_t{1} << 22;  // hidden / ffn / heads ...
constexpr int64_t kMaxVocab = int64_t{1} << 26;
constexpr int64_t kMaxSeq = int64_t{1} << 24;
constexpr int64_t kMaxGpus = int64_t{1} << 22;
constexpr int64_t kMaxBatch = int64_t{1} << 30;

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

// Checks 1 <= value <= max for a required or defaulted size.
absl::Status CheckSize(absl::string_view field, int64_t value, int64_t max) {
  if (value < 1) return Bad(field, value, "must be at least 1");
  if (value > max) return Bad(field, value, absl::StrCat("is absurdly large (limit ", max, ")"));
  return absl::OkStatus();
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

absl::Status ResolveModel(const v1::ModelSpec& m, ValidatedJob& j,
                          std::vector<std::string>* notes) {
  j.num_layers = m.num_layers();
  j.hidden = m.hidden_size();
  j.heads = m.num_attention_heads();
  j.vocab = m.vocab_size();
  if (auto s = CheckSize("model.num_layers", j.num_layers, kMaxLayers); !s.ok()) return s;
  if (auto s = CheckSize("model.hidden_size", j.hidden, kMaxWidth); !s.ok()) return s;
  if (auto s = CheckSize("model.num_attention_heads", j.heads, kMaxWidth); !s.ok()) return s;
  if (auto s = CheckSize("model.vocab_size", j.vocab, kMaxVocab); !s.ok()) return s;

  const v1::Activation act = m.activation();
  j.gated = act == v1::ACTIVATION_SWIGLU || act == v1::ACTIVATION_GEGLU;
  if (m.has_ffn_hidden_size()) {
    j.ffn = m.ffn_hidden_size();
  } else {
    j.ffn = j.gated ? (4 * j.hidden * 2 / 3) / 64 * 64 : 4 * j.hidden;
  }
  if (auto s = CheckSize("model.ffn_hidden_size", j.ffn, kMaxWidth); !s.ok()) return s;

  j.query_groups = m.has_num_query_groups() ? m.num_query_groups() : j.heads;
  if (auto s = CheckSize("model.num_query_groups", j.query_groups, kMaxWidth); !s.ok()) return s;
  if (j.heads % j.query_groups != 0) {
    return Bad("model.num_query_groups", j.query_groups,
               absl::StrCat("must divide model.num_attention_heads ", j.heads));
  }
  if (m.has_kv_channels()) {
    j.head_dim = m.kv_channels();
  } else {
    if (j.hidden % j.heads != 0) {
      return Bad("model.num_attention_heads", j.heads,
                 absl::StrCat("must divide model.hidden_size ", j.hidden,
                              " when model.kv_channels is not set"));
    }
    j.head_dim = j.hidden / j.heads;
  }
  if (auto s = CheckSize("model.kv_channels", j.head_dim, kMaxWidth); !s.ok()) return s;

  j.layer_norm = m.normalization() != v1::NORMALIZATION_RMS_NORM;
  const v1::PositionEmbedding pe = m.position_embedding();
  j.rope = pe == v1::POSITION_EMBEDDING_ROPE;
  j.learned_positions =
      pe == v1::POSITION_EMBEDDING_UNSPECIFIED || pe == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE;
  j.linear_bias = m.has_add_bias_linear() ? m.add_bias_linear() : true;
  j.qkv_bias = j.linear_bias || m.add_qkv_bias();
  j.qk_layernorm = m.qk_layernorm();
  j.tied_embeddings = !m.untie_embeddings_and_output_weights();
  j.hidden_dropout = m.has_hidden_dropout() ? m.hidden_dropout() : 0.1;
  j.attention_dropout = m.has_attention_dropout() ? m.attention_dropout() : 0.1;
  if (auto s = CheckFraction("model.hidden_dropout", j.hidden_dropout, false); !s.ok()) return s;
  if (auto s = CheckFraction("model.attention_dropout", j.attention_dropout, false); !s.ok()) {
    return s;
  }

  j.mla = m.attention_type() == v1::ATTENTION_TYPE_MLA;
  j.q_lora_rank = m.has_q_lora_rank() ? m.q_lora_rank() : 0;
  j.kv_lora_rank = m.has_kv_lora_rank() ? m.kv_lora_rank() : 32;
  j.qk_head_dim = m.has_qk_head_dim() ? m.qk_head_dim() : 128;
  j.qk_pos_head_dim = m.has_qk_pos_emb_head_dim() ? m.qk_pos_emb_head_dim() : 64;
  j.v_head_dim = m.has_v_head_dim() ? m.v_head_dim() : 128;
  if (j.mla) {
    if (j.q_lora_rank > kMaxWidth)
      return Bad("model.q_lora_rank", j.q_lora_rank, "is absurdly large");
    if (auto s = CheckSize("model.kv_lora_rank", j.kv_lora_rank, kMaxWidth); !s.ok()) return s;
    if (auto s = CheckSize("model.qk_head_dim", j.qk_head_dim, kMaxWidth); !s.ok()) return s;
    if (auto s = CheckSize("model.qk_pos_emb_head_dim", j.qk_pos_head_dim, kMaxWidth); !s.ok()) {
      return s;
    }
    if (auto s = CheckSize("model.v_head_dim", j.v_head_dim, kMaxWidth); !s.ok()) return s;
  }

  j.experts = m.num_experts();
  if (j.experts > kMaxWidth) return Bad("model.num_experts", j.experts, "is absurdly large");
  j.expert_ffn = m.has_moe_ffn_hidden_size() ? m.moe_ffn_hidden_size() : j.ffn;
  j.topk = m.has_moe_router_topk() ? m.moe_router_topk() : 2;
  j.shared_ffn = m.moe_shared_expert_intermediate_size();
  j.grouped_gemm = m.moe_grouped_gemm();
  j.router_fp32 = m.moe_router_dtype_fp32();
  j.allgather_dispatcher = m.moe_token_dispatcher() == v1::TOKEN_DISPATCHER_UNSPECIFIED ||
                           m.moe_token_dispatcher() == v1::TOKEN_DISPATCHER_ALLGATHER;
  j.force_balance = m.moe_router_force_load_balancing();
  j.capacity_factor = m.has_moe_expert_capacity_factor() ? m.moe_expert_capacity_factor() : 0;
  j.pad_to_capacity = m.moe_pad_expert_input_to_capacity();
  j.is_moe_layer.assign(j.num_layers, false);
  if (j.experts > 0) {
    if (auto s = CheckSize("model.moe_ffn_hidden_size", j.expert_ffn, kMaxWidth); !s.ok()) return s;
    if (auto s = CheckSize("model.moe_router_topk", j.topk, j.experts); !s.ok()) {
      return Bad("model.moe_router_topk", j.topk,
                 absl::StrCat("must be in [1, model.num_experts = ", j.experts, "]"));
    }
    if (!std::isfinite(j.capacity_factor) || j.capacity_factor < 0) {
      return Bad("model.moe_expert_capacity_factor", j.capacity_factor, "must be > 0");
    }
    if (m.moe_layer_pattern_size() > 0) {
      if (m.moe_layer_pattern_size() != j.num_layers) {
        return Bad(
            "model.moe_layer_pattern", absl::StrCat(m.moe_layer_pattern_size(), " entries"),
            absl::StrCat("needs one entry per layer (model.num_layers = ", j.num_layers, ")"));
      }
      for (int i = 0; i < m.moe_layer_pattern_size(); ++i) {
        uint32_t v = m.moe_layer_pattern(i);
        if (v > 1) {
          return Bad(absl::StrCat("model.moe_layer_pattern[", i, "]"), v, "must be 0 or 1");
        }
        j.is_moe_layer[i] = v == 1;
      }
    } else {
      const int64_t freq = m.has_moe_layer_freq() ? m.moe_layer_freq() : 1;
      if (auto s = CheckSize("model.moe_layer_freq", freq, j.num_layers); !s.ok()) return s;
      for (int64_t i = 0; i < j.num_layers; ++i) j.is_moe_layer[i] = i % freq == 0;
    }
  } else if (m.moe_layer_pattern_size() > 0 || m.moe_shared_expert_intermediate_size() > 0) {
    return Bad("model.num_experts", 0, "MoE fields are set but the model has no experts");
  }
  j.mtp_layers = m.mtp_num_layers();
  if (j.mtp_layers > 64) return Bad("model.mtp_num_layers", j.mtp_layers, "is absurdly large");
  j.mtp_layer_is_moe = j.experts > 0 && j.is_moe_layer.back();
  (void)notes;
  return absl::OkStatus();
}

absl::Status ResolveParallelism(const v1::JobSpec& job, ValidatedJob& j,
                                std::vector<std::string>* notes) {
  const v1::ParallelismSpec& p = job.parallelism();
  j.world = p.num_gpus();
  if (auto s = CheckSize("parallelism.num_gpus", j.world, kMaxGpus); !s.ok()) return s;
  j.tp = p.has_tensor_model_parallel_size() ? p.tensor_model_parallel_size() : 1;
  j.pp = p.has_pipeline_model_parallel_size() ? p.pipeline_model_parallel_size() : 1;
  j.cp = p.has_context_parallel_size() ? p.context_parallel_size() : 1;
  j.ep = p.has_expert_model_parallel_size() ? p.expert_model_parallel_size() : 1;
  j.etp = p.has_expert_tensor_parallel_size() ? p.expert_tensor_parallel_size() : j.tp;
  if (auto s = CheckSize("parallelism.tensor_model_parallel_size", j.tp, kMaxGpus); !s.ok())
    return s;
  if (auto s = CheckSize("parallelism.pipeline_model_parallel_size", j.pp, kMaxGpus); !s.ok()) {
    return s;
  }
  if (auto s = CheckSize("parallelism.context_parallel_size", j.cp, kMaxGpus); !s.ok()) return s;
  if (auto s = CheckSize("parallelism.expert_model_parallel_size", j.ep, kMaxGpus); !s.ok())
    return s;
  if (auto s = CheckSize("parallelism.expert_tensor_parallel_size", j.etp, kMaxGpus); !s.ok()) {
    return s;
  }
  const int64_t model_parallel = j.tp * j.pp * j.cp;
  if (j.world % model_parallel != 0) {
    return Bad("parallelism.num_gpus", j.world,
               absl::StrCat("not divisible by TP x PP x CP = ", j.tp, " x ", j.pp, " x ", j.cp,
                            " = ", model_parallel, " (W/PP = TP*CP*DP)"));
  }
  j.dp = j.world / model_parallel;
  const int64_t expert_parallel = j.pp * j.ep * j.etp;
  if (j.world % expert_parallel != 0) {
    return Bad("parallelism.num_gpus", j.world,
               absl::StrCat("not divisible by PP x EP x ETP = ", j.pp, " x ", j.ep, " x ", j.etp,
                            " = ", expert_parallel, " (W/PP = EP*ETP*EDP)"));
  }
  j.edp = j.world / expert_parallel;
  if (j.experts == 0 && j.ep > 1) {
    return Bad("parallelism.expert_model_parallel_size", j.ep,
               "needs an MoE model (model.num_experts > 0)");
  }
  if (j.experts > 0 && j.experts % j.ep != 0) {
    return Bad("parallelism.expert_model_parallel_size", j.ep,
               absl::StrCat("must divide model.num_experts ", j.experts));
  }
  const int64_t heads_for_tp = j.heads;
  if (heads_for_tp % j.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", j.tp,
               absl::StrCat("must divide model.num_attention_heads ", j.heads));
  }
  if (!j.mla && j.query_groups % j.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", j.tp,
               absl::StrCat("must divide model.num_query_groups ", j.query_groups));
  }
  if (j.ffn % j.tp != 0) {
    return Bad("parallelism.tensor_model_parallel_size", j.tp,
               absl::StrCat("must divide model.ffn_hidden_size ", j.ffn));
  }
  if (j.experts > 0 && j.expert_ffn % j.etp != 0) {
    return Bad("parallelism.expert_tensor_parallel_size", j.etp,
               absl::StrCat("must divide model.moe_ffn_hidden_size ", j.expert_ffn));
  }
  j.sp = p.sequence_parallel();
  if (j.sp && j.tp == 1) {
    j.sp = false;
    if (notes) notes->push_back("sequence_parallel has no effect at TP=1 (Megatron turns it off)");
  }
  if (j.experts > 0 && j.tp > 1 && !j.sp) {
    return Bad("parallelism.sequence_parallel", "false",
               "Megatron-Core requires sequence parallelism for MoE models with TP > 1");
  }
  j.overlap_moe_ep = p.overlap_moe_expert_parallel_comm();

  // Virtual pipeline.
  j.vpp = 1;
  if (p.has_num_layers_per_virtual_pipeline_stage() &&
      p.has_num_virtual_stages_per_pipeline_rank()) {
    return Bad("parallelism.num_virtual_stages_per_pipeline_rank",
               p.num_virtual_stages_per_pipeline_rank(),
               "set either it or num_layers_per_virtual_pipeline_stage, not both");
  }
  if (p.has_num_layers_per_virtual_pipeline_stage()) {
    const int64_t per = p.num_layers_per_virtual_pipeline_stage();
    if (auto s = CheckSize("parallelism.num_layers_per_virtual_pipeline_stage", per, kMaxLayers);
        !s.ok()) {
      return s;
    }
    if (j.num_layers % (per * j.pp) != 0) {
      return Bad(
          "parallelism.num_layers_per_virtual_pipeline_stage", per,
          absl::StrCat("model.num_layers ", j.num_layers, " is not divisible by it x PP ", j.pp));
    }
    j.vpp = j.num_layers / (per * j.pp);
  } else if (p.has_num_virtual_stages_per_pipeline_rank()) {
    j.vpp = p.num_virtual_stages_per_pipeline_rank();
    if (auto s = CheckSize("parallelism.num_virtual_stages_per_pipeline_rank", j.vpp, kMaxLayers);
        !s.ok()) {
      return s;
    }
  }
  PlacementInput place;
  place.num_layers = j.num_layers;
  place.mtp_layers = j.mtp_layers;
  place.pp = j.pp;
  place.vpp = j.vpp;
  place.first_stage_layers = p.has_decoder_first_pipeline_num_layers()
                                 ? int64_t{p.decoder_first_pipeline_num_layers()}
                                 : -1;
  place.last_stage_layers =
      p.has_decoder_last_pipeline_num_layers() ? int64_t{p.decoder_last_pipeline_num_layers()} : -1;
  place.account_for_embedding = p.account_for_embedding_in_pipeline_split();
  place.account_for_loss = p.account_for_loss_in_pipeline_split();
  place.layout = p.pipeline_model_parallel_layout();
  absl::StatusOr<std::vector<StageContents>> stages = PlaceLayers(place);
  if (!stages.ok()) return stages.status();
  j.stages = *std::move(stages);
  j.vpp = static_cast<int64_t>(j.stages.size()) / j.pp;
  if (j.vpp > 1 && j.pp == 1) {
    return Bad("parallelism.pipeline_model_parallel_size", 1,
               "virtual pipeline stages need pipeline_model_parallel_size > 1");
  }
  for (StageContents& st : j.stages) {
    for (int l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
      if (!j.is_moe_layer[l]) ++st.num_dense_layers;
    }
  }
  j.group_size =
      p.has_microbatch_group_size_per_vp_stage() ? p.microbatch_group_size_per_vp_stage() : j.pp;
  if (auto s = CheckSize("parallelism.microbatch_group_size_per_vp_stage", j.group_size, kMaxBatch);
      !s.ok()) {
    return s;
  }
  return absl::OkStatus();
}

absl::Status ResolveTraining(const v1::JobSpec& job, ValidatedJob& j) {
  const v1::TrainingSpec& t = job.training();
  j.micro_batch = t.micro_batch_size();
  j.seq = t.seq_length();
  if (auto s = CheckSize("training.micro_batch_size", j.micro_batch, kMaxBatch); !s.ok()) return s;
  if (auto s = CheckSize("training.seq_length", j.seq, kMaxSeq); !s.ok()) return s;
  j.global_batch = t.has_global_batch_size() ? t.global_batch_size() : j.micro_batch * j.dp;
  if (auto s = CheckSize("training.global_batch_size", j.global_batch, kMaxBatch); !s.ok())
    return s;
  if (j.global_batch % (j.micro_batch * j.dp) != 0) {
    return Bad(
        "training.global_batch_size", j.global_batch,
        absl::StrCat("not divisible by micro_batch_size x DP = ", j.micro_batch, " x ", j.dp));
  }
  j.num_microbatches = j.global_batch / (j.micro_batch * j.dp);
  if (j.sp && j.seq % j.tp != 0) {
    return Bad("training.seq_length", j.seq,
               absl::StrCat("must be divisible by TP ", j.tp, " with sequence parallelism"));
  }
  if (j.cp > 1 && j.seq % (2 * j.cp) != 0) {
    return Bad("training.seq_length", j.seq,
               absl::StrCat("must be divisible by 2 x CP = ", 2 * j.cp));
  }
  if (j.learned_positions) {
    j.max_positions =
        job.model().has_max_position_embeddings() ? job.model().max_position_embeddings() : j.seq;
    if (j.max_positions < j.seq) {
      return Bad("model.max_position_embeddings", j.max_positions,
                 absl::StrCat("is shorter than training.seq_length ", j.seq));
    }
  } else {
    j.max_positions = 0;
  }
  const v1::AttentionBackend ab = t.attention_backend();
  j.local_attention = ab == v1::ATTENTION_BACKEND_LOCAL;
  j.flash_attention = !(ab == v1::ATTENTION_BACKEND_UNFUSED || j.local_attention);
  j.transformer_engine = t.transformer_impl() != v1::TRANSFORMER_IMPL_LOCAL;
  if (!j.transformer_engine && ab != v1::ATTENTION_BACKEND_FLASH) {
    // The local spec has no fused attention: Megatron's DotProductAttention.
    j.flash_attention = false;
    j.local_attention = true;
  }
  j.ce_fusion = t.cross_entropy_fusion();
  j.rope_fused = j.rope && (t.has_rope_fusion() ? t.rope_fusion() : true) && j.transformer_engine;
  j.fused_softmax = (t.has_masked_softmax_fusion() ? t.masked_softmax_fusion() : true) &&
                    job.precision().params_dtype() != v1::DTYPE_FP32 && j.seq > 16 &&
                    j.seq <= 16384 && j.seq % 4 == 0 && (j.micro_batch * j.heads / j.tp) % 4 == 0;
  j.defer_embedding_wgrad = t.defer_embedding_wgrad_compute();
  j.wgrad_deferral_limit = t.wgrad_deferral_limit();
  if (j.wgrad_deferral_limit > 0 && !j.defer_embedding_wgrad) {
    return Bad("training.wgrad_deferral_limit", j.wgrad_deferral_limit,
               "needs training.defer_embedding_wgrad_compute");
  }
  return absl::OkStatus();
}

absl::Status ResolveRecompute(const v1::RecomputeSpec& r, ValidatedJob& j) {
  j.recompute = r.granularity() == v1::RECOMPUTE_GRANULARITY_UNSPECIFIED
                    ? v1::RECOMPUTE_GRANULARITY_NONE
                    : r.granularity();
  j.recompute_method = r.method();
  j.recompute_num_layers = r.has_num_layers() ? r.num_layers() : 0;
  j.recompute_modules = 0;
  if (j.recompute == v1::RECOMPUTE_GRANULARITY_FULL) {
    if (j.recompute_method == v1::RECOMPUTE_METHOD_UNSPECIFIED) {
      return Bad("recompute.method", "unset", "full recompute needs uniform or block");
    }
    if (!r.has_num_layers()) {
      return Bad("recompute.num_layers", "unset", "full recompute needs --recompute-num-layers");
    }
    if (j.recompute_method == v1::RECOMPUTE_METHOD_UNIFORM) {
      if (auto s = CheckSize("recompute.num_layers", j.recompute_num_layers, j.num_layers);
          !s.ok()) {
        return s;
      }
    } else if (j.recompute_num_layers > j.num_layers) {
      return Bad("recompute.num_layers", j.recompute_num_layers,
                 absl::StrCat("exceeds model.num_layers ", j.num_layers));
    }
  }
  if (r.modules_size() > 0 && j.recompute != v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    return Bad("recompute.modules", v1::RecomputeModule_Name(r.modules(0)),
               "needs recompute.granularity = SELECTIVE");
  }
  if (j.recompute == v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    const std::vector<v1::RecomputeModule> modules = SelectiveRecomputeModules(r);
    for (size_t i = 0; i < modules.size(); ++i) {
      const v1::RecomputeModule mod = modules[i];
      if (mod == v1::RECOMPUTE_MODULE_UNSPECIFIED || !v1::RecomputeModule_IsValid(mod)) {
        return Bad(absl::StrCat("recompute.modules[", i, "]"), static_cast<int>(mod),
                   "unknown module");
      }
      if (RecomputeNeedsGroupedGemm(mod) && j.experts > 0 && !j.grouped_gemm) {
        return Bad(absl::StrCat("recompute.modules[", i, "]"), "moe_act",
                   "Megatron-Core supports moe_act recompute only with model.moe_grouped_gemm");
      }
      j.recompute_modules |= 1u << mod;
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
  j.cpu_offloading = r.cpu_offloading();
  j.cpu_offloading_layers =
      r.has_cpu_offloading_num_layers() ? r.cpu_offloading_num_layers() : j.num_layers - 1;
  if (j.cpu_offloading && j.cpu_offloading_layers >= j.num_layers) {
    return Bad("recompute.cpu_offloading_num_layers", j.cpu_offloading_layers,
               absl::StrCat("must be below model.num_layers ", j.num_layers));
  }
  j.offload_modules.clear();
  if (r.fine_grained_activation_offloading()) {
    j.offload_modules.assign(r.offload_modules().begin(), r.offload_modules().end());
  }
  return absl::OkStatus();
}

absl::Status ResolvePrecision(const v1::PrecisionSpec& p, ValidatedJob& j) {
  const v1::Dtype params =
      p.params_dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : p.params_dtype();
  if (params == v1::DTYPE_FP8) {
    return Bad("precision.params_dtype", "DTYPE_FP8",
               "use precision.fp8_param_gather for FP8 weights");
  }
  const bool low_precision = params != v1::DTYPE_FP32;
  j.param_bytes = DtypeBytes(params, 2);
  j.grad_bytes = DtypeBytes(p.main_grads_dtype(), params == v1::DTYPE_FP16 ? 2 : 4);
  if (!low_precision) j.grad_bytes = 4;
  const bool aware = p.use_precision_aware_optimizer();
  if (!aware && (p.exp_avg_dtype() != v1::DTYPE_UNSPECIFIED ||
                 p.exp_avg_sq_dtype() != v1::DTYPE_UNSPECIFIED ||
                 p.main_params_dtype() != v1::DTYPE_UNSPECIFIED)) {
    return Bad("precision.use_precision_aware_optimizer", "false",
               "optimizer state dtypes need the precision-aware optimizer");
  }
  j.master_bytes = low_precision ? DtypeBytes(p.main_params_dtype(), 4) : 0;
  const double m1 = DtypeBytes(p.exp_avg_dtype(), 4);
  const double m2 = DtypeBytes(p.exp_avg_sq_dtype(), 4);
  j.moment_bytes =
      p.optimizer() == v1::OPTIMIZER_SGD || p.optimizer() == v1::OPTIMIZER_MUON ? m1 : m1 + m2;
  j.adam_moment_bytes = p.optimizer() == v1::OPTIMIZER_MUON ? m1 + m2 : j.moment_bytes;
  j.distributed_optimizer = p.use_distributed_optimizer();
  j.optimizer_instances =
      p.has_num_distributed_optimizer_instances() ? p.num_distributed_optimizer_instances() : 1;
  if (auto s = CheckSize("precision.num_distributed_optimizer_instances", j.optimizer_instances,
                         1 << 20);
      !s.ok()) {
    return s;
  }
  if (j.optimizer_instances > 1) {
    if (!j.distributed_optimizer) {
      return Bad("precision.num_distributed_optimizer_instances", j.optimizer_instances,
                 "needs precision.use_distributed_optimizer");
    }
    if ((j.dp * j.cp) % j.optimizer_instances != 0 ||
        (j.is_moe_model() && j.edp % j.optimizer_instances != 0)) {
      return Bad("precision.num_distributed_optimizer_instances", j.optimizer_instances,
                 absl::StrCat("must divide DP x CP = ", j.dp * j.cp,
                              j.is_moe_model() ? absl::StrCat(" and expert DP = ", j.edp) : ""));
    }
  }
  j.offload_fraction = 0;
  if (p.optimizer_cpu_offload()) {
    j.offload_fraction = p.has_optimizer_offload_fraction() ? p.optimizer_offload_fraction() : 1.0;
    if (auto s = CheckFraction("precision.optimizer_offload_fraction", j.offload_fraction, true);
        !s.ok()) {
      return s;
    }
  } else if (p.has_optimizer_offload_fraction()) {
    return Bad("precision.optimizer_offload_fraction", p.optimizer_offload_fraction(),
               "needs precision.optimizer_cpu_offload");
  }
  j.fp8 = p.fp8() || p.fp8_param_gather();
  j.fp8_param_gather = p.fp8_param_gather();
  return absl::OkStatus();
}

void ResolveRuntime(const v1::RuntimeSpec& r, ValidatedJob& j) {
  j.expandable_segments = r.expandable_segments();
  const v1::CudaGraphImpl impl = r.cuda_graph_impl();
  j.cuda_graphs =
      impl == v1::CUDA_GRAPH_IMPL_LOCAL || impl == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE;
  j.cuda_graph_te_scoped = impl == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE;
  j.cuda_graph_modules.assign(r.cuda_graph_modules().begin(), r.cuda_graph_modules().end());
  j.nccl_ub = r.use_nccl_ub();
  j.nccl_graph_register_disabled = r.nccl_graph_register_disabled();
  j.gpus_per_node = r.has_gpus_per_node() ? r.gpus_per_node() : 8;
}

}  // namespace

absl::StatusOr<ValidatedJob> ValidateJob(const v1::JobSpec& job, std::vector<std::string>* notes) {
  ValidatedJob j;
  if (auto s = ResolveModel(job.model(), j, notes); !s.ok()) return s;
  if (auto s = ResolveParallelism(job, j, notes); !s.ok()) return s;
  if (auto s = ResolveTraining(job, j); !s.ok()) return s;
  if (auto s = ResolveRecompute(job.recompute(), j); !s.ok()) return s;
  if (auto s = ResolvePrecision(job.precision(), j); !s.ok()) return s;
  ResolveRuntime(job.runtime(), j);
  if (auto s = CheckSize("runtime.gpus_per_node", j.gpus_per_node, 1024); !s.ok()) return s;

  const int64_t divisor = job.model().has_make_vocab_size_divisible_by()
                              ? job.model().make_vocab_size_divisible_by()
                              : 128;
  if (auto s = CheckSize("model.make_vocab_size_divisible_by", divisor, kMaxVocab); !s.ok())
    return s;
  const int64_t multiple = divisor * j.tp;
  j.padded_vocab = (j.vocab + multiple - 1) / multiple * multiple;

  if (j.recompute == v1::RECOMPUTE_GRANULARITY_FULL &&
      j.recompute_method == v1::RECOMPUTE_METHOD_UNIFORM) {
    for (const StageContents& st : j.stages) {
      if (st.num_layers > 0 && j.recompute_num_layers > st.num_layers) {
        return Bad("recompute.num_layers", j.recompute_num_layers,
                   absl::StrCat("exceeds the ", st.num_layers, " layers of a pipeline chunk"));
      }
    }
  }
  if (notes && j.cpu_offloading && j.pp > 1) {
    notes->push_back("Megatron-Core refuses --cpu-offloading with pipeline parallelism > 1");
  }
  if (notes && j.cpu_offloading && j.recompute != v1::RECOMPUTE_GRANULARITY_NONE) {
    notes->push_back("Megatron-Core refuses --cpu-offloading together with recompute");
  }
  return j;
}

}  // namespace oomguard
