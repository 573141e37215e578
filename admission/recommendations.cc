// The ladder of recommended changes and the incompatibility checks (see
// recommendations.h).
#include "admission/recommendations.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "admission/gpu_catalog.h"
#include "estimator/expert_parallel_overlap.h"
#include "estimator/recompute_rules.h"
#include "estimator/shared_expert_overlap.h"
#include "estimator/tp_comm_overlap.h"
#include "estimator/validated_job.h"
#include "jobspec/megatron_flags.h"

namespace oomguard {
namespace {

// --- Spelling a change --------------------------------------------------------

// The Megatron-LM flag that sets the JobSpec field `path`. The paths here
// are constants: one no flag sets is a bug.
const MegatronFlag& FlagSetting(absl::string_view path) {
  const MegatronFlag* flag = FindMegatronFlagForField(std::string_view(path.data(), path.size()));
  if (flag == nullptr) {
    std::fprintf(stderr, "oomguard: admission: no Megatron-LM flag sets %.*s\n",
                 static_cast<int>(path.size()), path.data());
    std::abort();
  }
  return *flag;
}

// "--tensor-model-parallel-size" for "parallelism.tensor_model_parallel_size".
std::string Flag(absl::string_view path) { return FlagSetting(path).Spelling(); }

// "--recompute-granularity selective" for "recompute.granularity" and
// RECOMPUTE_GRANULARITY_SELECTIVE.
std::string FlagWithWord(absl::string_view path, int value) {
  const MegatronFlag& flag = FlagSetting(path);
  return absl::StrCat(flag.Spelling(), " ", flag.WordFor(value));
}

// --- Reading the job --------------------------------------------------------

uint32_t TensorParallel(const v1::JobSpec& j) {
  return j.parallelism().has_tensor_model_parallel_size()
             ? j.parallelism().tensor_model_parallel_size()
             : 1;
}
uint32_t PipelineParallel(const v1::JobSpec& j) {
  return j.parallelism().has_pipeline_model_parallel_size()
             ? j.parallelism().pipeline_model_parallel_size()
             : 1;
}
uint32_t ContextParallel(const v1::JobSpec& j) {
  return j.parallelism().has_context_parallel_size() ? j.parallelism().context_parallel_size() : 1;
}
bool HasCudaGraphs(const v1::JobSpec& j) {
  const v1::CudaGraphImpl impl = j.runtime().cuda_graph_impl();
  return impl == v1::CUDA_GRAPH_IMPL_LOCAL || impl == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE;
}
// Megatron-Core allows layer-level (full) recompute only with a
// full-iteration CUDA graph.
bool GraphsAllowFullRecompute(const v1::JobSpec& j) {
  const auto& modules = j.runtime().cuda_graph_modules();
  return !HasCudaGraphs(j) || (j.runtime().cuda_graph_impl() == v1::CUDA_GRAPH_IMPL_LOCAL &&
                               modules.size() == 1 && modules[0] == "full_iteration");
}
bool HasRecompute(const v1::JobSpec& j) {
  const v1::RecomputeGranularity g = j.recompute().granularity();
  return g == v1::RECOMPUTE_GRANULARITY_SELECTIVE || g == v1::RECOMPUTE_GRANULARITY_FULL;
}

// Turns off the ParallelismSpec switch at `path` (read by `is_set`, written by
// `set`) where `conflict` says Megatron-Core refuses it: "drop <flag> (<why>)",
// or nullopt when the job keeps it (or fails validation: the estimate of the
// change says why).
std::optional<std::string> DropRefusedSwitch(
    v1::JobSpec* job, absl::string_view path, bool (v1::ParallelismSpec::*is_set)() const,
    void (v1::ParallelismSpec::*set)(bool),
    std::optional<std::string> (*conflict)(const ValidatedJob&)) {
  if (!(job->parallelism().*is_set)()) return std::nullopt;
  const absl::StatusOr<ValidatedJob> j = ValidateJob(*job, nullptr);
  if (!j.ok()) return std::nullopt;
  const std::optional<std::string> why = conflict(*j);
  if (!why) return std::nullopt;
  (job->mutable_parallelism()->*set)(false);
  return absl::StrCat("drop ", Flag(path), " (", *why, ")");
}

// --overlap-moe-expert-parallel-comm, where Megatron-Core refuses it
// (estimator/expert_parallel_overlap.h).
std::optional<std::string> DropRefusedExpertParallelOverlap(v1::JobSpec* job) {
  return DropRefusedSwitch(job, "parallelism.overlap_moe_expert_parallel_comm",
                           &v1::ParallelismSpec::overlap_moe_expert_parallel_comm,
                           &v1::ParallelismSpec::set_overlap_moe_expert_parallel_comm,
                           ExpertParallelOverlapConflict);
}

// --- The changes ------------------------------------------------------------

std::optional<std::string> EnableExpandableSegments(const v1::GpuSpec& gpu, v1::JobSpec* job) {
  v1::RuntimeSpec* rt = job->mutable_runtime();
  if (rt->expandable_segments()) return std::nullopt;
  rt->set_expandable_segments(true);
  std::string setting = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  if (HasCudaGraphs(*job) && NeedsNcclGraphRegisterOff(gpu) &&
      !rt->nccl_graph_register_disabled()) {
    rt->set_nccl_graph_register_disabled(true);
    absl::StrAppend(&setting, " NCCL_GRAPH_REGISTER=0");
  }
  if (rt->use_nccl_ub()) {
    rt->set_use_nccl_ub(false);
    absl::StrAppend(&setting, ", and drop ", Flag("runtime.use_nccl_ub"),
                    " (it does not work with them)");
  }
  return setting;
}

// Adds `module` to the selective recompute list.
std::optional<std::string> AddRecomputeModule(v1::RecomputeModule module, v1::JobSpec* job) {
  v1::RecomputeSpec* r = job->mutable_recompute();
  if (r->granularity() == v1::RECOMPUTE_GRANULARITY_FULL) return std::nullopt;
  std::vector<v1::RecomputeModule> modules = SelectiveRecomputeModules(*r);
  if (std::any_of(modules.begin(), modules.end(),
                  [&](v1::RecomputeModule m) { return RecomputeModuleCovers(m, module); })) {
    return std::nullopt;
  }
  modules.push_back(module);
  r->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  r->clear_modules();
  std::vector<absl::string_view> words;
  for (v1::RecomputeModule m : modules) {
    r->add_modules(m);
    words.push_back(RecomputeModuleWord(m));
  }
  return absl::StrCat(FlagWithWord("recompute.granularity", v1::RECOMPUTE_GRANULARITY_SELECTIVE),
                      " ", Flag("recompute.modules"), " ", absl::StrJoin(words, " "));
}

std::optional<std::string> RecomputeMoeAct(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->model().num_experts() == 0) return std::nullopt;
  std::optional<std::string> setting = AddRecomputeModule(v1::RECOMPUTE_MODULE_MOE_ACT, job);
  if (setting && RecomputeNeedsGroupedGemm(v1::RECOMPUTE_MODULE_MOE_ACT) &&
      !job->model().moe_grouped_gemm()) {
    job->mutable_model()->set_moe_grouped_gemm(true);
    absl::StrAppend(&*setting, " ", Flag("model.moe_grouped_gemm"));
  }
  return setting;
}

std::optional<std::string> RecomputeLayernorm(const v1::GpuSpec&, v1::JobSpec* job) {
  return AddRecomputeModule(v1::RECOMPUTE_MODULE_LAYERNORM, job);
}

std::optional<std::string> RecomputeMlaUpProj(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->model().attention_type() != v1::ATTENTION_TYPE_MLA) return std::nullopt;
  return AddRecomputeModule(v1::RECOMPUTE_MODULE_MLA_UP_PROJ, job);
}

