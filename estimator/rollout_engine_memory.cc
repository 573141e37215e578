#include "estimator/rollout_engine_memory.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"

namespace oomguard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
// A CUDA graph pool in layers' live intermediates at its largest size
// (bench/device/README.md).
constexpr double kGraphPoolLayers = 2;

absl::Status Bad(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

std::string Gib(double bytes) { return absl::StrFormat("%.2f", bytes / kGiB); }

// "MAJOR.MINOR[.PATCH]"; empty = the newest rule (every comparison false).
// Not software_versions.h's ParseSoftwareVersion: vLLM's rules need the
// patch (sleep level 2 from 0.8.5).
struct EngineVersion {
  bool newest = true;
  int64_t parts[3] = {0, 0, 0};
  // Older than a.b.c (the newest is older than nothing).
  bool Before(int64_t a, int64_t b, int64_t c) const {
    if (newest) return false;
    const int64_t want[3] = {a, b, c};
    return std::lexicographical_compare(parts, parts + 3, want, want + 3);
  }
};

absl::StatusOr<EngineVersion> ParseVersion(const std::string& text) {
  EngineVersion v;
  if (text.empty()) return v;
  v.newest = false;
  const std::vector<std::string> pieces = absl::StrSplit(text, '.');
  if (pieces.size() < 2 || pieces.size() > 3) {
    return Bad("rollout.version", absl::StrCat("expected MAJOR.MINOR[.PATCH], got \"", text, "\""));
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!absl::SimpleAtoi(pieces[i], &v.parts[i]) || v.parts[i] < 0 || v.parts[i] > 100000) {
      return Bad("rollout.version",
                 absl::StrCat("expected MAJOR.MINOR[.PATCH], got \"", text, "\""));
    }
  }
  return v;
}

// Bytes per element of the engine's weights or KV cache (`field` names it).
absl::StatusOr<double> DtypeBytes(v1::Dtype dtype, absl::string_view field) {
  switch (dtype) {
    case v1::DTYPE_UNSPECIFIED:
    case v1::DTYPE_BF16:
    case v1::DTYPE_FP16:
      return 2.0;
    case v1::DTYPE_FP8:
      return 1.0;
    default:
      return Bad(field, absl::StrCat("expected DTYPE_BF16, DTYPE_FP16 or DTYPE_FP8, got ",
                                     v1::Dtype_Name(dtype)));
  }
}

// The engine's parallel layout on one GPU.
struct EngineLayout {
  int64_t tp = 1, pp = 1, ep = 1, etp = 1;
};

const char* EngineName(v1::RolloutEngine e) {
  switch (e) {
    case v1::ROLLOUT_ENGINE_VLLM:
      return "vLLM";
    case v1::ROLLOUT_ENGINE_SGLANG:
      return "SGLang";
    default:
      return "Megatron";
  }
}

// The decoder layers of each engine pipeline stage, as vLLM splits them
// (vllm/distributed/utils.py get_pp_indices: L / PP each, the remainder one
// more each on the stages before the last, from the second-to-last back).
// Megatron's even split gives the same where PP divides the layers.
std::vector<int64_t> StageLayerCounts(int64_t layers, int64_t pp) {
  std::vector<int64_t> counts(pp, layers / pp);
  const int64_t rest = layers % pp;
  for (int64_t i = 2; i < rest + 2; ++i) ++counts[pp - i];
  return counts;
}

// The engine's model as a Megatron-Core JobSpec, so the estimator's own
// parameter accounting (layer_memory.h) counts its weights: the actor's
// model at the engine's TP and expert layout, PP 1 (stages are cut below),
// without MTP layers (vLLM loads them only for speculative decoding),
// with one KV head per rank where TP exceeds the KV heads (vLLM's
// QKVParallelLinear replicates them: num_kv_head_replicas = TP / KV heads)
// and the vocabulary padded to `vocab_multiple` in all.
v1::JobSpec EngineJobSpec(const v1::JobSpec& actor, const ValidatedJob& a, const EngineLayout& l,
                          int64_t vocab_multiple) {
  v1::JobSpec e;
  v1::ModelSpec* m = e.mutable_model();
  *m = actor.model();
  m->set_mtp_num_layers(0);
  if (!a.mla.enabled && l.tp > a.model.query_groups) m->set_num_query_groups(l.tp);
  // Megatron pads to make_vocab_size_divisible_by x TP.
  m->set_make_vocab_size_divisible_by(vocab_multiple % l.tp == 0 ? vocab_multiple / l.tp
                                                                 : vocab_multiple);
  m->clear_moe_expert_capacity_factor();
  m->set_moe_pad_expert_input_to_capacity(false);
  m->set_moe_token_dispatcher(v1::TOKEN_DISPATCHER_ALLTOALL);
  m->set_moe_enable_deepep(false);
  m->clear_moe_flex_dispatcher_backend();
  m->set_moe_paged_stash(false);
  m->clear_hidden_dropout();
  m->clear_attention_dropout();
  v1::ParallelismSpec* p = e.mutable_parallelism();
  p->set_num_gpus(static_cast<uint32_t>(std::lcm(l.tp, l.ep * l.etp)));
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(l.tp));
  p->set_pipeline_model_parallel_size(1);
  // Megatron-Core requires it for MoE at TP > 1; it changes no weight.
  p->set_sequence_parallel(l.tp > 1);
  p->set_expert_model_parallel_size(static_cast<uint32_t>(l.ep));
  p->set_expert_tensor_parallel_size(static_cast<uint32_t>(l.etp));
  v1::TrainingSpec* t = e.mutable_training();
  t->set_micro_batch_size(1);
  t->set_seq_length(std::max<uint32_t>(actor.training().seq_length(), 1));
  t->set_transformer_impl(actor.training().transformer_impl());
  e.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  e.mutable_runtime()->set_gpu_architecture(actor.runtime().gpu_architecture());
  return e;
}

