// The ladder of recommended changes and the incompatibility checks (see
// recommendations.h).
#include "admission/recommendations.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "admission/gpu_catalog.h"
#include "estimator/activation_cpu_offload.h"
#include "estimator/expert_parallel_overlap.h"
#include "estimator/job_defaults.h"
#include "estimator/recompute_rules.h"
#include "estimator/shared_expert_overlap.h"
#include "estimator/tp_comm_overlap.h"
#include "estimator/validated_job.h"
#include "jobspec/megatron_args_writer.h"
#include "jobspec/shell_words.h"

namespace oomguard {
namespace {

// --- Reading the job --------------------------------------------------------

// Any CUDA graph: per-layer or the full iteration (each captures NCCL calls).
bool HasCudaGraphs(const v1::JobSpec& j) {
  const v1::CudaGraphImpl impl = j.runtime().cuda_graph_impl();
  return impl == v1::CUDA_GRAPH_IMPL_LOCAL || impl == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE ||
         impl == v1::CUDA_GRAPH_IMPL_FULL_ITERATION;
}
// Megatron-Core allows layer-level (full) recompute only with a
// full-iteration CUDA graph: `--cuda-graph-impl full_iteration`, or its
// deprecated spelling `--cuda-graph-impl local --cuda-graph-scope
// full_iteration` (estimator/cuda_graph_rules.h).
bool GraphsAllowFullRecompute(const v1::JobSpec& j) {
  const auto& modules = j.runtime().cuda_graph_modules();
  const v1::CudaGraphImpl impl = j.runtime().cuda_graph_impl();
  return !HasCudaGraphs(j) || impl == v1::CUDA_GRAPH_IMPL_FULL_ITERATION ||
         (impl == v1::CUDA_GRAPH_IMPL_LOCAL && modules.size() == 1 &&
          modules[0] == "full_iteration");
}

// Turns off the ParallelismSpec switch at `path` (read by `is_set`, written by
// `set`) where `conflict` says Megatron-Core refuses it, saying why; nullopt
// when the job keeps it (or fails validation: the estimate of the change says
// why).
std::optional<JobChange::Dropped> DropRefusedSwitch(
    v1::JobSpec* job, std::string_view path, bool (v1::ParallelismSpec::*is_set)() const,
    void (v1::ParallelismSpec::*set)(bool),
    std::optional<std::string> (*conflict)(const ValidatedJob&)) {
  if (!(job->parallelism().*is_set)()) return std::nullopt;
  const absl::StatusOr<ValidatedJob> j = ValidateJob(*job, nullptr);
  if (!j.ok()) return std::nullopt;
  const std::optional<std::string> why = conflict(*j);
  if (!why) return std::nullopt;
  (job->mutable_parallelism()->*set)(false);
  return JobChange::Dropped{path, *why};
}

// The change that drops one switch; nullopt when there is none to drop.
std::optional<JobChange> Dropping(std::optional<JobChange::Dropped> dropped) {
  if (!dropped) return std::nullopt;
  JobChange change;
  change.dropped.push_back(*std::move(dropped));
  return change;
}

// Adds what `drop` dropped to `change`.
void AlsoDrop(std::optional<JobChange::Dropped> drop, JobChange& change) {
  if (drop) change.dropped.push_back(*std::move(drop));
}

// --overlap-moe-expert-parallel-comm, where Megatron-Core refuses it
// (estimator/expert_parallel_overlap.h).
std::optional<JobChange::Dropped> DropRefusedExpertParallelOverlap(v1::JobSpec* job) {
  return DropRefusedSwitch(job, "parallelism.overlap_moe_expert_parallel_comm",
                           &v1::ParallelismSpec::overlap_moe_expert_parallel_comm,
                           &v1::ParallelismSpec::set_overlap_moe_expert_parallel_comm,
                           ExpertParallelOverlapConflict);
}

// --- The changes ------------------------------------------------------------

std::optional<JobChange> EnableExpandableSegments(const v1::GpuSpec& gpu, v1::JobSpec* job) {
  v1::RuntimeSpec* rt = job->mutable_runtime();
  if (rt->expandable_segments()) return std::nullopt;
  rt->set_expandable_segments(true);
  JobChange change{.environment = {"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"}};
  if (HasCudaGraphs(*job) && NeedsNcclGraphRegisterOff(gpu) &&
      !rt->nccl_graph_register_disabled()) {
    rt->set_nccl_graph_register_disabled(true);
    change.environment.push_back("NCCL_GRAPH_REGISTER=0");
  }
  if (rt->use_nccl_ub()) {
    rt->set_use_nccl_ub(false);
    change.dropped.push_back({"runtime.use_nccl_ub", "it does not work with them"});
  }
  return change;
}

// Adds `module` to the selective recompute list.
std::optional<JobChange> AddRecomputeModule(v1::RecomputeModule module, v1::JobSpec* job) {
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
  for (v1::RecomputeModule m : modules) r->add_modules(m);
  return JobChange{.fields = {"recompute.granularity", "recompute.modules"}};
}

std::optional<JobChange> RecomputeMoeAct(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->model().num_experts() == 0) return std::nullopt;
  std::optional<JobChange> change = AddRecomputeModule(v1::RECOMPUTE_MODULE_MOE_ACT, job);
  if (change && RecomputeNeedsGroupedGemm(v1::RECOMPUTE_MODULE_MOE_ACT) &&
      !job->model().moe_grouped_gemm()) {
    job->mutable_model()->set_moe_grouped_gemm(true);
    change->fields.push_back("model.moe_grouped_gemm");
  }
  return change;
}

std::optional<JobChange> RecomputeLayernorm(const v1::GpuSpec&, v1::JobSpec* job) {
  return AddRecomputeModule(v1::RECOMPUTE_MODULE_LAYERNORM, job);
}

std::optional<JobChange> RecomputeMlaUpProj(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->model().attention_type() != v1::ATTENTION_TYPE_MLA) return std::nullopt;
  return AddRecomputeModule(v1::RECOMPUTE_MODULE_MLA_UP_PROJ, job);
}