// Doubles PP at the cost of DP (the GPU count stays).
std::optional<std::string> MorePipelineParallel(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::ParallelismSpec* p = job->mutable_parallelism();
  const uint64_t pp = PipelineParallel(*job);
  const uint64_t model_parallel = uint64_t{TensorParallel(*job)} * pp * ContextParallel(*job);
  if (!p->pipeline_model_parallel_layout().empty() || p->num_gpus() % (2 * model_parallel) != 0) {
    return std::nullopt;
  }
  p->set_pipeline_model_parallel_size(static_cast<uint32_t>(2 * pp));
  std::string setting = absl::StrCat(Flag("parallelism.pipeline_model_parallel_size"), " ", 2 * pp);
  // From PP 1, or with fewer virtual stages per rank, the EP overlap may lose
  // the interleaved schedule it needs.
  if (std::optional<std::string> drop = DropRefusedExpertParallelOverlap(job)) {
    absl::StrAppend(&setting, ", and ", *drop);
  }
  return setting;
}

// Doubles TP within a node, with sequence parallelism.
std::optional<std::string> MoreTensorParallel(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::ParallelismSpec* p = job->mutable_parallelism();
  const uint64_t tp = TensorParallel(*job);
  const uint64_t per_node = job->runtime().has_gpus_per_node() ? job->runtime().gpus_per_node() : 8;
  const uint64_t model_parallel = 2 * tp * PipelineParallel(*job) * ContextParallel(*job);
  if (2 * tp > per_node || p->num_gpus() % model_parallel != 0) return std::nullopt;
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(2 * tp));
  std::string setting = absl::StrCat(Flag("parallelism.tensor_model_parallel_size"), " ", 2 * tp);
  if (!p->sequence_parallel()) {
    p->set_sequence_parallel(true);
    absl::StrAppend(&setting, " ", Flag("parallelism.sequence_parallel"));
  }
  return setting;
}

