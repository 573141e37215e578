// The admission check (see admission.h): the verdict, the ladder of
// recommended changes, the incompatibility checks and the summary sentence.
#include "admission/admission.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "admission/gpu_catalog.h"
#include "estimator/estimator.h"
#include "estimator/recompute_rules.h"

namespace oomguard {
namespace {

using Kind = v1::Recommendation::Kind;

// One change to try. `apply` makes the change in `job` and returns the
// setting to show, or nullopt when the change does not apply to this job.
struct Change {
  Kind kind;
  const char* id;
  const char* reason;
  std::function<std::optional<std::string>(const v1::GpuSpec& gpu, v1::JobSpec* job)> apply;
};

// A ladder rung: alternatives in order of preference; the first that applies
// and lowers the peak is taken.
using Rung = std::vector<Change>;

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

// "moe_act" for RECOMPUTE_MODULE_MOE_ACT: the --recompute-modules word.
std::string ModuleFlagName(v1::RecomputeModule m) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::RecomputeModule_Name(m), "RECOMPUTE_MODULE_"));
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
    absl::StrAppend(&setting, ", and drop --use-nccl-ub (it does not work with them)");
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
  std::vector<std::string> names;
  for (v1::RecomputeModule m : modules) {
    r->add_modules(m);
    names.push_back(ModuleFlagName(m));
  }
  return absl::StrCat("--recompute-granularity selective --recompute-modules ",
                      absl::StrJoin(names, " "));
}

std::optional<std::string> RecomputeMoeAct(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->model().num_experts() == 0) return std::nullopt;
  std::optional<std::string> setting = AddRecomputeModule(v1::RECOMPUTE_MODULE_MOE_ACT, job);
  if (setting && RecomputeNeedsGroupedGemm(v1::RECOMPUTE_MODULE_MOE_ACT) &&
      !job->model().moe_grouped_gemm()) {
    job->mutable_model()->set_moe_grouped_gemm(true);
    absl::StrAppend(&*setting, " --moe-grouped-gemm");
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
  return absl::StrCat("--pipeline-model-parallel-size ", 2 * pp);
}

// Doubles TP within a node, with sequence parallelism.
std::optional<std::string> MoreTensorParallel(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::ParallelismSpec* p = job->mutable_parallelism();
  const uint64_t tp = TensorParallel(*job);
  const uint64_t per_node = job->runtime().has_gpus_per_node() ? job->runtime().gpus_per_node() : 8;
  const uint64_t model_parallel = 2 * tp * PipelineParallel(*job) * ContextParallel(*job);
  if (2 * tp > per_node || p->num_gpus() % model_parallel != 0) return std::nullopt;
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(2 * tp));
  std::string setting = absl::StrCat("--tensor-model-parallel-size ", 2 * tp);
  if (!p->sequence_parallel()) {
    p->set_sequence_parallel(true);
    absl::StrAppend(&setting, " --sequence-parallel");
  }
  return setting;
}

std::optional<std::string> DistributedOptimizer(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->precision().use_distributed_optimizer()) return std::nullopt;
  job->mutable_precision()->set_use_distributed_optimizer(true);
  return "--use-distributed-optimizer";
}

