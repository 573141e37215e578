#include "estimator/cuda_graph_rules.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

// The value is quoted: a module word comes from the request.
absl::Status Refused(absl::string_view field, absl::string_view value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quote(value), ": ", why));
}

const char* ImplWord(v1::CudaGraphImpl impl) {
  switch (impl) {
    case v1::CUDA_GRAPH_IMPL_LOCAL:
      return "local";
    case v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE:
      return "transformer_engine";
    case v1::CUDA_GRAPH_IMPL_FULL_ITERATION:
      return "full_iteration";
    default:
      return "none";
  }
}

// Sets the module named `word`; false for a word CudaGraphModule lacks
// (megatron/core/transformer/enums.py).
bool SetModule(absl::string_view word, CudaGraphModules& m) {
  if (word == "attn") {
    m.attn = true;
  } else if (word == "mlp") {
    m.mlp = true;
  } else if (word == "moe") {
    m.moe = true;
  } else if (word == "moe_router") {
    m.moe_router = true;
  } else if (word == "moe_preprocess") {
    m.moe_preprocess = true;
  } else if (word == "mamba") {
    m.mamba = true;
  } else {
    return false;
  }
  return true;
}

// TransformerConfig.__post_init__'s checks of the modules of a per-layer
// graph (local or transformer_engine).
absl::Status CheckPerLayerModules(const ValidatedJob& j, v1::CudaGraphImpl impl,
                                  CudaGraphModules& m) {
  constexpr absl::string_view kField = "runtime.cuda_graph_modules";
  // "local impl doesn't currently distinguish between moe_preprocess or
  // moe_router so just set both if either is specified."
  if (impl == v1::CUDA_GRAPH_IMPL_LOCAL && (m.moe_router || m.moe_preprocess)) {
    m.moe_router = m.moe_preprocess = true;
  }
  if (m.moe && m.moe_router) {
    return Refused(kField, "moe moe_router", "Megatron-Core refuses moe with moe_router");
  }
  if (m.moe_preprocess && !m.moe_router) {
    return Refused(kField, "moe_preprocess",
                   "Megatron-Core captures moe_preprocess only together with moe_router");
  }
  const MoeSettings& moe = j.moe;
  if (moe.experts <= 1) {
    if (m.moe || m.moe_router) {
      return Refused(kField, m.moe ? "moe" : "moe_router",
                     "MoE graphs need an MoE model (model.num_experts > 1)");
    }
    return absl::OkStatus();
  }
  const bool all_moe = std::all_of(moe.is_moe_layer.begin(), moe.is_moe_layer.end(),
                                   [](bool is_moe) { return is_moe; });
  if (all_moe && m.mlp) {
    return Refused(kField, "mlp", "mlp graphs dense layers, and every layer of this model is MoE");
  }
  const bool drop_and_pad = moe.capacity_factor > 0 && moe.pad_to_capacity;
  if (!drop_and_pad) {
    if (m.moe) {
      return Refused(kField, "moe",
                     "Megatron-Core graphs the whole MoE only with drop-and-pad routing "
                     "(--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity)");
    }
    const bool alltoall = !moe.allgather_dispatcher && !moe.flex_dispatcher;
    if (m.moe_preprocess && alltoall &&
        (moe.capacity_factor > 0 || j.precision.moe_router_padding_for_fp8)) {
      return Refused(kField, "moe_preprocess",
                     "the alltoall dispatcher's preprocess copies to the host and synchronizes "
                     "with a capacity factor or --moe-router-padding-for-fp8");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveCudaGraphs(const v1::RuntimeSpec& r, ValidatedJob& j) {
  v1::CudaGraphImpl impl = r.cuda_graph_impl();
  CudaGraphModules modules;
  bool full = false;
  std::string deprecated;    // "full_iteration" or "full_iteration_inference".
  std::string first_module;  // The first value naming a module.
  for (int i = 0; i < r.cuda_graph_modules_size(); ++i) {
    const std::string& word = r.cuda_graph_modules(i);
    const std::string field = absl::StrCat("runtime.cuda_graph_modules[", i, "]");
    if (word == "full") {
      full = true;
    } else if (word == "full_iteration" || word == "full_iteration_inference") {
      if (!deprecated.empty() && deprecated != word) {
        return Refused(field, word,
                       absl::StrCat("Megatron-LM refuses two deprecated values together (",
                                    deprecated, " and ", word, ")"));
      }
      deprecated = word;
    } else if (SetModule(word, modules)) {
      if (first_module.empty()) first_module = word;
    } else {
      return Refused(field, word,
                     "not a CUDA graph module (attn, mlp, moe, moe_router, moe_preprocess, "
                     "mamba; deprecated: full, full_iteration, full_iteration_inference)");
    }
  }
  if (full && r.cuda_graph_modules_size() > 1) {
    return Refused("runtime.cuda_graph_modules", "full",
                   "Megatron-LM accepts the deprecated full only on its own");
  }
  const bool per_layer_or_none =
      impl != v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE && impl != v1::CUDA_GRAPH_IMPL_FULL_ITERATION;
  if (deprecated == "full_iteration") {
    if (impl == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE) {
      return Refused("runtime.cuda_graph_impl", ImplWord(impl),
                     "the deprecated --cuda-graph-modules full_iteration needs --cuda-graph-impl "
                     "none, local or full_iteration");
    }
    impl = v1::CUDA_GRAPH_IMPL_FULL_ITERATION;
  } else if (deprecated == "full_iteration_inference" && !per_layer_or_none) {
    return Refused("runtime.cuda_graph_impl", ImplWord(impl),
                   "the deprecated --cuda-graph-modules full_iteration_inference needs "
                   "--cuda-graph-impl none or local");
  }
  // full_iteration_inference only sets --inference-cuda-graph-scope block:
  // no training graph.
  RuntimeSettings& rt = j.runtime;
  switch (impl) {
    case v1::CUDA_GRAPH_IMPL_LOCAL:
      rt.cuda_graph_impl = CudaGraphImpl::kLocal;
      break;
    case v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE:
      rt.cuda_graph_impl = CudaGraphImpl::kTransformerEngine;
      break;
    case v1::CUDA_GRAPH_IMPL_FULL_ITERATION:
      rt.cuda_graph_impl = CudaGraphImpl::kFullIteration;
      break;
    default:
      rt.cuda_graph_impl = CudaGraphImpl::kNone;
      break;
  }
  if (rt.cuda_graph_impl == CudaGraphImpl::kFullIteration && !modules.whole_layers()) {
    return Refused("runtime.cuda_graph_modules", first_module,
                   "Megatron-LM needs --cuda-graph-modules empty with --cuda-graph-impl "
                   "full_iteration");
  }
  if (rt.per_layer_cuda_graphs()) {
    OOMGUARD_RETURN_IF_ERROR(CheckPerLayerModules(j, impl, modules));
  }
  rt.optimizer_cuda_graph = r.optimizer_cuda_graph();
  // The modules mean nothing without per-layer graphs.
  rt.cuda_graph_modules = rt.per_layer_cuda_graphs() ? modules : CudaGraphModules{};
  return absl::OkStatus();
}

}  // namespace oomguard