std::optional<std::string> DistributedOptimizer(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->precision().use_distributed_optimizer()) return std::nullopt;
  job->mutable_precision()->set_use_distributed_optimizer(true);
  return Flag("precision.use_distributed_optimizer");
}

std::optional<std::string> OptimizerCpuOffload(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::PrecisionSpec* p = job->mutable_precision();
  if (p->optimizer_cpu_offload()) return std::nullopt;
  p->set_optimizer_cpu_offload(true);
  p->clear_optimizer_offload_fraction();  // 1.0
  std::string setting = absl::StrCat(Flag("precision.optimizer_cpu_offload"), " ",
                                     Flag("precision.optimizer_offload_fraction"), " 1.0");
  // Megatron-LM runs the hybrid-device optimizer through the precision-aware
  // path, which needs the distributed optimizer.
  if (!p->use_precision_aware_optimizer()) {
    p->set_use_precision_aware_optimizer(true);
    absl::StrAppend(&setting, " ", Flag("precision.use_precision_aware_optimizer"));
  }
  if (!p->use_distributed_optimizer()) {
    p->set_use_distributed_optimizer(true);
    absl::StrAppend(&setting, " ", Flag("precision.use_distributed_optimizer"));
  }
  return setting;
}

// Activation offload: Megatron-Core allows it only with PP = 1, no
// recompute and no CUDA graphs.
std::optional<std::string> ActivationCpuOffload(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().cpu_offloading() || PipelineParallel(*job) > 1 || HasRecompute(*job) ||
      HasCudaGraphs(*job)) {
    return std::nullopt;
  }
  job->mutable_recompute()->set_cpu_offloading(true);
  return Flag("recompute.cpu_offloading");
}

std::optional<std::string> FullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::RecomputeSpec* r = job->mutable_recompute();
  if (r->granularity() == v1::RECOMPUTE_GRANULARITY_FULL) return std::nullopt;
  r->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  r->set_method(v1::RECOMPUTE_METHOD_UNIFORM);
  r->set_num_layers(1);
  r->clear_modules();
  std::string setting =
      absl::StrCat(FlagWithWord("recompute.granularity", v1::RECOMPUTE_GRANULARITY_FULL), " ",
                   FlagWithWord("recompute.method", v1::RECOMPUTE_METHOD_UNIFORM), " ",
                   Flag("recompute.num_layers"), " 1");
  if (!GraphsAllowFullRecompute(*job)) {
    job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
    job->mutable_runtime()->clear_cuda_graph_modules();
    absl::StrAppend(&setting, " ",
                    FlagWithWord("runtime.cuda_graph_impl", v1::CUDA_GRAPH_IMPL_NONE));
  }
  if (r->cpu_offloading()) {
    r->set_cpu_offloading(false);
    absl::StrAppend(&setting, ", and drop ", Flag("recompute.cpu_offloading"));
  }
  // Megatron-Core refuses the EP overlap with full recompute.
  if (std::optional<std::string> drop = DropRefusedExpertParallelOverlap(job)) {
    absl::StrAppend(&setting, ", and ", *drop);
  }
  return setting;
}

}  // namespace