// Doubles PP at the cost of DP (the GPU count stays).
std::optional<JobChange> MorePipelineParallel(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::ParallelismSpec* p = job->mutable_parallelism();
  const uint64_t pp = PipelineParallelSize(*p);
  const uint64_t model_parallel = uint64_t{TensorParallelSize(*p)} * pp * ContextParallelSize(*p);
  if (!p->pipeline_model_parallel_layout().empty() || p->num_gpus() % (2 * model_parallel) != 0) {
    return std::nullopt;
  }
  p->set_pipeline_model_parallel_size(static_cast<uint32_t>(2 * pp));
  JobChange change{.fields = {"parallelism.pipeline_model_parallel_size"}};
  // From PP 1, or with fewer virtual stages per rank, the EP overlap may lose
  // the interleaved schedule it needs.
  AlsoDrop(DropRefusedExpertParallelOverlap(job), change);
  return change;
}

// Doubles TP within a node, with sequence parallelism.
std::optional<JobChange> MoreTensorParallel(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::ParallelismSpec* p = job->mutable_parallelism();
  const uint64_t tp = TensorParallelSize(*p);
  const uint64_t model_parallel = 2 * tp * PipelineParallelSize(*p) * ContextParallelSize(*p);
  if (2 * tp > GpusPerNode(job->runtime()) || p->num_gpus() % model_parallel != 0) {
    return std::nullopt;
  }
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(2 * tp));
  JobChange change{.fields = {"parallelism.tensor_model_parallel_size"}};
  if (!p->sequence_parallel()) {
    p->set_sequence_parallel(true);
    change.fields.push_back("parallelism.sequence_parallel");
  }
  return change;
}

std::optional<JobChange> DistributedOptimizer(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->precision().use_distributed_optimizer()) return std::nullopt;
  // FSDP shards the optimizer state itself (Torch FSDP2 refuses the
  // distributed optimizer; Megatron-FSDP turns it on).
  const v1::FsdpImplementation fsdp = job->parallelism().fsdp_implementation();
  if (fsdp == v1::FSDP_IMPLEMENTATION_MEGATRON_FSDP ||
      fsdp == v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) {
    return std::nullopt;
  }
  job->mutable_precision()->set_use_distributed_optimizer(true);
  return JobChange{.fields = {"precision.use_distributed_optimizer"}};
}