std::optional<std::string> OptimizerCpuOffload(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::PrecisionSpec* p = job->mutable_precision();
  if (p->optimizer_cpu_offload()) return std::nullopt;
  p->set_optimizer_cpu_offload(true);
  p->clear_optimizer_offload_fraction();  // 1.0
  std::string setting = "--optimizer-cpu-offload --optimizer-offload-fraction 1.0";
  // Megatron-LM runs the hybrid-device optimizer through the precision-aware
  // path, which needs the distributed optimizer.
  if (!p->use_precision_aware_optimizer()) {
    p->set_use_precision_aware_optimizer(true);
    absl::StrAppend(&setting, " --use-precision-aware-optimizer");
  }
  if (!p->use_distributed_optimizer()) {
    p->set_use_distributed_optimizer(true);
    absl::StrAppend(&setting, " --use-distributed-optimizer");
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
  return "--cpu-offloading";
}

std::optional<std::string> FullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  v1::RecomputeSpec* r = job->mutable_recompute();
  if (r->granularity() == v1::RECOMPUTE_GRANULARITY_FULL) return std::nullopt;
  r->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  r->set_method(v1::RECOMPUTE_METHOD_UNIFORM);
  r->set_num_layers(1);
  r->clear_modules();
  std::string setting =
      "--recompute-granularity full --recompute-method uniform "
      "--recompute-num-layers 1";
  if (!GraphsAllowFullRecompute(*job)) {
    job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
    job->mutable_runtime()->clear_cuda_graph_modules();
    absl::StrAppend(&setting, " --cuda-graph-impl none");
  }
  if (r->cpu_offloading()) {
    r->set_cpu_offloading(false);
    absl::StrAppend(&setting, ", and drop --cpu-offloading");
  }
  return setting;
}