const std::vector<LadderRung>& RecommendationLadder() {
  static const auto* const kLadder = new std::vector<LadderRung>{
      {{v1::Recommendation::KIND_ENVIRONMENT, "expandable_segments",
        "expandable segments remove most of the caching allocator's "
        "fragmentation slack, at no "
        "throughput cost",
        EnableExpandableSegments}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "recompute_moe_act",
        "recomputing the MoE activation function is cheap and frees the expert "
        "intermediate activations",
        RecomputeMoeAct}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "recompute_layernorm",
        "recomputing the norms costs almost no compute", RecomputeLayernorm}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "recompute_mla_up_proj",
        "recomputing the MLA up-projections frees the expanded query/key/value "
        "activations",
        RecomputeMlaUpProj}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "more_pipeline_parallel",
        "fewer layers per pipeline stage; costs less throughput than more TP "
        "(about 6% when DP "
        "halves)",
        MorePipelineParallel},
       {v1::Recommendation::KIND_CONFIG_CHANGE, "more_tensor_parallel",
        "more PP is not possible here; more TP splits the weights and "
        "activations further but "
        "costs throughput (-28% on Llama-3-70B)",
        MoreTensorParallel}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "distributed_optimizer",
        "shards the optimizer state over the data-parallel ranks (~1-2% "
        "throughput)",
        DistributedOptimizer}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "optimizer_cpu_offload",
        "keeps the optimizer moments in host memory (needs host RAM, slows the "
        "optimizer step)",
        OptimizerCpuOffload}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "activation_cpu_offload",
        "keeps layer activations in host memory; possible because PP = 1 and "
        "nothing is "
        "recomputed",
        ActivationCpuOffload}},
      {{v1::Recommendation::KIND_CONFIG_CHANGE, "full_recompute",
        "recomputes whole layers in backward: the strongest saving, the "
        "highest compute cost",
        FullRecompute}},
  };
  return *kLadder;
}

// --- Incompatibilities ------------------------------------------------------

namespace {

std::optional<std::string> DropCpuOffloading(const v1::GpuSpec&, v1::JobSpec* job) {
  if (!job->recompute().cpu_offloading() ||
      (PipelineParallel(*job) == 1 && !HasRecompute(*job) && !HasCudaGraphs(*job))) {
    return std::nullopt;
  }
  job->mutable_recompute()->set_cpu_offloading(false);
  return absl::StrCat("drop ", Flag("recompute.cpu_offloading"));
}

std::optional<std::string> DropNcclUb(const v1::GpuSpec&, v1::JobSpec* job) {
  if (!job->runtime().use_nccl_ub() || !job->runtime().expandable_segments()) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_use_nccl_ub(false);
  return absl::StrCat("drop ", Flag("runtime.use_nccl_ub"), " (or unset expandable_segments)");
}

std::optional<std::string> GraphsForFullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().granularity() != v1::RECOMPUTE_GRANULARITY_FULL ||
      GraphsAllowFullRecompute(*job)) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
  job->mutable_runtime()->clear_cuda_graph_modules();
  return absl::StrCat(FlagWithWord("runtime.cuda_graph_impl", v1::CUDA_GRAPH_IMPL_NONE),
                      " (or selective recompute, or ",
                      FlagWithWord("runtime.cuda_graph_impl", v1::CUDA_GRAPH_IMPL_LOCAL), " ",
                      Flag("runtime.cuda_graph_modules"), " full_iteration)");
}