// Elements of one engine pipeline stage, and of them those that stay in
// 16 bits under FP8 weights: the embedding, the output layer and the norms
// (BlockCost.adam_params; vLLM's Fp8Config quantizes LinearBase and
// FusedMoE layers only, vllm/model_executor/layers/quantization/fp8.py
// get_quant_method). The router's gate (kept 16-bit by most models) is
// counted with the FP8 linears: hidden x experts per layer, under 0.1 %.
struct StageWeights {
  double params = 0, bf16_params = 0;
};

// The distinct layers' costs: dense and MoE, or a hybrid model's by kind
// (indexed by HybridLayer; ValidateJob refuses the kinds HybridLayerCost
// does not cost).
struct LayerCosts {
  BlockCost dense, moe;
  std::array<BlockCost, static_cast<size_t>(HybridLayer::kMoe) + 1> hybrid;
};

const BlockCost& CostOfLayer(const ValidatedJob& j, const LayerCosts& c, int64_t l) {
  if (j.hybrid.on) return c.hybrid[static_cast<size_t>(j.hybrid.layers[l])];
  return j.moe.is_moe_layer[l] ? c.moe : c.dense;
}

// Whether decoder layer `l` keeps a KV cache (every layer but a hybrid
// model's Mamba and MLP-only layers).
bool HasKvCache(const ValidatedJob& j, int64_t l) {
  if (!j.hybrid.on) return true;
  const HybridLayer k = j.hybrid.layers[l];
  return k == HybridLayer::kAttention || k == HybridLayer::kMla || k == HybridLayer::kDsAttention;
}

// Bytes one GPU holds in flight in one layer's forward over `tokens` tokens
// (what the engine's profile run peaks at): the residual stream, the hidden
// states and the normed input (3 x h), beside the larger of attention (the
// QKV projection's output and the attention output; MLA: the query, the
// latent and its up-projection) and the MLP (gate/up output and the
// activation's: 3 x width per slot; a routed expert's slots are tokens x
// top-k, its output h wide, and the router's fp32 logits), all bf16 but the
// router's logits. vLLM's fused_moe allocates these intermediate caches per
// call (vllm/model_executor/layers/fused_moe/fused_moe.py
// fused_experts_impl: intermediate_cache1..3).
double ForwardBytes(const ValidatedJob& j, const EngineLayout& l, double tokens) {
  const double e = 2;
  const double h = static_cast<double>(j.model.hidden);
  const double heads = static_cast<double>(j.model.heads) / static_cast<double>(l.tp);
  double attention = 0;
  if (j.mla.enabled) {
    const LatentAttentionShape& mla = j.mla;
    attention = tokens * e *
                (heads * static_cast<double>(mla.qk_head_dim + mla.qk_pos_head_dim) +
                 static_cast<double>(mla.kv_lora_rank + mla.qk_pos_head_dim) +
                 heads * static_cast<double>(mla.qk_head_dim + mla.v_head_dim) +
                 heads * static_cast<double>(mla.v_head_dim));
  } else {
    const double kv =
        std::max(1.0, static_cast<double>(j.model.query_groups) / static_cast<double>(l.tp));
    attention = tokens * e * (2 * heads + 2 * kv) * static_cast<double>(j.model.head_dim);
  }
  const double tp = static_cast<double>(l.tp);
  const bool dense_layers = std::find(j.moe.is_moe_layer.begin(), j.moe.is_moe_layer.end(),
                                      false) != j.moe.is_moe_layer.end();
  double mlp = dense_layers ? tokens * e * 3 * static_cast<double>(j.model.ffn) / tp : 0;
  if (j.is_moe_model()) {
    // fused_experts_impl sizes its caches for every token's top-k slots
    // (M x top-k), at the expert width this GPU holds (/ ETP), the output
    // h wide; under EP the slots of other ranks' experts are masked, not
    // dropped.
    const double routed =
        tokens * static_cast<double>(j.moe.topk) * e *
        (3 * static_cast<double>(j.moe.expert_ffn) / static_cast<double>(l.etp) + h);
    const double router = tokens * static_cast<double>(j.moe.experts) * 4;
    const double shared = tokens * e * 3 * static_cast<double>(j.moe.shared_ffn) / tp;
    mlp = std::max(mlp, routed + router + shared);
  }
  return tokens * h * e * 3 + std::max(attention, mlp);
}

