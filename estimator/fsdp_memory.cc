#include "estimator/fsdp_memory.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace oomguard {
namespace {

constexpr v1::ShardingStrategy kNoShard = v1::SHARDING_STRATEGY_NO_SHARD;
constexpr v1::ShardingStrategy kOptim = v1::SHARDING_STRATEGY_OPTIM;
constexpr v1::ShardingStrategy kOptimGrads = v1::SHARDING_STRATEGY_OPTIM_GRADS;
constexpr v1::ShardingStrategy kOptimGradsParams = v1::SHARDING_STRATEGY_OPTIM_GRADS_PARAMS;

absl::Status Invalid(absl::string_view field, absl::string_view value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

// Megatron-FSDP's default communication unit when
// --suggested-communication-unit-size is not given (megatron_fsdp.py
// MegatronFSDP._init_fsdp_param_and_grad_buffer): twice the mean unit's
// elements under optim_grads_params, otherwise the DDP bucket size or 10^9;
// then at least 10^9 (`max(1_000_000_000, ...)`; the code calls it a cap).
constexpr double kMinCommunicationUnit = 1e9;

// Megatron-FSDP's all-gather and reduce-scatter queue of one chunk.
struct Pipeline {
  double weights = 0;  // Gathered unit weights in flight.
  double grads = 0;    // Unsharded unit gradients in flight, elements.
};

Pipeline MegatronFsdpPipeline(const ValidatedJob& j, const FsdpChunk& c) {
  Pipeline p;
  const FsdpSettings& f = j.fsdp;
  if (c.units == 0 || c.unit_elements <= 0 || f.strategy == kNoShard) return p;
  const double units = static_cast<double>(c.units);
  const bool gathers = f.strategy == kOptimGradsParams;
  const bool scatters = f.strategy == kOptimGrads || f.strategy == kOptimGradsParams;
  if (f.double_buffer) {
    // FixedPoolAllocator / MaxPoolAllocator with UB_BUFFER_NUM = 2
    // (param_and_grad_buffer.py _init_each_parameter_group_buffers): two
    // units of gathered weights and two of gradients
    // (GradReducePipeline._enforce_double_buffer_limit); prefetch stops at
    // the second unit (AllGatherPipeline.all_gather_params
    // need_skip_prefetch).
    const double n = std::min(units, 2.0);
    if (gathers) p.weights = n * c.unit_weight_bytes;
    if (scatters) p.grads = n * c.unit_elements;
    return p;
  }
  double unit = static_cast<double>(f.communication_unit_elements);
  if (unit <= 0) {
    const double mean = std::floor(c.units_elements / units);
    unit = std::max(kMinCommunicationUnit, gathers ? 2 * mean : 0);
  }
  if (gathers) {
    // AllGatherPipeline.all_gather_params: the unit about to run, and the
    // next units added while the prefetched elements are below
    // suggested_AG_prefetch_size (half the communication unit); each unit is
    // released after its forward (_post_forward) and backward
    // (_post_backward_release_module).
    const double prefetched = std::ceil(std::floor(unit / 2) / c.unit_elements);
    p.weights = std::min(units, 1 + prefetched) * c.unit_weight_bytes;
  }
  if (scatters) {
    // GradReducePipeline.wait_for_previous_grad_reduce frees queued buckets
    // only while the queue holds more than the communication unit
    // (suggested_RS_queue_capacity): up to floor(unit / u) units stay
    // queued, one more is added, and the next unit's gradients are being
    // accumulated meanwhile (_grad_acc fetches its unsharded bucket).
    const double queued = std::floor(unit / c.unit_elements) + 2;
    p.grads = std::min(units, queued) * c.unit_elements;
  }
  return p;
}

}  // namespace

absl::Status ResolveFsdp(const v1::JobSpec& job, ValidatedJob& j, std::vector<std::string>* notes) {
  const v1::ParallelismSpec& s = job.parallelism();
  FsdpSettings& f = j.fsdp;
  f = FsdpSettings();
  f.implementation = s.fsdp_implementation() == v1::FSDP_IMPLEMENTATION_UNSPECIFIED
                         ? v1::FSDP_IMPLEMENTATION_NONE
                         : s.fsdp_implementation();
  if (!f.on()) return absl::OkStatus();
  const Parallelism& par = j.parallelism;
  const v1::PrecisionSpec& precision = job.precision();
  const int64_t instances = precision.has_num_distributed_optimizer_instances()
                                ? precision.num_distributed_optimizer_instances()
                                : 1;
  // arguments.py validate_args: "Emerging optimizer does not support
  // Megatron-FSDP / Torch-FSDP2"; Megatron-FSDP takes sgd and adam only.
  if (precision.optimizer() == v1::OPTIMIZER_MUON) {
    return Invalid("precision.optimizer", "OPTIMIZER_MUON",
                   "Megatron-LM refuses Muon with FSDP (--use-megatron-fsdp, --use-torch-fsdp2)");
  }
  if (precision.optimizer_cpu_offload()) {
    return absl::UnimplementedError(
        "precision.optimizer_cpu_offload = true: optimizer CPU offload under FSDP is not "
        "modelled");
  }
  if (f.implementation == v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) {
    // arguments.py validate_args, `if args.use_torch_fsdp2:`.
    const auto refuse = [](absl::string_view field, absl::string_view value,
                           absl::string_view flag) {
      return Invalid(field, value,
                     absl::StrCat("Megatron-LM refuses --use-torch-fsdp2 with ", flag));
    };
    if (par.pp > 1) {
      return refuse("parallelism.pipeline_model_parallel_size", absl::StrCat(par.pp),
                    "pipeline parallelism");
    }
    if (par.ep > 1) {
      return refuse("parallelism.expert_model_parallel_size", absl::StrCat(par.ep),
                    "expert parallelism");
    }
    if (precision.use_distributed_optimizer()) {
      return refuse("precision.use_distributed_optimizer", "true", "the distributed optimizer");
    }
    if (!job.runtime().has_gradient_accumulation_fusion() ||
        job.runtime().gradient_accumulation_fusion()) {
      return refuse("runtime.gradient_accumulation_fusion", "true",
                    "gradient-accumulation fusion (write --no-gradient-accumulation-fusion)");
    }
    if (j.model.tied_embeddings) {
      return refuse("model.untie_embeddings_and_output_weights", "false",
                    "tied embeddings (write --untie-embeddings-and-output-weights)");
    }
    if (precision.params_dtype() == v1::DTYPE_FP16) {
      return refuse("precision.params_dtype", "DTYPE_FP16", "fp16");
    }
    // Torch FSDP2 shards every state over DP x CP (fully_shard on each
    // TransformerLayer, the embeddings and the output layer,
    // torch_fully_sharded_data_parallel.py TorchFullyShardedDataParallel).
    f.strategy = kOptimGradsParams;
    f.reshard_after_forward =
        !s.has_torch_fsdp2_reshard_after_forward() || s.torch_fsdp2_reshard_after_forward();
    if (precision.fp8_param_gather() && notes != nullptr) {
      notes->push_back(
          "precision.fp8_param_gather: Megatron-LM turns it off under Torch FSDP2 (Transformer "
          "Engine 2.0 and later); the weights are counted in bf16");
    }
    return absl::OkStatus();
  }
  // Megatron-FSDP (arguments.py validate_args, `if args.use_megatron_fsdp:`).
  const uint32_t version = s.has_megatron_fsdp_version() ? s.megatron_fsdp_version() : 1;
  if (version == 2) {
    return absl::UnimplementedError(
        "parallelism.megatron_fsdp_version = 2: Megatron-FSDP's experimental fully_shard "
        "implementation is not modelled");
  }
  if (version != 1) {
    return Invalid("parallelism.megatron_fsdp_version", absl::StrCat(version),
                   "must be 1 or 2 (Megatron-LM's choices)");
  }
  f.strategy = s.data_parallel_sharding_strategy() == v1::SHARDING_STRATEGY_UNSPECIFIED
                   ? kOptimGradsParams
                   : s.data_parallel_sharding_strategy();
  const v1::ShardingStrategy outer = s.outer_dp_sharding_strategy();
  if (outer != v1::SHARDING_STRATEGY_UNSPECIFIED && outer != kNoShard && outer != kOptim) {
    return Invalid("parallelism.outer_dp_sharding_strategy", v1::ShardingStrategy_Name(outer),
                   "must be SHARDING_STRATEGY_NO_SHARD or SHARDING_STRATEGY_OPTIM");
  }
  // The outer strategy applies under hybrid sharding only (more than one
  // distributed-optimizer instance), where Megatron-FSDP raises
  // NotImplementedError for `optim` without full inner sharding
  // (param_and_grad_buffer.py _init_each_parameter_group_buffers).
  f.outer_shards_optimizer = outer == kOptim && instances > 1;
  if (f.outer_shards_optimizer && f.strategy != kOptimGradsParams) {
    return Invalid("parallelism.outer_dp_sharding_strategy", "SHARDING_STRATEGY_OPTIM",
                   absl::StrCat("needs parallelism.data_parallel_sharding_strategy "
                                "SHARDING_STRATEGY_OPTIM_GRADS_PARAMS, not ",
                                v1::ShardingStrategy_Name(f.strategy),
                                " (Megatron-FSDP refuses outer optimizer sharding without full "
                                "inner sharding)"));
  }
  // --use-nccl-ub and the max-pool allocator turn the double buffer on
  // (validate_args; ParamAndGradBuffer.__init__).
  f.double_buffer = s.fsdp_double_buffer() || s.megatron_fsdp_max_pool_double_buffer() ||
                    job.runtime().use_nccl_ub();
  // mcore_fsdp_adapter.py FullyShardedDataParallelV1.__init__.
  if (s.overlap_moe_expert_parallel_comm()) {
    if (f.double_buffer) {
      return Invalid("parallelism.fsdp_double_buffer", "true",
                     "Megatron-FSDP refuses its double buffer with "
                     "parallelism.overlap_moe_expert_parallel_comm (also turned on by "
                     "--use-nccl-ub and --megatron-fsdp-max-pool-double-buffer)");
    }
    const v1::CudaGraphImpl graphs = job.runtime().cuda_graph_impl();
    if (graphs == v1::CUDA_GRAPH_IMPL_LOCAL || graphs == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE) {
      return Invalid("runtime.cuda_graph_impl", v1::CudaGraphImpl_Name(graphs),
                     "Megatron-FSDP refuses per-layer CUDA graphs with "
                     "parallelism.overlap_moe_expert_parallel_comm");
    }
  }
  f.communication_unit_elements =
      s.has_suggested_communication_unit_size() ? s.suggested_communication_unit_size() : 0;
  if (s.has_suggested_communication_unit_size() && f.communication_unit_elements == 0) {
    return Invalid("parallelism.suggested_communication_unit_size", "0", "must be at least 1");
  }
  return absl::OkStatus();
}

FsdpStateBytes FsdpOptimizerStateBytes(const v1::ParallelismSpec& s,
                                       const PrecisionSettings& precision, bool precision_aware) {
  FsdpStateBytes out;
  const double p = precision.param_bytes;
  if (s.fsdp_implementation() == v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) {
    // Sharded DTensor gradients in the parameters' dtype; Megatron-Core's
    // Float16OptimizerWithFloat16Params (no distributed optimizer under
    // FSDP2) keeps an fp32 main copy of each 16-bit shard and copies its
    // gradient to fp32 for the step (optimizer.py
    // _copy_model_grads_to_main_grads).
    out.grad = p;
    out.master = p < 4 ? 4 : 0;
    out.step_grad_copy = p < 4 ? 4 : 0;
    return out;
  }
  // Megatron-FSDP's MixedPrecisionPolicy (mcore_fsdp_adapter.py) from
  // --megatron-fsdp-main-grads-dtype (auto: the parameters' dtype, bf16 for
  // FP8 weights: ParamAndGradBuffer._resolve_group_grad_dtype) and
  // --megatron-fsdp-main-params-dtype (fp32 default; auto: no main weight
  // buffer, the weights are updated).
  const auto bytes = [p](v1::FsdpDtype d, v1::FsdpDtype fallback) {
    if (d == v1::FSDP_DTYPE_UNSPECIFIED) d = fallback;
    switch (d) {
      case v1::FSDP_DTYPE_FP32:
        return 4.0;
      case v1::FSDP_DTYPE_BF16:
      case v1::FSDP_DTYPE_FP16:
        return 2.0;
      default:
        return p;
    }
  };
  out.grad = bytes(s.megatron_fsdp_main_grads_dtype(), v1::FSDP_DTYPE_AUTO);
  const bool main_weights = s.megatron_fsdp_main_params_dtype() != v1::FSDP_DTYPE_AUTO;
  out.master = main_weights ? bytes(s.megatron_fsdp_main_params_dtype(), v1::FSDP_DTYPE_FP32) : 0;
  // ParamAndGradBuffer.update_main_grads: the gradient shard is cast to the
  // main weights' dtype for the step unless the precision-aware optimizer
  // reads it as a decoupled gradient (megatron_fsdp_use_decoupled_grad); it
  // lives until zero_grad. FusedAdam keeps no master copy of its own
  // (optimizer/__init__.py sets master_weights False under Megatron-FSDP).
  out.step_grad_copy = main_weights && !precision_aware && out.grad != out.master ? out.master : 0;
  return out;
}

FsdpShards FsdpStateShards(const ValidatedJob& j) {
  FsdpShards shards;
  const FsdpSettings& f = j.fsdp;
  if (!f.on()) return shards;
  const Parallelism& par = j.parallelism;
  // The FSDP (DP-shard) groups: the data-parallel group with context
  // parallelism, and the expert data-parallel group, each of one
  // distributed-optimizer instance under hybrid sharding.
  const double instances = static_cast<double>(j.precision.optimizer_instances);
  const double dense_group = static_cast<double>(par.dp * par.cp) / instances;
  const double expert_group = static_cast<double>(par.edp) / instances;
  const double outer = f.outer_shards_optimizer ? instances : 1;
  // param_and_grad_buffer.py _init_each_parameter_group_buffers:
  // is_model_weight_buffer_distributed (optim_grads_params),
  // is_grad_buffer_distributed (optim_grads and up),
  // is_main_weight_buffer_distributed (optim and up; the optimizer's
  // moments follow its main weights).
  const auto of = [&f, outer](double group) {
    StateShards s;
    if (f.strategy == kOptimGradsParams) s.params = group;
    if (f.strategy == kOptimGrads || f.strategy == kOptimGradsParams) s.grads = group;
    if (f.strategy != kNoShard) s.optimizer = group * outer;
    return s;
  };
  shards.dense = of(dense_group);
  shards.expert = of(expert_group);
  return shards;
}

FsdpBuffers FsdpBufferBytes(const ValidatedJob& j, const std::vector<FsdpChunk>& chunks) {
  FsdpBuffers out;
  const FsdpSettings& f = j.fsdp;
  if (!f.on()) return out;
  const double p = j.precision.param_bytes;
  const double g = j.precision.grad_bytes;
  if (f.implementation == v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) {
    // PyTorch FSDP2 (torch.distributed.fsdp.fully_shard) gathers one unit
    // ahead of the one running, forward and backward, and reduce-scatters
    // each unit's unsharded gradients as its backward ends: two units of
    // each. Its units are the decoder layers, the embedding and the output
    // layer. Without reshard_after_forward every unit's gathered weights
    // stay from its forward to its backward.
    for (const FsdpChunk& c : chunks) {
      const double largest = std::max({c.unit_elements, c.embedding_elements, c.other_elements});
      const double all = c.units_elements + c.embedding_elements + c.other_elements;
      out.all_gather =
          std::max(out.all_gather, f.reshard_after_forward ? 2 * largest * p : all * p);
      out.reduce_scatter = std::max(out.reduce_scatter, 2 * largest * g);
    }
    return out;
  }
  // Megatron-FSDP: one pipeline per model chunk; one chunk runs at a time.
  out.persistent = f.double_buffer;
  for (const FsdpChunk& c : chunks) {
    const Pipeline pipe = MegatronFsdpPipeline(j, c);
    out.all_gather = std::max(out.all_gather, pipe.weights);
    out.reduce_scatter = std::max(out.reduce_scatter, pipe.grads * g);
    if (f.strategy == kOptimGradsParams) {
      out.non_unit_weights += (c.embedding_elements + c.other_elements) * p;
    }
  }
  return out;
}

}  // namespace oomguard