std::optional<std::string> NcclGraphRegisterOff(const v1::GpuSpec& gpu, v1::JobSpec* job) {
  const v1::RuntimeSpec& rt = job->runtime();
  if (!HasCudaGraphs(*job) || !rt.expandable_segments() || rt.nccl_graph_register_disabled() ||
      !NeedsNcclGraphRegisterOff(gpu)) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_nccl_graph_register_disabled(true);
  return "NCCL_GRAPH_REGISTER=0";
}

std::optional<std::string> DropExpertParallelOverlap(const v1::GpuSpec&, v1::JobSpec* job) {
  return DropRefusedExpertParallelOverlap(job);
}

// --moe-shared-expert-overlap, where Megatron-Core refuses it
// (estimator/shared_expert_overlap.h).
std::optional<std::string> DropSharedExpertOverlap(const v1::GpuSpec&, v1::JobSpec* job) {
  return DropRefusedSwitch(
      job, "parallelism.moe_shared_expert_overlap", &v1::ParallelismSpec::moe_shared_expert_overlap,
      &v1::ParallelismSpec::set_moe_shared_expert_overlap, SharedExpertOverlapConflict);
}

// --tp-comm-overlap without sequence parallelism (estimator/tp_comm_overlap.h):
// with TP > 1, turn sequence parallelism on; at TP 1, drop the flag.
std::optional<std::string> TpCommOverlapWithoutSequenceParallel(const v1::GpuSpec&,
                                                                v1::JobSpec* job) {
  if (!job->parallelism().tp_comm_overlap()) return std::nullopt;
  if (TensorParallel(*job) > 1) {
    if (job->parallelism().sequence_parallel()) return std::nullopt;
    job->mutable_parallelism()->set_sequence_parallel(true);
    return Flag("parallelism.sequence_parallel");
  }
  return DropRefusedSwitch(job, "parallelism.tp_comm_overlap",
                           &v1::ParallelismSpec::tp_comm_overlap,
                           &v1::ParallelismSpec::set_tp_comm_overlap, TpCommOverlapConflict);
}

}  // namespace

const std::vector<RecommendedChange>& IncompatibilityFixes() {
  static const auto* const kChecks = new std::vector<RecommendedChange>{
      {v1::Recommendation::KIND_INCOMPATIBILITY, "cpu_offloading_conflict",
       "Megatron-Core refuses --cpu-offloading with pipeline parallelism > 1, "
       "with recompute "
       "and with CUDA graphs",
       DropCpuOffloading},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "nccl_ub_with_expandable_segments",
       "NCCL user buffers (--use-nccl-ub) fail with PyTorch's expandable "
       "segments",
       DropNcclUb},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "full_recompute_with_cuda_graphs",
       "Megatron-Core supports full (layer) recompute only with a "
       "full-iteration CUDA graph, "
       "not with TE-scoped graphs",
       GraphsForFullRecompute},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "nccl_graph_register",
       "Megatron-Core's CudaGraphManager requires NCCL_GRAPH_REGISTER=0 with "
       "CUDA graphs and "
       "expandable segments before Blackwell",
       NcclGraphRegisterOff},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "expert_parallel_overlap_conflict",
       "Megatron-Core refuses --overlap-moe-expert-parallel-comm for a dense model, without "
       "expert parallelism, with the allgather dispatcher, with PP > 1 but no virtual pipeline "
       "stages, with full or moe recompute, with fp32 parameters, with "
       "--moe-shared-expert-overlap and with more than one MTP layer; releases before 0.14 lack "
       "it",
       DropExpertParallelOverlap},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "shared_expert_overlap_conflict",
       "Megatron-Core refuses --moe-shared-expert-overlap with the allgather dispatcher and with "
       "the shared_experts module recomputed",
       DropSharedExpertOverlap},
      {v1::Recommendation::KIND_INCOMPATIBILITY, "tp_comm_overlap_without_sequence_parallel",
       "Megatron-LM refuses --tp-comm-overlap without sequence parallelism (which it turns off "
       "at TP 1)",
       TpCommOverlapWithoutSequenceParallel},
  };
  return *kChecks;
}

}  // namespace oomguard