const std::vector<Rung>& Ladder() {
  static const auto* const kLadder = new std::vector<Rung>{
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

std::optional<std::string> DropCpuOffloading(const v1::GpuSpec&, v1::JobSpec* job) {
  if (!job->recompute().cpu_offloading() ||
      (PipelineParallel(*job) == 1 && !HasRecompute(*job) && !HasCudaGraphs(*job))) {
    return std::nullopt;
  }
  job->mutable_recompute()->set_cpu_offloading(false);
  return "drop --cpu-offloading";
}

std::optional<std::string> DropNcclUb(const v1::GpuSpec&, v1::JobSpec* job) {
  if (!job->runtime().use_nccl_ub() || !job->runtime().expandable_segments()) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_use_nccl_ub(false);
  return "drop --use-nccl-ub (or unset expandable_segments)";
}

std::optional<std::string> GraphsForFullRecompute(const v1::GpuSpec&, v1::JobSpec* job) {
  if (job->recompute().granularity() != v1::RECOMPUTE_GRANULARITY_FULL ||
      GraphsAllowFullRecompute(*job)) {
    return std::nullopt;
  }
  job->mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
  job->mutable_runtime()->clear_cuda_graph_modules();
  return "--cuda-graph-impl none (or selective recompute, or --cuda-graph-impl "
         "local "
         "--cuda-graph-scope full_iteration)";
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

const std::vector<Change>& Incompatibilities() {
  static const auto* const kChecks = new std::vector<Change>{
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
  };
  return *kChecks;
}

// --- The check --------------------------------------------------------------

struct Peak {
  uint32_t pp_rank = 0;
  uint64_t bytes = 0;
};

absl::StatusOr<Peak> WorstPeak(const v1::EstimateReport& report) {
  if (report.ranks().empty()) return absl::InternalError("the estimate has no ranks");
  Peak worst{report.ranks(0).pp_rank(), report.ranks(0).peak_device_bytes()};
  for (const v1::RankReport& r : report.ranks()) {
    if (r.peak_device_bytes() > worst.bytes) worst = {r.pp_rank(), r.peak_device_bytes()};
  }
  return worst;
}

// Runs estimates within the deadline.
class BudgetedEstimator {
 public:
  BudgetedEstimator(EstimateFunction estimate, absl::Time deadline)
      : estimate_(estimate), deadline_(deadline) {}

  absl::StatusOr<v1::EstimateReport> Report(const v1::JobSpec& job) {
    if (absl::Now() >= deadline_) {
      return absl::DeadlineExceededError(
          absl::StrCat("deadline passed after ", runs_, " estimates of the admission check"));
    }
    ++runs_;
    return estimate_(job);
  }

  // The worst peak of `job`; nullopt when the estimator refuses it.
  absl::StatusOr<std::optional<Peak>> TryPeak(const v1::JobSpec& job) {
    absl::StatusOr<v1::EstimateReport> report = Report(job);
    if (absl::IsDeadlineExceeded(report.status())) return report.status();
    if (!report.ok()) return std::nullopt;
    absl::StatusOr<Peak> peak = WorstPeak(*report);
    if (!peak.ok()) return peak.status();
    return *peak;
  }

 private:
  EstimateFunction estimate_;
  absl::Time deadline_;
  int runs_ = 0;
};

std::string FormatBytes(double bytes) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (std::abs(bytes) >= 1024 * kGiB) return absl::StrFormat("%.2f TiB", bytes / (1024 * kGiB));
  return absl::StrFormat("%.1f GiB", bytes / kGiB);
}

v1::Recommendation MakeRecommendation(const Change& change, std::string setting, uint64_t before,
                                      uint64_t after, uint64_t usable) {
  v1::Recommendation rec;
  rec.set_kind(change.kind);
  rec.set_id(change.id);
  rec.set_setting(std::move(setting));
  rec.set_reason(change.reason);
  rec.set_saved_bytes(static_cast<int64_t>(before) - static_cast<int64_t>(after));
  rec.set_peak_device_bytes_after(after);
  rec.set_sufficient(after <= usable);
  return rec;
}

// Climbs the ladder from `job` (peak `peak`), appending the steps taken.
// Returns whether the job fits after the environment steps.
absl::StatusOr<bool> ClimbLadder(v1::JobSpec job, uint64_t peak, const v1::GpuSpec& gpu,
                                 uint64_t usable, BudgetedEstimator& estimator,
                                 v1::CheckResponse* out) {
  bool fits_with_settings = peak <= usable;
  for (const Rung& rung : Ladder()) {
    const bool config = rung.front().kind == v1::Recommendation::KIND_CONFIG_CHANGE;
    if (config && peak <= usable) break;
    for (const Change& change : rung) {
      v1::JobSpec candidate = job;
      std::optional<std::string> setting = change.apply(gpu, &candidate);
      if (!setting) continue;
      absl::StatusOr<std::optional<Peak>> after = estimator.TryPeak(candidate);
      if (!after.ok()) return after.status();
      if (!after->has_value() || (*after)->bytes >= peak) continue;
      *out->add_recommendations() =
          MakeRecommendation(change, *std::move(setting), peak, (*after)->bytes, usable);
      job = std::move(candidate);
      peak = (*after)->bytes;
      break;
    }
    if (!config) fits_with_settings = peak <= usable;
  }
  return fits_with_settings;
}

absl::Status AddIncompatibilities(const v1::JobSpec& job, const Peak& base, const v1::GpuSpec& gpu,
                                  uint64_t usable, BudgetedEstimator& estimator,
                                  v1::CheckResponse* out) {
  for (const Change& change : Incompatibilities()) {
    v1::JobSpec fixed = job;
    std::optional<std::string> setting = change.apply(gpu, &fixed);
    if (!setting) continue;
    absl::StatusOr<std::optional<Peak>> after = estimator.TryPeak(fixed);
    if (!after.ok()) return after.status();
    const uint64_t after_bytes = after->has_value() ? (*after)->bytes : base.bytes;
    *out->add_recommendations() =
        MakeRecommendation(change, *std::move(setting), base.bytes, after_bytes, usable);
  }
  return absl::OkStatus();
}

std::string Summary(const v1::CheckResponse& r, const v1::GpuSpec& gpu) {
  const std::string on =
      gpu.name().empty() ? absl::StrCat("a ", FormatBytes(r.capacity_bytes()), " GPU") : gpu.name();
  const std::string where = absl::StrFormat(
      "PP rank %d peaks at %s of %s usable on %s (%s less %g%% kept free)", r.worst_pp_rank(),
      FormatBytes(r.peak_device_bytes()), FormatBytes(r.usable_bytes()), on,
      FormatBytes(r.capacity_bytes()), 100 * r.safety_margin());
  std::vector<const v1::Recommendation*> env, ladder, incompatible;
  for (const v1::Recommendation& rec : r.recommendations()) {
    if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) {
      incompatible.push_back(&rec);
    } else {
      ladder.push_back(&rec);
      if (rec.kind() == v1::Recommendation::KIND_ENVIRONMENT) env.push_back(&rec);
    }
  }
  std::string s;
  switch (r.verdict()) {
    case v1::VERDICT_FITS:
      s = absl::StrCat("Fits: ", where, ", ", FormatBytes(r.headroom_bytes()), " headroom");
      break;
    case v1::VERDICT_FITS_WITH_SETTINGS: {
      std::vector<std::string> settings;
      int64_t saved = 0;
      for (const v1::Recommendation* rec : env) {
        settings.push_back(rec->setting());
        saved += rec->saved_bytes();
      }
      s = absl::StrCat("Fits only with ", absl::StrJoin(settings, " and "), ": ", where,
                       ", and the setting saves ", FormatBytes(saved));
      break;
    }
    default: {
      s = absl::StrCat("Does not fit: ", where, ", ", FormatBytes(-r.headroom_bytes()), " over");
      if (ladder.empty()) {
        absl::StrAppend(&s, "; no recommended change helps: use more GPUs or larger ones");
        break;
      }
      absl::StrAppend(&s, "; first try ", ladder.front()->setting(), " (saves ",
                      FormatBytes(ladder.front()->saved_bytes()), ")");
      const v1::Recommendation* last = ladder.back();
      if (!last->sufficient()) {
        absl::StrAppend(&s, "; even with all ", ladder.size(), " recommended changes it needs ",
                        FormatBytes(last->peak_device_bytes_after()),
                        ": use more GPUs or larger ones");
      } else if (ladder.size() > 1) {
        absl::StrAppend(&s, "; it fits once the recommendations up to ", last->setting(),
                        " are applied");
      }
    }
  }
  if (!incompatible.empty()) {
    absl::StrAppend(&s, "; also, as given it will not start: ", incompatible.front()->reason(),
                    " (fix: ", incompatible.front()->setting(), ")");
  }
  return absl::StrCat(s, ".");
}

}  // namespace

absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options) {
  return CheckJob(job, gpu, options, [](const v1::JobSpec& j) {
    EstimateOptions brief;
    brief.overhead_basis = false;
    return Estimate(j, brief);
  });
}

absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options,
                                           EstimateFunction estimate) {
  const double margin = options.safety_margin;
  if (!(margin >= 0 && margin < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("safety_margin = ", margin, ": must be in [0, 1)"));
  }
  if (gpu.memory_bytes() == 0) {
    return absl::InvalidArgumentError("gpu memory_bytes = 0: must be > 0");
  }
  BudgetedEstimator estimator(estimate, options.deadline);
  absl::StatusOr<v1::EstimateReport> report = estimator.Report(job);
  if (!report.ok()) return report.status();
  absl::StatusOr<Peak> base = WorstPeak(*report);
  if (!base.ok()) return base.status();

  v1::CheckResponse out;
  const auto usable =
      static_cast<uint64_t>(std::floor(static_cast<double>(gpu.memory_bytes()) * (1.0 - margin)));
  out.set_worst_pp_rank(base->pp_rank);
  out.set_peak_device_bytes(base->bytes);
  out.set_capacity_bytes(gpu.memory_bytes());
  out.set_usable_bytes(usable);
  out.set_headroom_bytes(static_cast<int64_t>(usable) - static_cast<int64_t>(base->bytes));
  out.set_safety_margin(margin);
  out.set_gpu_name(gpu.name());

  absl::StatusOr<bool> fits_with_settings =
      ClimbLadder(job, base->bytes, gpu, usable, estimator, &out);
  if (!fits_with_settings.ok()) return fits_with_settings.status();
  if (absl::Status s = AddIncompatibilities(job, *base, gpu, usable, estimator, &out); !s.ok()) {
    return s;
  }
  out.set_verdict(base->bytes <= usable ? v1::VERDICT_FITS
                  : *fits_with_settings ? v1::VERDICT_FITS_WITH_SETTINGS
                                        : v1::VERDICT_DOES_NOT_FIT);
  out.set_summary(Summary(out, gpu));
  *out.mutable_report() = *std::move(report);
  return out;
}

}  // namespace oomguard