// The sampler's working set at `seqs` sequences (the engine warms it up at
// max_num_seqs: vllm/v1/worker/gpu_worker.py compile_or_warm_up_model,
// gpu_model_runner.py _dummy_sampler_run): the gathered bf16 logits over
// the whole vocabulary, their fp32 copy, the probabilities and the
// log-probabilities RL asks for: 2 + 4 + 4 + 4 bytes per sequence and
// vocabulary entry. No top-k/top-p sort (RL samples at top_p 1, top_k -1).
// vLLM's own profile may skip the log-probabilities ("the sampler may skip
// top_k, top_p, and logprobs", _dummy_sampler_run): what it then leaves out
// of its budget is taken from the KV pool here.
double SamplerBytes(const ValidatedJob& j, double seqs) {
  return seqs * static_cast<double>(j.model.vocab) * 14;
}

}  // namespace

absl::StatusOr<EngineMemory> EstimateEngineMemory(const v1::RlJobSpec& job,
                                                  uint64_t gpu_memory_bytes,
                                                  uint64_t others_resident_bytes) {
  const v1::RolloutEngineSpec& r = job.rollout();
  const v1::RolloutEngine engine = r.engine();
  if (engine != v1::ROLLOUT_ENGINE_VLLM && engine != v1::ROLLOUT_ENGINE_SGLANG &&
      engine != v1::ROLLOUT_ENGINE_MEGATRON) {
    return Bad("rollout.engine",
               absl::StrCat("expected ROLLOUT_ENGINE_VLLM, ROLLOUT_ENGINE_SGLANG or "
                            "ROLLOUT_ENGINE_MEGATRON, got ",
                            v1::RolloutEngine_Name(engine)));
  }
  if (gpu_memory_bytes == 0) return Bad("gpu_memory_bytes", "must be more than 0");
  const bool vllm = engine == v1::ROLLOUT_ENGINE_VLLM;
  const bool sglang = engine == v1::ROLLOUT_ENGINE_SGLANG;
  const bool megatron = engine == v1::ROLLOUT_ENGINE_MEGATRON;
  if (job.max_prompt_length() == 0) return Bad("max_prompt_length", "must be more than 0");
  if (job.max_response_length() == 0) return Bad("max_response_length", "must be more than 0");
  const uint64_t max_model_len =
      uint64_t{job.max_prompt_length()} + uint64_t{job.max_response_length()};
  OOMGUARD_ASSIGN_OR_RETURN(const EngineVersion version, ParseVersion(r.version()));
  OOMGUARD_ASSIGN_OR_RETURN(const double weight_elt,
                            DtypeBytes(r.weight_dtype(), "rollout.weight_dtype"));
  OOMGUARD_ASSIGN_OR_RETURN(const double kv_elt,
                            DtypeBytes(r.kv_cache_dtype(), "rollout.kv_cache_dtype"));
  // vLLM's EngineArgs default gpu_memory_utilization 0.9; SGLang's default
  // mem_fraction_static depends on the GPU and TP (server_args.py
  // _handle_gpu_memory_settings): 0.88 taken for an 80 GB GPU.
  double fraction = vllm ? 0.9 : 0.88;
  if (r.has_memory_fraction()) {
    fraction = r.memory_fraction();
    if (!(fraction > 0 && fraction <= 1)) {
      return Bad("rollout.memory_fraction",
                 absl::StrCat("expected a number in (0, 1], got ", fraction));
    }
  }
  if (r.has_kv_buffer_bytes() && r.kv_buffer_bytes() == 0) {
    return Bad("rollout.kv_buffer_bytes", "must be more than 0");
  }

  // The actor's model, resolved (its own errors name "actor.").
  absl::StatusOr<ValidatedJob> actor_or = ValidateJob(job.actor(), nullptr);
  if (!actor_or.ok()) {
    return absl::Status(actor_or.status().code(),
                        absl::StrCat("actor.", actor_or.status().message()));
  }
  const ValidatedJob& a = *actor_or;

  // The engine's layout. Megatron's unset sizes are the trainer's
  // (megatron/training/training.py setup_model_and_optimizer: a separate
  // inference model only where a --rl-inference-*-model-parallel-size is
  // given or the trainer runs CP > 1).
  EngineLayout l;
  const bool shares_weights = megatron && r.tensor_parallel() == 0 && r.pipeline_parallel() == 0 &&
                              r.expert_parallel() == 0 && a.parallelism.cp == 1;
  if (megatron) {
    l.tp = r.tensor_parallel() > 0 ? r.tensor_parallel() : a.parallelism.tp;
    l.pp = r.pipeline_parallel() > 0 ? r.pipeline_parallel() : a.parallelism.pp;
    l.ep = r.expert_parallel() > 0 ? r.expert_parallel() : a.parallelism.ep;
    // The inference config is a copy of the trainer's: its expert TP stays
    // unless --rl-inference-expert-tensor-model-parallel-size, which the
    // spec does not carry.
    l.etp = a.parallelism.etp;
  } else {
    l.tp = std::max<int64_t>(r.tensor_parallel(), 1);
    l.pp = std::max<int64_t>(r.pipeline_parallel(), 1);
    // vLLM without enable_expert_parallel splits experts like dense
    // weights (FusedMoE: tp_size = TP, ep_size 1); with it, EP = TP x DP
    // and each expert whole (vllm/model_executor/layers/fused_moe/layer.py
    // FusedMoEParallelConfig.make).
    l.ep = r.expert_parallel() > 0 ? r.expert_parallel() : 1;
    l.etp = r.expert_parallel() > 0 ? 1 : l.tp;
  }
  if (!a.is_moe_model()) l.ep = 1, l.etp = 1;
  for (const auto& [field, size] :
       {std::pair{"rollout.tensor_parallel", l.tp}, std::pair{"rollout.pipeline_parallel", l.pp},
        std::pair{"rollout.expert_parallel", l.ep}}) {
    if (size > kMaxGpus) {
      return Bad(field, absl::StrCat(size, " is absurdly large (limit ", kMaxGpus, ")"));
    }
  }
  if (a.model.heads % l.tp != 0) {
    return Bad("rollout.tensor_parallel",
               absl::StrCat(l.tp, " does not divide the ", a.model.heads, " attention heads"));
  }
  if (!a.mla.enabled) {
    const int64_t g = a.model.query_groups;
    // vLLM's QKVParallelLinear: KV heads split by TP, or replicated when TP
    // is a multiple of them.
    if ((l.tp <= g && g % l.tp != 0) || (l.tp > g && l.tp % g != 0)) {
      return Bad("rollout.tensor_parallel",
                 absl::StrCat(l.tp, " neither divides nor is a multiple of the ", g,
                              " KV heads (num_query_groups)"));
    }
  }
  if (a.is_moe_model() && a.moe.experts % l.ep != 0) {
    return Bad("rollout.expert_parallel",
               absl::StrCat(l.ep, " does not divide the ", a.moe.experts, " experts"));
  }
  if (l.pp > a.model.num_layers) {
    return Bad("rollout.pipeline_parallel",
               absl::StrCat(l.pp, " exceeds the ", a.model.num_layers, " decoder layers"));
  }
  if (a.parallelism.world % (l.tp * l.pp) != 0) {
    return Bad("rollout.tensor_parallel",
               absl::StrCat("TP ", l.tp, " x PP ", l.pp, " does not divide the ",
                            a.parallelism.world, " GPUs"));
  }

  // Weights at the engine's layout: vLLM and SGLang pad the vocabulary to
  // 64 (vllm/model_executor/layers/vocab_parallel_embedding.py
  // DEFAULT_VOCAB_PADDING_SIZE, pad_vocab_size; SGLang reuses it), Megatron
  // to make_vocab_size_divisible_by x TP.
  const int64_t actor_divisor = job.actor().model().has_make_vocab_size_divisible_by()
                                    ? job.actor().model().make_vocab_size_divisible_by()
                                    : 128;
  const int64_t vocab_multiple = megatron ? actor_divisor * l.tp : 64;
  std::vector<std::string> engine_notes;
  absl::StatusOr<ValidatedJob> engine_or =
      ValidateJob(EngineJobSpec(job.actor(), a, l, vocab_multiple), &engine_notes);
  if (!engine_or.ok()) {
    return Bad("rollout",
               absl::StrCat("the model at the engine's layout: ", engine_or.status().message()));
  }
  const ValidatedJob& j = *engine_or;
  LayerCosts costs;
  if (j.hybrid.on) {
    for (const HybridLayer kind :
         {HybridLayer::kMamba, HybridLayer::kAttention, HybridLayer::kMlp, HybridLayer::kMoe}) {
      if (kind != HybridLayer::kMoe || j.is_moe_model()) {
        costs.hybrid[static_cast<size_t>(kind)] = HybridLayerCost(j, kind, nullptr);
      }
    }
  } else {
    costs.dense = DecoderLayerCost(j, false, nullptr);
    if (j.is_moe_model()) costs.moe = DecoderLayerCost(j, true, nullptr);
  }
  const BlockCost embedding = EmbeddingCost(j, nullptr);
  // The last stage's final norm and output layer; with tied embeddings on
  // one stage the output shares the embedding, on PP > 1 the last stage
  // builds its own copy (vLLM's models build embed_tokens on the last rank
  // too when tie_word_embeddings).
  const BlockCost output = LossCost(j, !j.model.tied_embeddings || l.pp > 1, nullptr);

  const std::vector<int64_t> stage_layers = StageLayerCounts(j.model.num_layers, l.pp);
  const double kv_heads =
      std::max(1.0, static_cast<double>(j.model.query_groups) / static_cast<double>(l.tp));
  // Per token and KV layer: K and V of the rank's KV heads; MLA's latent and
  // RoPE key, whole on every rank (vllm/v1/kv_cache_interface.py
  // FullAttentionSpec / MLAAttentionSpec page sizes; SGLang
  // model_runner.py profile_max_num_token cell_size).
  const double kv_per_layer =
      j.mla.enabled ? static_cast<double>(j.mla.kv_lora_rank + j.mla.qk_pos_head_dim) * kv_elt
                    : 2 * kv_heads * static_cast<double>(j.model.head_dim) * kv_elt;

  // vLLM and SGLang keep a 16-bit copy of each MLA layer's kv_b_proj split
  // for the absorbed decode (vLLM mla_attention.py
  // process_weights_after_loading: W_UK_T and W_UV, preallocated copies,
  // dequantized under FP8; SGLang deepseek_v2.py post_load_weights: w_kc,
  // w_vc): kv_lora_rank x heads / TP x (qk_head_dim + v_head_dim) x 2 B.
  const double absorbed_mla_bytes =
      j.mla.enabled && !megatron
          ? static_cast<double>(j.mla.kv_lora_rank) * static_cast<double>(j.model.heads) /
                static_cast<double>(l.tp) *
                static_cast<double>(j.mla.qk_head_dim + j.mla.v_head_dim) * 2
          : 0;
  const uint32_t max_num_seqs = r.max_num_seqs() > 0 ? r.max_num_seqs() : 256;
  const uint32_t batched_tokens =
      r.max_num_batched_tokens() > 0 ? r.max_num_batched_tokens() : 8192;
  const bool graphs = !r.has_cuda_graphs() || r.cuda_graphs();
  // The largest captured batch: vLLM's max_cudagraph_capture_size,
  // min(2 x max_num_seqs, 512, max_num_batched_tokens) (vllm/config/vllm.py
  // VllmConfig._set_cudagraph_sizes); SGLang --cuda-graph-max-bs; Megatron's largest
  // graphed request count. All sizes share one pool, captured largest
  // first, so the pool is the largest graph's.
  const double graph_batch =
      vllm ? std::min({2.0 * max_num_seqs, 512.0, static_cast<double>(batched_tokens)})
           : max_num_seqs;

  // Runtime outside PyTorch. At TP > 1, NCCL of the TP group and the custom
  // all-reduce buffers: NeMo-RL #223 (Llama-3.2-1B, vLLM asleep) 774 MiB at
  // TP 1, 2440 MiB at TP 2, 7392 MiB at TP 2 after one change; vLLM PR
  // #10511 (Llama-3-8B) non-torch 1.79 GiB at TP 1, 3.58 GiB at TP 2: 1666
  // MiB taken, its spread up to the 6618 MiB of the worst report. An engine
  // in its own process (NeMo-RL's vLLM Ray actors, slime's SGLang servers;
  // veRL's and Megatron's run in the trainer's) adds its CUDA context and
  // libraries: the 774 MiB NeMo-RL #223 saw asleep at TP 1.
  const bool comms = !(megatron && shares_weights) && l.tp > 1;
  const bool own_process =
      job.framework() == v1::RL_FRAMEWORK_NEMO_RL || job.framework() == v1::RL_FRAMEWORK_SLIME;
  const double comms_bytes = comms ? 1666 * kMiB : 0;
  const double comms_sd = comms ? (7392.0 - 2440.0) / 2 * kMiB : 0;
  const double context_bytes = own_process ? 774 * kMiB : 0;
  const double context_sd = own_process ? 256 * kMiB : 0;
  const double runtime = comms_bytes + context_bytes;
  const double runtime_sd = std::hypot(comms_sd, context_sd);

  struct Stage {
    double weights = 0, kv_per_token = 0, activation = 0, graph = 0;
    double pool = 0;
    uint64_t tokens = 0;
  };
  std::vector<Stage> stages(l.pp);
  int64_t first = 0;
  for (int64_t s = 0; s < l.pp; ++s) {
    Stage& st = stages[s];
    StageWeights w;
    int64_t kv_layers = 0, mla_layers = 0;
    for (int64_t i = first; i < first + stage_layers[s]; ++i) {
      const BlockCost& c = CostOfLayer(j, costs, i);
      w.params += c.params();
      w.bf16_params += c.adam_params;
      kv_layers += HasKvCache(j, i) ? 1 : 0;
      mla_layers += j.mla.enabled && HasKvCache(j, i) ? 1 : 0;
    }
    if (s == 0) w.params += embedding.params(), w.bf16_params += embedding.params();
    if (s == l.pp - 1) w.params += output.params(), w.bf16_params += output.params();
    first += stage_layers[s];
    st.weights = shares_weights ? 0 : (w.params - w.bf16_params) * weight_elt + w.bf16_params * 2;
    st.weights += static_cast<double>(mla_layers) * absorbed_mla_bytes;
    st.kv_per_token = static_cast<double>(kv_layers) * kv_per_layer;
    st.activation = ForwardBytes(j, l, batched_tokens);
    if (s == l.pp - 1) st.activation = std::max(st.activation, SamplerBytes(j, max_num_seqs));
    // A graph pool holds about twice one layer's live intermediates at the
    // largest captured size, whatever the layers and the sizes sharing it
    // (bench/device/README.md: 1.3 to 2.4 times, measured on an H200; freed
    // intermediates are reused inside the pool).
    if (graphs) st.graph = kGraphPoolLayers * ForwardBytes(j, l, graph_batch);
  }

  EngineMemory out;
  out.shares_trainer_weights = shares_weights;
  const double total = static_cast<double>(gpu_memory_bytes);
  const double others = static_cast<double>(others_resident_bytes);
  // vLLM >= 0.21 counts its CUDA-graph estimate inside the budget
  // (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, default on since 0.21.0:
  // gpu_worker.py determine_available_memory,
  // cudagraph_memory_estimate_applied); before, graphs were captured after
  // the KV pool, beyond the budget.
  const bool graphs_in_budget = vllm && !version.Before(0, 21, 0);
  std::string budget_basis;
  if (vllm) {
    // Worker.init_device: requested = total x gpu_memory_utilization,
    // checked against the free memory after NCCL's initialisation;
    // determine_available_memory: KV = requested - (weights + activation
    // peak + non-torch increase [+ graphs]).
    const double requested = total * fraction;
    const double free = std::max(0.0, total - others - runtime);
    if (free < requested) {
      out.failure = absl::StrCat("Free memory on device (", Gib(free), "/", Gib(total),
                                 " GiB) on startup is less than desired GPU memory utilization (",
                                 fraction, ", ", Gib(requested),
                                 " GiB). Decrease GPU memory utilization or reduce GPU memory "
                                 "used by other processes.");
    }
    uint64_t tokens = UINT64_MAX;
    bool none = false;
    for (Stage& st : stages) {
      const double available =
          requested - st.weights - st.activation - (graphs_in_budget ? st.graph : 0);
      if (available <= 0 || st.kv_per_token <= 0) {
        none = none || available <= 0;
        tokens = available <= 0 ? 0 : tokens;
        continue;
      }
      // Blocks of 16 tokens (CacheConfig.block_size), as many as fit.
      const uint64_t t = static_cast<uint64_t>(std::floor(available / st.kv_per_token / 16)) * 16;
      tokens = std::min(tokens, t);
    }
    if (tokens == UINT64_MAX) tokens = 0;
    for (Stage& st : stages) {
      st.tokens = tokens;
      st.pool = static_cast<double>(tokens) * st.kv_per_token;
    }
    if (out.failure.empty() && (none || tokens == 0)) {
      // vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory.
      out.failure =
          "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
          "when initializing the engine.";
    } else if (out.failure.empty() && tokens < max_model_len) {
      const double per_token = stages.back().kv_per_token;
      const double needed = std::ceil(static_cast<double>(max_model_len) / 16) * 16 * per_token;
      out.failure = absl::StrCat(
          "To serve at least one request with the model's max seq len (", max_model_len, "), (",
          Gib(needed),
          " GiB KV cache is needed, which is larger than the available KV cache "
          "memory (",
          Gib(static_cast<double>(tokens) * per_token), " GiB). ",
          tokens > 0 ? absl::StrCat("Based on the available memory, the estimated maximum model "
                                    "length is ",
                                    tokens, ". ")
                     : "",
          "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
          "initializing the engine.");
    }
    budget_basis = absl::StrCat(
        "vLLM ", r.version().empty() ? "newest" : r.version(), ": KV = gpu_memory_utilization ",
        fraction, " x ", Gib(total), " GiB - weights - activation peak",
        graphs_in_budget ? " - CUDA-graph estimate" : "",
        " (vllm/v1/worker/gpu_worker.py determine_available_memory), in blocks of 16 tokens, the "
        "fewest of the pipeline stages (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs)");
  } else if (sglang) {
    // model_runner.py profile_max_num_token: rest = available after the
    // weights - free before loading x (1 - mem_fraction_static), the free
    // memory measured after the distributed init: KV = f x free - weights.
    const double free = std::max(0.0, total - others - runtime);
    uint64_t tokens = UINT64_MAX;
    for (Stage& st : stages) {
      const double rest = fraction * free - st.weights;
      const uint64_t t = rest <= 0 || st.kv_per_token <= 0
                             ? 0
                             : static_cast<uint64_t>(std::floor(rest / st.kv_per_token));
      tokens = std::min(tokens, t);
    }
    for (Stage& st : stages) {
      st.tokens = tokens;
      st.pool = static_cast<double>(tokens) * st.kv_per_token;
    }
    if (tokens == 0) {
      // mem_cache/pool_configurator.py MemoryPoolConfig.__post_init__.
      out.failure = absl::StrCat(
          "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
          "mem_fraction_static=",
          fraction);
    }
    budget_basis =
        absl::StrCat("SGLang: weights + KV = mem_fraction_static ", fraction, " x the free ",
                     Gib(free), " GiB (", Gib(total), " GiB less ", Gib(others), " GiB others hold",
                     runtime > 0 ? " and its runtime" : "",
                     ") (python/sglang/srt/model_executor/model_runner.py profile_max_num_token)");
  } else {
    // megatron/core/inference/contexts/dynamic_context.py DynamicInferenceContext:
    // buffer_size_gb x 1024^3 of KV blocks, default 40
    // (--inference-dynamic-batching-buffer-size-gb, arguments.py).
    const double buffer =
        r.has_kv_buffer_bytes() ? static_cast<double>(r.kv_buffer_bytes()) : 40 * kGiB;
    for (Stage& st : stages) {
      st.tokens = st.kv_per_token > 0 ? static_cast<uint64_t>(buffer / st.kv_per_token) : 0;
      st.pool = buffer;
    }
    budget_basis = absl::StrCat(
        "Megatron dynamic engine: a KV buffer of ", Gib(buffer),
        " GiB (--inference-dynamic-batching-buffer-size-gb; megatron/core/inference/contexts/"
        "dynamic_context.py DynamicInferenceContext)");
  }

  // The busiest stage.
  size_t busiest = 0;
  double busiest_bytes = -1;
  for (size_t s = 0; s < stages.size(); ++s) {
    const Stage& st = stages[s];
    const double bytes = st.weights + st.pool + st.activation + st.graph + runtime;
    if (bytes > busiest_bytes) busiest = s, busiest_bytes = bytes;
  }
  const Stage& st = stages[busiest];
  const std::string stage_note =
      l.pp > 1 ? absl::StrCat(" on engine pipeline stage ", busiest, " of ", l.pp) : "";
  out.weight_bytes = static_cast<uint64_t>(std::llround(st.weights));
  if (shares_weights) {
    out.weight_basis =
        "the trainer's own weights (no --rl-inference-*-model-parallel-size, CP 1: "
        "megatron/training/training.py setup_model_and_optimizer builds no separate inference "
        "model)";
  } else {
    out.weight_basis = absl::StrCat(
        EngineName(engine), " weights at TP ", l.tp, ", PP ", l.pp,
        j.is_moe_model() ? absl::StrCat(", EP ", l.ep, ", expert TP ", l.etp) : "", stage_note,
        ", ",
        weight_elt == 1 ? "FP8 linears (per-tensor scales, not counted), "
                          "16-bit embedding, output layer and norms"
                        : "16-bit",
        ", vocabulary padded to ", j.model.padded_vocab,
        absorbed_mla_bytes > 0 ? ", MLA's absorbed 16-bit kv_b_proj copies (W_UK_T, W_UV)" : "",
        !j.mla.enabled && l.tp > a.model.query_groups
            ? absl::StrCat(", the ", a.model.query_groups, " KV heads replicated to one per rank")
            : "",
        " (the estimator's parameter count of the actor's model at that layout)");
  }
  out.kv_bytes_per_token = static_cast<uint64_t>(std::llround(st.kv_per_token));
  out.kv_tokens = st.tokens;
  out.kv_pool_bytes = static_cast<uint64_t>(std::llround(st.pool));
  out.kv_basis = absl::StrCat(
      budget_basis, "; ", out.kv_bytes_per_token, " bytes per token",
      j.mla.enabled
          ? absl::StrCat(" (MLA: (kv_lora_rank ", j.mla.kv_lora_rank, " + qk_pos_emb_head_dim ",
                         j.mla.qk_pos_head_dim, ") x layers x ", kv_elt, " B)")
          : absl::StrCat(" (2 x layers x ", kv_heads, " KV heads per rank x head dim ",
                         j.model.head_dim, " x ", kv_elt, " B)"),
      ", ", out.kv_tokens, " tokens",
      j.hybrid.on ? "; attention layers only (the Mamba layers' states not counted)" : "");
  out.activation_bytes = static_cast<uint64_t>(std::llround(st.activation));
  out.activation_sd_bytes = out.activation_bytes / 2;
  out.activation_basis = absl::StrCat(
      "one layer's forward at max_num_batched_tokens ", batched_tokens,
      busiest + 1 == stages.size() ? absl::StrCat(", or the sampler's logits at max_num_seqs ",
                                                  max_num_seqs, " x vocabulary x 14 B")
                                   : "",
      " (the engine's profile run: gpu_model_runner.py profile_run); uncertain (+-50 %): the "
      "kernels' workspaces are not itemised");
  out.cuda_graph_bytes = static_cast<uint64_t>(std::llround(st.graph));
  out.cuda_graph_sd_bytes = out.cuda_graph_bytes / 2;
  out.cuda_graph_basis =
      graphs ? absl::StrCat(
                   "one pool for all captured sizes: twice one layer's forward "
                   "workspace at the largest, ",
                   graph_batch, " sequences (bench/device/README.md)",
                   vllm ? (graphs_in_budget ? " (inside the budget from vLLM 0.21)"
                                            : " (outside the budget before vLLM 0.21)")
                        : "",
                   "; uncertain (+-50 %): the measured pools ranged 1.3 to 2.4 layers")
             : "no CUDA graphs (eager)";
  out.runtime_bytes = static_cast<uint64_t>(std::llround(runtime));
  out.runtime_sd_bytes = static_cast<uint64_t>(std::llround(runtime_sd));
  out.runtime_basis = absl::StrCat(
      comms
          ? absl::StrCat("NCCL communicators of the engine's TP group (", l.tp,
                         ") and custom all-reduce buffers: 1666 MiB, the TP 2 less TP 1 "
                         "residual of NeMo-RL #223 (vLLM PR #10511: 1.79 GiB); uncertain (up "
                         "to 6.5 GiB more reported)")
          : (l.tp > 1 ? "the trainer's communicators (shared model)" : "no communicators at TP 1"),
      own_process ? "; its own process's CUDA context: 774 MiB (NeMo-RL #223 at TP 1, asleep)"
                  : "; the trainer's process (its CUDA context counted there)");

  // Sleep. vLLM: level 2 from 0.8.5, level 1 before and for EP > 1 before
  // 0.11 (verl/third_party/vllm/__init__.py, vllm_rollout.py; RL_MEMORY.md);
  // SGLang releases both (release_memory_occupation); Megatron keeps its
  // KV buffer (--rl-kv-cache-management-mode persist, the default).
  v1::RolloutSleep sleep = r.sleep();
  if (sleep == v1::ROLLOUT_SLEEP_UNSPECIFIED) {
    if (vllm) {
      sleep = version.Before(0, 8, 5) || (l.ep > 1 && version.Before(0, 11, 0))
                  ? v1::ROLLOUT_SLEEP_LEVEL_1
                  : v1::ROLLOUT_SLEEP_LEVEL_2;
    } else {
      sleep = sglang ? v1::ROLLOUT_SLEEP_LEVEL_2 : v1::ROLLOUT_SLEEP_NONE;
    }
  }
  out.sleep = sleep;
  // vLLM's and SGLang's graphs stay (verl docs/perf/perf_tuning.rst);
  // Megatron deletes and recaptures them unless --rl-persist-cuda-graphs.
  const bool graphs_stay = r.has_persist_cuda_graphs() ? r.persist_cuda_graphs() : !megatron;
  const double kept_graphs = graphs_stay ? st.graph : 0;
  double asleep = kept_graphs + runtime;
  std::string kept;
  if (megatron) {
    // Megatron-LM's RL loop (arguments.py --rl-kv-cache-management-mode):
    // persist keeps the KV buffer (NONE), offload moves it to the host
    // (LEVEL_1), recompute deletes it (LEVEL_2). A separate inference
    // model's weights stay (--rl-offload-inference-model-weights-when-idle
    // is not read); the trainer's own are the trainer's.
    asleep += st.weights;
    switch (sleep) {
      case v1::ROLLOUT_SLEEP_NONE:
        asleep += st.pool;
        kept = "KV buffer kept (--rl-kv-cache-management-mode persist)";
        break;
      case v1::ROLLOUT_SLEEP_LEVEL_1:
        out.host_bytes = out.kv_pool_bytes;
        kept = "KV buffer to the host (--rl-kv-cache-management-mode offload)";
        break;
      default:
        kept = "KV buffer deleted (--rl-kv-cache-management-mode recompute)";
        break;
    }
    if (!shares_weights) absl::StrAppend(&kept, ", the inference model's weights stay");
  } else {
    switch (sleep) {
      case v1::ROLLOUT_SLEEP_NONE:
        asleep += st.weights + st.pool;
        kept = "weights and KV pool kept (no sleep)";
        break;
      case v1::ROLLOUT_SLEEP_LEVEL_1:
        out.host_bytes = out.weight_bytes;
        kept = "level 1: weights to the host, KV pool discarded";
        break;
      default:
        kept = "level 2: weights and KV pool discarded";
        break;
    }
  }
  out.asleep_bytes = static_cast<uint64_t>(std::llround(asleep));

  // The spreads of the totals. Inside vLLM's budget the activation and (from
  // 0.21) graph terms move the KV pool the other way, and SGLang's weights
  // and pool fill its fraction exactly: only the terms outside a budget
  // spread the generate total. Asleep: the kept graphs and runtime, and a
  // kept vLLM pool (budget less activation and graphs) their spread.
  const double act_sd = static_cast<double>(out.activation_sd_bytes);
  const double graph_sd = static_cast<double>(out.cuda_graph_sd_bytes);
  const double outside_act = vllm ? 0 : act_sd;
  const double outside_graph = graphs_in_budget ? 0 : graph_sd;
  out.generate_sd_bytes = static_cast<uint64_t>(std::llround(std::sqrt(
      outside_act * outside_act + outside_graph * outside_graph + runtime_sd * runtime_sd)));
  const double kept_graph_sd = graphs_stay ? graph_sd : 0;
  const double kept_pool_sd = vllm && sleep == v1::ROLLOUT_SLEEP_NONE
                                  ? std::hypot(act_sd, graphs_in_budget ? graph_sd : 0)
                                  : 0;
  out.asleep_sd_bytes = static_cast<uint64_t>(std::llround(std::sqrt(
      kept_graph_sd * kept_graph_sd + runtime_sd * runtime_sd + kept_pool_sd * kept_pool_sd)));
  out.asleep_basis =
      absl::StrCat(kept, r.sleep() == v1::ROLLOUT_SLEEP_UNSPECIFIED ? " (the engine's rule)" : "",
                   "; ", graphs_stay ? "CUDA graphs stay" : "CUDA graphs deleted",
                   runtime > 0 ? ", runtime stays" : "");
  return out;
}

}  // namespace oomguard