// Offloads all the optimizer moments (fraction 1.0).
std::optional<JobChange> OptimizerCpuOffload(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::PrecisionSpec* p = job->mutable_precision();
  if (p->optimizer_cpu_offload()) return std::nullopt;
  p->set_optimizer_cpu_offload(true);
  p->set_optimizer_offload_fraction(1.0);
  JobChange change{
      .fields = {"precision.optimizer_cpu_offload", "precision.optimizer_offload_fraction"}};
  // Megatron-LM runs the hybrid-device optimizer through the precision-aware
  // path, which needs the distributed optimizer.
  if (!p->use_precision_aware_optimizer()) {
    p->set_use_precision_aware_optimizer(true);
    change.fields.push_back("precision.use_precision_aware_optimizer");
  }
  if (!p->use_distributed_optimizer()) {
    p->set_use_distributed_optimizer(true);
    change.fields.push_back("precision.use_distributed_optimizer");
  }
  return change;
}

// Activation offload of every layer but the last, the most Megatron-Core
// allows, where it accepts offloading (estimator/activation_cpu_offload.h).
std::optional<JobChange> ActivationCpuOffload(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().cpu_offloading_num_layers() > 0) return std::nullopt;
  const absl::StatusOr<ValidatedJob> j = ValidateJob(*job, nullptr);
  if (!j.ok() || !CpuOffloadingAccepted(*j) || MaxCpuOffloadedLayers(*j) < 1) return std::nullopt;
  job->mutable_recompute()->set_cpu_offloading_num_layers(MaxCpuOffloadedLayers(*j));
  return JobChange{.fields = {"recompute.cpu_offloading_num_layers"}};
}

std::optional<JobChange> FullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::RecomputeSpec* r = job->mutable_recompute();
  if (r->granularity() == v1::RECOMPUTE_GRANULARITY_FULL) return std::nullopt;
  r->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  r->set_method(v1::RECOMPUTE_METHOD_UNIFORM);
  r->set_num_layers(1);
  r->clear_modules();
  JobChange change{.fields = {"recompute.granularity", "recompute.method", "recompute.num_layers"}};
  if (!GraphsAllowFullRecompute(*job)) {
    job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
    job->mutable_runtime()->clear_cuda_graph_modules();
    change.fields.push_back("runtime.cuda_graph_impl");
  }
  if (r->cpu_offloading_num_layers() > 0) {
    r->clear_cpu_offloading_num_layers();
    change.dropped.push_back({"recompute.cpu_offloading_num_layers", ""});
  }
  // Megatron-Core refuses the EP overlap with full recompute.
  AlsoDrop(DropRefusedExpertParallelOverlap(job), change);
  return change;
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
        "keeps the activations of every layer but the last in host memory (the most "
        "Megatron-Core allows; fewer layers overlap the copies better but save less); possible "
        "because PP = 1 and nothing is recomputed",
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

// --cpu-offloading-num-layers, where Megatron-Core refuses it
// (estimator/activation_cpu_offload.h).
std::optional<JobChange> DropCpuOffloading(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().cpu_offloading_num_layers() == 0) return std::nullopt;
  const absl::StatusOr<ValidatedJob> j = ValidateJob(*job, nullptr);
  if (!j.ok()) return std::nullopt;
  std::optional<std::string> why = CpuOffloadingConflict(*j);
  if (!why) return std::nullopt;
  job->mutable_recompute()->clear_cpu_offloading_num_layers();
  return Dropping(JobChange::Dropped{"recompute.cpu_offloading_num_layers", *std::move(why)});
}

std::optional<JobChange> DropNcclUb(const v1::GpuSpec&, v1::JobSpec* job) {
  if (!job->runtime().use_nccl_ub() || !job->runtime().expandable_segments()) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_use_nccl_ub(false);
  return Dropping(JobChange::Dropped{"runtime.use_nccl_ub", "or unset expandable_segments"});
}

