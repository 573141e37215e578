// Megatron-Core's CUDA graph settings: `--cuda-graph-impl` and
// `--cuda-graph-modules` (deprecated `--cuda-graph-scope`) resolved as
// Megatron-LM resolves them, and the combinations it refuses.
//
// Sources: megatron/core/transformer/cuda_graph_config.py
// (normalize_cuda_graph_modules, validate_deprecated_cuda_graph_modules_
// migration_inputs, get_deprecated_cuda_graph_modules_migration: "full" alone
// means whole layers, "full_iteration" becomes `--cuda-graph-impl
// full_iteration`, "full_iteration_inference" sets an inference scope only),
// TransformerConfig.__post_init__ (the module rules) and
// megatron/training/arguments.py validate_args ("--cuda-graph-modules must be
// empty when --cuda-graph-impl=full_iteration").
#ifndef OOMGUARD_ESTIMATOR_CUDA_GRAPH_RULES_H_
#define OOMGUARD_ESTIMATOR_CUDA_GRAPH_RULES_H_

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Sets j.runtime.cuda_graph_impl and cuda_graph_modules from `r`. Reads the
// MoE settings, the layer pattern and the FP8 router padding, so it runs
// after those are resolved. InvalidArgument naming runtime.cuda_graph_modules
// or runtime.cuda_graph_impl and the value for what Megatron-LM refuses: a
// module it does not know, "full" beside other values, a deprecated value
// with an implementation it cannot be combined with, modules with the
// full-iteration graph, and the module rules of TransformerConfig (moe with
// moe_router; moe_preprocess without moe_router under transformer_engine;
// moe or moe_router in a dense model; mlp where every layer is MoE; moe
// without drop-and-pad routing; moe_preprocess with the alltoall dispatcher
// and a capacity factor or FP8 router padding).
absl::Status ResolveCudaGraphs(const v1::RuntimeSpec& r, ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_CUDA_GRAPH_RULES_H_