std::optional<JobChange> GraphsForFullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().granularity() != v1::RECOMPUTE_GRANULARITY_FULL ||
      GraphsAllowFullRecompute(*job)) {
    return std::nullopt;
  }
  // The other fix: a full-iteration graph, which full recompute runs with.
  v1::JobSpec full_iteration_graph = *job;
  full_iteration_graph.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_FULL_ITERATION);
  full_iteration_graph.mutable_runtime()->clear_cuda_graph_modules();
  job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
  job->mutable_runtime()->clear_cuda_graph_modules();
  return JobChange{
      .fields = {"runtime.cuda_graph_impl"},
      .alternative = absl::StrCat(
          "or selective recompute, or ",
          JoinShellWords(WriteJobFields(
              full_iteration_graph, {"runtime.cuda_graph_impl", "runtime.cuda_graph_modules"})))};
}

std::optional<JobChange> NcclGraphRegisterOff(const v1::GpuSpec& gpu, v1::JobSpec* job) {
  const v1::RuntimeSpec& rt = job->runtime();
  if (!HasCudaGraphs(*job) || !rt.expandable_segments() || rt.nccl_graph_register_disabled() ||
      !NeedsNcclGraphRegisterOff(gpu)) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_nccl_graph_register_disabled(true);
  return JobChange{.environment = {"NCCL_GRAPH_REGISTER=0"}};
}

std::optional<JobChange> DropExpertParallelOverlap(const v1::GpuSpec&, v1::JobSpec* job) {
  return Dropping(DropRefusedExpertParallelOverlap(job));
}

// --moe-shared-expert-overlap, where Megatron-Core refuses it
// (estimator/shared_expert_overlap.h).
std::optional<JobChange> DropSharedExpertOverlap(const v1::GpuSpec&, v1::JobSpec* job) {
  return Dropping(DropRefusedSwitch(
      job, "parallelism.moe_shared_expert_overlap", &v1::ParallelismSpec::moe_shared_expert_overlap,
      &v1::ParallelismSpec::set_moe_shared_expert_overlap, SharedExpertOverlapConflict));
}

// --tp-comm-overlap without sequence parallelism (estimator/tp_comm_overlap.h):
// with TP > 1, turn sequence parallelism on; at TP 1, drop the flag.
std::optional<JobChange> TpCommOverlapWithoutSequenceParallel(const v1::GpuSpec&,
                                                              v1::JobSpec* job) {
  if (!job->parallelism().tp_comm_overlap()) return std::nullopt;
  if (TensorParallelSize(job->parallelism()) > 1) {
    if (job->parallelism().sequence_parallel()) return std::nullopt;
    job->mutable_parallelism()->set_sequence_parallel(true);
    return JobChange{.fields = {"parallelism.sequence_parallel"}};
  }
  return Dropping(
      DropRefusedSwitch(job, "parallelism.tp_comm_overlap", &v1::ParallelismSpec::tp_comm_overlap,
                        &v1::ParallelismSpec::set_tp_comm_overlap, TpCommOverlapConflict));
}

}  // namespace

const std::vector<RecommendedChange>& IncompatibilityFixes() {
  static const auto* const kChecks = new std::vector<RecommendedChange>{
      {v1::Recommendation::KIND_INCOMPATIBILITY, "cpu_offloading_conflict",
       "Megatron-Core refuses --cpu-offloading-num-layers with pipeline parallelism > 1, with "
       "recompute, with per-layer CUDA graphs and with fine-grained activation offloading; "
       "releases before 0.16 lack it",
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

std::string SettingText(const v1::JobSpec& changed, const JobChange& change) {
  std::vector<std::string> head = change.environment;
  if (!change.fields.empty())
    head.push_back(JoinShellWords(WriteJobFields(changed, change.fields)));
  std::string text = absl::StrJoin(head, " ");
  if (!change.alternative.empty()) absl::StrAppend(&text, " (", change.alternative, ")");
  for (const JobChange::Dropped& dropped : change.dropped) {
    absl::StrAppend(&text, text.empty() ? "" : ", and ", "drop ", DroppedFlagFor(dropped.field));
    if (!dropped.why.empty()) absl::StrAppend(&text, " (", dropped.why, ")");
  }
  return text;
}

std::optional<std::string> RecommendedChange::Apply(const v1::GpuSpec& gpu,
                                                    v1::JobSpec* job) const {
  std::optional<JobChange> change = make(gpu, job);
  if (!change) return std::nullopt;
  return SettingText(*job, *change);
}

}  // namespace oomguard
