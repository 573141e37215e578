// The planner's search (see planner.h).
#include "planner/planner.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "admission/gpu_catalog.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "estimator/expert_parallel_overlap.h"
#include "estimator/shared_expert_overlap.h"
#include "estimator/tp_comm_overlap.h"
#include "estimator/unmodelled_settings.h"
#include "estimator/validated_job.h"
#include "jobspec/megatron_args_writer.h"
#include "planner/candidate.h"
#include "planner/search_space.h"
#include "planner/step_time.h"

namespace oomguard {
namespace {

constexpr uint32_t kDefaultSeqLength = 4096;
constexpr uint32_t kDefaultGlobalBatch = 1024;

// The fastest setting of one layout and micro-batch size that fits.
struct Found {
  size_t layout = 0;
  int64_t micro_batch = 0;
  size_t setting = 0;
  bool ep_overlap = false;  // --overlap-moe-expert-parallel-comm added.
  double tokens_per_gpu_per_second = 0;
};

// A layout and micro-batch size to search, with the tokens/GPU/s of its
// fastest setting (Search::FastestTokens).
struct Pending {
  size_t layout = 0;
  int64_t micro_batch = 0;
  double tokens = 0;
};

// One setting of a layout in the order tried: its step time, its index and
// whether the EP overlap is added. Ties go to the earlier setting, then to
// the one without the overlap (less memory).
struct Tried {
  double seconds = 0;
  size_t setting = 0;
  bool ep_overlap = false;
  bool operator<(const Tried& o) const {
    if (seconds != o.seconds) return seconds < o.seconds;
    if (setting != o.setting) return setting < o.setting;
    return ep_overlap < o.ep_overlap;
  }
};

struct Counts {
  uint64_t considered = 0, estimated = 0, fitting = 0, pruned = 0;
};

// A communication overlap the job sets, which the search keeps in every
// setting: whether Megatron accepted it in some setting tried, and why it
// refused it in the first one it refused it in.
struct GivenOverlap {
  const char* field;  // JobSpec path of the switch.
  bool given = false;
  bool accepted = false;
  std::optional<std::string> first_refusal = std::nullopt;

  // Whether a setting `v` Megatron `accepts` it with (or not) may run; the
  // first refusal's sentence comes from `why` (built once, not per setting).
  bool Admits(bool accepts, const ValidatedJob& v,
              std::optional<std::string> (*why)(const ValidatedJob&)) {
    if (accepts) {
      accepted = true;
      return true;
    }
    if (!first_refusal) first_refusal = why(v);
    return false;
  }
};

// InvalidArgument for a communication overlap `j` sets (a setting of the
// job's) that Megatron-Core refuses whatever the plan chooses.
absl::Status CheckJobOverlaps(const ValidatedJob& j) {
  // "<field> = true: Megatron-Core refuses <its flag> for this job<whatever> (<why>); drop it".
  const auto refused = [](const char* field, absl::string_view whatever, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = true: Megatron-Core refuses ",
                                                   SwitchFlagFor(field), " for this job", whatever,
                                                   " (", why, "); drop it"));
  };
  if (j.parallelism.overlap_moe_ep) {
    if (std::optional<std::string> why = ExpertParallelOverlapJobConflict(j)) {
      return refused("parallelism.overlap_moe_expert_parallel_comm", " whatever its parallel sizes",
                     *why);
    }
  }
  if (std::optional<std::string> why = SharedExpertOverlapConflict(j)) {
    return refused("parallelism.moe_shared_expert_overlap", "", *why);
  }
  return absl::OkStatus();
}

class Search {
 public:
  Search(const v1::JobSpec& base, const PlanCluster& cluster, const PlanOptions& options,
         uint64_t usable)
      : base_(base), cluster_(cluster), options_(options), usable_(usable) {
    ep_overlap_.given = base.parallelism().overlap_moe_expert_parallel_comm();
    tp_overlap_.given = base.parallelism().tp_comm_overlap();
  }

  // Searches with `bounds`; appends what fits to `found_`.
  absl::Status Run(const SearchBounds& bounds) {
    layouts_ = EnumerateLayouts(base_, bounds);
    settings_ = EnumerateSettings(base_, bounds);
    const std::vector<int64_t> micro_batches = MicroBatchSizes(base_, bounds.sizes.micro_batch);
    const uint64_t space =
        static_cast<uint64_t>(layouts_.size()) * micro_batches.size() * settings_.size();
    if (space > kMaxPlanSettings) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "plan: the search has ", space, " settings (", layouts_.size(), " layouts x ",
          micro_batches.size(), " micro-batch sizes x ", settings_.size(),
          " recompute/offload settings), over the bound of ", kMaxPlanSettings,
          "; fix a parallel size (e.g. --tensor-model-parallel-size) to narrow it"));
    }
    counts_.considered += space;
    found_.clear();
    best_ = {};
    v1::JobSpec job;
    std::vector<Tried> order;
    const bool overlap_given = ep_overlap_.given;
    std::vector<std::optional<ValidatedJob>> validated(settings_.size());
    const size_t most_saving = settings_.size() - 1;
    const int64_t global_batch = base_.training().global_batch_size();
    // Tokens per GPU in one step: over a step time, tokens/GPU/s.
    const double tokens_per_gpu = static_cast<double>(global_batch) *
                                  static_cast<double>(base_.training().seq_length()) /
                                  static_cast<double>(base_.parallelism().num_gpus());
    // Best first: every layout and micro-batch size by the speed of its
    // fastest setting (FastestTokens), so the best `limit` are found first
    // and the rest is cut short without a memory estimate.
    std::vector<Pending> pending;
    // Per layout, its smallest micro-batch size the global batch takes.
    std::vector<int64_t> smallest(layouts_.size(), 0);
    for (size_t li = 0; li < layouts_.size(); ++li) {
      if (options_.deadline.Passed()) {
        return options_.deadline.Check(
            absl::StrCat("planning (after ", li, " of ", layouts_.size(), " layouts)"));
      }
      const Layout& l = layouts_[li];
      const int64_t dp =
          static_cast<int64_t>(base_.parallelism().num_gpus()) / (l.tp * l.cp * l.pp);
      for (const int64_t mb : micro_batches) {
        if (global_batch % (mb * dp) != 0) continue;
        if (smallest[li] == 0) smallest[li] = mb;
        pending.push_back(Pending{li, mb, FastestTokens(l, mb, tokens_per_gpu, job)});
      }
    }
    std::stable_sort(pending.begin(), pending.end(),
                     [](const Pending& a, const Pending& b) { return a.tokens > b.tokens; });
    // Per layout, the smallest micro-batch size whose most memory-saving
    // setting does not fit: no larger one fits either.
    std::vector<int64_t> too_large(layouts_.size(), std::numeric_limits<int64_t>::max());
    std::vector<bool> smallest_checked(layouts_.size(), false);
    for (size_t pi = 0; pi < pending.size(); ++pi) {
      if (options_.deadline.Passed()) {
        return options_.deadline.Check(absl::StrCat("planning (after ", pi, " of ", pending.size(),
                                                    " layouts and micro-batch sizes)"));
      }
      const size_t li = pending[pi].layout;
      const int64_t mb = pending[pi].micro_batch;
      const Layout& l = layouts_[li];
      // Branch and bound: once `limit` candidates are found, a layout no
      // faster than the slowest of them cannot enter them, nor can any
      // after it.
      if (best_.size() >= options_.limit && pending[pi].tokens <= best_.top()) {
        counts_.pruned += pending.size() - pi;
        break;
      }
      if (mb > smallest[li] && !smallest_checked[li]) {
        // The layout's smallest micro-batch size first (memory grows with
        // it): if its most memory-saving setting does not fit, none does.
        smallest_checked[li] = true;
        ApplyCandidate(base_, l, smallest[li], settings_[most_saving], &job);
        const absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
        if (v.ok()) {
          ++counts_.estimated;
          if (!Fits(*v)) too_large[li] = smallest[li];
        }
      }
      if (mb >= too_large[li]) continue;
      {
        // The most memory-saving setting first: if it does not fit, no
        // setting does, nor any larger micro-batch.
        ApplyCandidate(base_, l, mb, settings_[most_saving], &job);
        absl::StatusOr<ValidatedJob> saving = ValidateJob(job, nullptr);
        if (!saving.ok()) {
          if (!first_refusal_) first_refusal_ = std::string(saving.status().message());
          continue;
        }
        if (!job_overlaps_checked_) {
          OOMGUARD_RETURN_IF_ERROR(CheckJobOverlaps(*saving));
          job_overlaps_checked_ = true;
        }
        ++counts_.estimated;
        const bool saving_fits = Fits(*saving);
        if (!saving_fits) {
          too_large[li] = mb;
          continue;
        }
        // The others by predicted speed; the first that fits is kept. Where
        // Megatron-Core accepts it, each setting is tried with the EP
        // overlap added too (its memory: pipeline_schedule.h).
        order.clear();
        for (size_t si = 0; si < settings_.size(); ++si) {
          validated[si].reset();
          if (si == most_saving) {
            validated[si] = *std::move(saving);
          } else {
            ApplyCandidate(base_, l, mb, settings_[si], &job);
            absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
            if (!v.ok()) continue;
            validated[si] = *std::move(v);
          }
          ValidatedJob& v = *validated[si];
          const bool overlap_possible = ExpertParallelOverlapAccepted(v);
          // The job's own overlaps, where Megatron refuses them: the
          // setting cannot run.
          if (overlap_given &&
              !ep_overlap_.Admits(overlap_possible, v, ExpertParallelOverlapConflict)) {
            continue;
          }
          if (tp_overlap_.given &&
              !tp_overlap_.Admits(TpCommOverlapAccepted(v), v, TpCommOverlapConflict)) {
            continue;
          }
          const StepTime t = EstimateStepTime(v, cluster_.speed);
          order.push_back(Tried{t.seconds, si, false});
          if (!overlap_given && overlap_possible && options_.allow_expert_parallel_overlap) {
            order.push_back(
                Tried{t.seconds - t.expert_parallel + t.expert_parallel_overlapped, si, true});
          }
        }
        std::sort(order.begin(), order.end());
        for (const Tried& t : order) {
          // Branch and bound: once `limit` candidates are found, a setting
          // no faster than the slowest of the best `limit` cannot be
          // returned (on a tie the one found first ranks first), nor can
          // any slower one of this layout.
          const double tokens = tokens_per_gpu / t.seconds;
          if (best_.size() >= options_.limit && tokens <= best_.top()) {
            ++counts_.pruned;
            break;
          }
          ValidatedJob& v = *validated[t.setting];
          if (t.setting != most_saving || t.ep_overlap) {
            ++counts_.estimated;
            v.parallelism.overlap_moe_ep = overlap_given || t.ep_overlap;
            const bool fits = Fits(v);
            v.parallelism.overlap_moe_ep = overlap_given;
            if (!fits) continue;
          }
          ++counts_.fitting;
          found_.push_back(Found{li, mb, t.setting, t.ep_overlap, tokens});
          best_.push(tokens);
          if (best_.size() > options_.limit) best_.pop();
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  // The tokens/GPU/s of the fastest setting of layout `l` at micro-batch
  // `mb`: its first (no recompute beyond the job's, no offload), with the
  // EP overlap where it may be added. Recompute and offload only add time in
  // the step-time model (recompute beside an overlapped transfer hides at
  // most what it adds). Infinite when Megatron-Core refuses the first
  // setting: the search tries the others and says why.
  double FastestTokens(const Layout& l, int64_t mb, double tokens_per_gpu, v1::JobSpec& job) const {
    ApplyCandidate(base_, l, mb, settings_.front(), &job);
    const absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
    if (!v.ok()) return std::numeric_limits<double>::infinity();
    const StepTime t = EstimateStepTime(*v, cluster_.speed);
    double seconds = t.seconds;
    if (!ep_overlap_.given && options_.allow_expert_parallel_overlap &&
        ExpertParallelOverlapAccepted(*v)) {
      seconds = std::min(seconds, t.seconds - t.expert_parallel + t.expert_parallel_overlapped);
    }
    return tokens_per_gpu / seconds;
  }

  // The best `limit` of what was found, described.
  std::vector<v1::PlanCandidate> Best(uint32_t limit) {
    std::stable_sort(found_.begin(), found_.end(), [](const Found& a, const Found& b) {
      return a.tokens_per_gpu_per_second > b.tokens_per_gpu_per_second;
    });
    std::vector<v1::PlanCandidate> out;
    v1::JobSpec job;
    for (size_t i = 0; i < found_.size() && out.size() < limit; ++i) {
      const Found& f = found_[i];
      ApplyCandidate(base_, layouts_[f.layout], f.micro_batch, settings_[f.setting], &job);
      if (f.ep_overlap) job.mutable_parallelism()->set_overlap_moe_expert_parallel_comm(true);
      const absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
      if (!v.ok()) continue;  // Validated in the search: cannot happen.
      out.push_back(DescribeCandidate(job, *v, EstimateStepTime(*v, cluster_.speed),
                                      EstimatePeaks(*v, options_.upper_bound_coverage), usable_,
                                      options_.compare_upper_bound));
    }
    for (v1::PlanCandidate& c : out) {
      SetReasons(out.front().tokens_per_gpu_per_second(), &c);
    }
    return out;
  }

  bool empty() const { return found_.empty(); }
  const Counts& counts() const { return counts_; }
  // Why Megatron-Core refuses the first layout and micro-batch it refused
  // (whatever the recompute setting), or nullopt.
  const std::optional<std::string>& first_refusal() const { return first_refusal_; }

  // The job's own overlap Megatron refused in every setting tried (those
  // whose most memory-saving recompute fits), or null.
  const GivenOverlap* OverlapRefusedEverywhere() const {
    for (const GivenOverlap* g : {&ep_overlap_, &tp_overlap_}) {
      if (g->given && !g->accepted && g->first_refusal) return g;
    }
    return nullptr;
  }

 private:
  // Whether the worst rank's peak the options compare fits the usable memory.
  bool Fits(const ValidatedJob& j) const {
    return FitsWithin(j, options_.upper_bound_coverage, options_.compare_upper_bound, usable_);
  }

  const v1::JobSpec& base_;
  const PlanCluster& cluster_;
  const PlanOptions& options_;
  const uint64_t usable_;
  std::vector<Layout> layouts_;
  std::vector<Setting> settings_;
  std::vector<Found> found_;
  // The tokens/GPU/s of the best `limit` found so far, slowest on top.
  std::priority_queue<double, std::vector<double>, std::greater<double>> best_;
  Counts counts_;
  std::optional<std::string> first_refusal_;
  bool job_overlaps_checked_ = false;
  GivenOverlap ep_overlap_{"parallelism.overlap_moe_expert_parallel_comm"};
  GivenOverlap tp_overlap_{"parallelism.tp_comm_overlap"};
};

// The size of `range` the job fixes: nullopt when it does not, 0 when it
// fixes it in a way a range cannot be checked against (the virtual stages
// through --num-layers-per-virtual-pipeline-stage or a layout).
std::optional<int64_t> FixedSize(const v1::JobSpec& j, SizeRange SizeRanges::*range) {
  const v1::ParallelismSpec& p = j.parallelism();
  const auto given = [](bool has, uint32_t value) {
    return has ? std::optional<int64_t>(value) : std::nullopt;
  };
  if (range == &SizeRanges::tp) {
    return given(p.has_tensor_model_parallel_size(), p.tensor_model_parallel_size());
  }
  if (range == &SizeRanges::pp) {
    return given(p.has_pipeline_model_parallel_size(), p.pipeline_model_parallel_size());
  }
  if (range == &SizeRanges::cp) {
    return given(p.has_context_parallel_size(), p.context_parallel_size());
  }
  if (range == &SizeRanges::ep) {
    return given(p.has_expert_model_parallel_size(), p.expert_model_parallel_size());
  }
  if (range == &SizeRanges::etp) {
    return given(p.has_expert_tensor_parallel_size(), p.expert_tensor_parallel_size());
  }
  if (range == &SizeRanges::micro_batch) {
    return given(j.training().micro_batch_size() > 0, j.training().micro_batch_size());
  }
  if (p.has_num_virtual_stages_per_pipeline_rank()) {
    return p.num_virtual_stages_per_pipeline_rank();
  }
  const bool by_layers =
      p.has_num_layers_per_virtual_pipeline_stage() || !p.pipeline_model_parallel_layout().empty();
  return by_layers ? std::optional<int64_t>(0) : std::nullopt;
}

// "[2, 8]", "[2, any]".
std::string RangeText(const SizeRange& r) {
  const bool open = r.max == std::numeric_limits<int64_t>::max();
  return absl::StrCat("[", r.min, ", ", open ? "any" : absl::StrCat(r.max), "]");
}

// Each range is valid, and holds the size the job fixes.
absl::Status CheckSizeRanges(const SizeRanges& sizes, const v1::JobSpec& job) {
  for (const SizeRangeName& f : kSizeRangeNames) {
    const SizeRange& range = sizes.*f.range;
    const std::string field = absl::StrCat("constraints.", f.field);
    OOMGUARD_RETURN_IF_ERROR(ValidateSizeRange(range, field));
    if (!range.Bounded()) continue;
    const bool expert = f.range == &SizeRanges::ep || f.range == &SizeRanges::etp;
    if (expert && job.model().num_experts() == 0 && !range.Contains(1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " = ", RangeText(range), ": the model has no experts (its EP and ETP are 1)"));
    }
    const std::optional<int64_t> fixed = FixedSize(job, f.range);
    if (!fixed) continue;
    if (*fixed == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " = ", RangeText(range),
          ": the job fixes its virtual pipeline stages with --num-layers-per-virtual-pipeline-"
          "stage or --pipeline-model-parallel-layout; give --num-virtual-stages-per-pipeline-rank "
          "or drop the range"));
    }
    if (!range.Contains(*fixed)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " = ", RangeText(range), ": the job fixes ", f.label, " ", *fixed, " outside it"));
    }
  }
  return absl::OkStatus();
}

// "; bounded: TP [2, 8], PP [1, 4]" for the bounded sizes, or "".
std::string BoundsText(const SizeRanges& sizes) {
  std::string out;
  for (const SizeRangeName& f : kSizeRangeNames) {
    const SizeRange& range = sizes.*f.range;
    if (!range.Bounded()) continue;
    absl::StrAppend(&out, out.empty() ? "; bounded: " : ", ", f.label, " ", RangeText(range));
  }
  return out;
}

absl::Status CheckOptions(const PlanCluster& cluster, const PlanOptions& options) {
  OOMGUARD_RETURN_IF_ERROR(
      ValidateMemoryMargin(options.memory_margin, "constraints.memory_margin"));
  OOMGUARD_RETURN_IF_ERROR(
      ValidateUpperBoundCoverage(options.upper_bound_coverage, "constraints.upper_bound_coverage"));
  OOMGUARD_RETURN_IF_ERROR(ValidatePlanLimit(options.limit, "limit"));
  if (cluster.gpu.memory_bytes() == 0) {
    return absl::InvalidArgumentError("gpu.memory_bytes = 0: must be positive");
  }
  if (cluster.gpus_per_node < 1 || cluster.gpus_per_node > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_node = ", cluster.gpus_per_node, ": must be in [1, 1024]"));
  }
  return absl::OkStatus();
}

// The job with the shape defaults the plan assumes.
v1::JobSpec WithShape(const v1::JobSpec& job, const PlanCluster& cluster,
                      std::vector<std::string>* notes) {
  v1::JobSpec base = JobOnGpu(job, cluster.gpu);
  if (base.training().seq_length() == 0) {
    base.mutable_training()->set_seq_length(kDefaultSeqLength);
    notes->push_back(absl::StrCat("no --seq-length: ", kDefaultSeqLength, " assumed"));
  }
  if (!base.training().has_global_batch_size()) {
    base.mutable_training()->set_global_batch_size(kDefaultGlobalBatch);
    notes->push_back(absl::StrCat("no --global-batch-size: ", kDefaultGlobalBatch, " assumed"));
  }
  base.mutable_runtime()->set_gpus_per_node(cluster.gpus_per_node);
  return base;
}

uint64_t Usable(const PlanCluster& cluster, double margin) {
  return static_cast<uint64_t>(static_cast<double>(cluster.gpu.memory_bytes()) * (1 - margin));
}

}  // namespace

absl::Status ValidateMemoryMargin(double margin, absl::string_view field) {
  if (margin >= 0 && margin < 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", margin, ": must be in [0, 1)"));
}

absl::Status ValidateSizeRange(const SizeRange& range, absl::string_view field) {
  if (range.min < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".min = ", range.min, ": must be at least 1"));
  }
  if (range.max < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".max = ", range.max, ": must be at least 1"));
  }
  if (range.min > range.max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": min ", range.min, " > max ", range.max));
  }
  return absl::OkStatus();
}

absl::Status ValidatePlanLimit(uint32_t limit, absl::string_view field) {
  if (limit >= 1 && limit <= kMaxPlanLimit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", limit, ": must be in [1, ", kMaxPlanLimit, "]"));
}

absl::StatusOr<PlanResult> Plan(const v1::JobSpec& job, const PlanCluster& cluster,
                                const PlanOptions& options) {
  OOMGUARD_RETURN_IF_ERROR(CheckOptions(cluster, options));
  // Every candidate is planned without the settings oomguard does not model.
  std::vector<std::string> notes = UnmodelledSettingNotes(job);
  const v1::JobSpec base = WithShape(job, cluster, &notes);
  // The job as given must be a valid model and shape (its own layout aside).
  if (base.parallelism().num_gpus() == 0) {
    return absl::InvalidArgumentError("parallelism.num_gpus = 0: must be at least 1");
  }
  if (base.model().num_layers() == 0) {
    return absl::InvalidArgumentError(
        "model.num_layers = 0: the plan needs a model (--preset, --hf-config or --num-layers)");
  }
  OOMGUARD_RETURN_IF_ERROR(CheckSizeRanges(options.sizes, base));
  const uint64_t usable = Usable(cluster, options.memory_margin);
  SearchBounds bounds;
  bounds.sizes = options.sizes;
  bounds.gpus_per_node = cluster.gpus_per_node;
  bounds.allow_recompute = options.allow_recompute;
  bounds.allow_offload = options.allow_offload;
  bounds.cross_node_expert_parallel = options.allow_cross_node_expert_parallel;
  Search search(base, cluster, options, usable);
  OOMGUARD_RETURN_IF_ERROR(search.Run(bounds));
  const std::vector<Setting> settings = EnumerateSettings(base, bounds);
  const auto recomputes = std::count_if(settings.begin(), settings.end(),
                                        [](const Setting& s) { return !s.optimizer_offload; });
  std::string space = absl::StrFormat(
      "TP powers of 2 up to %u (the NVLink domain), CP while >= %d tokens per rank, PP dividing "
      "the GPUs (even, embedding/loss-counted and uneven first/last splits%s), VPP up to %d, EP x "
      "ETP %s, micro-batch 1-8, %d recompute settings, optimizer offload %s%s; at most %d "
      "settings",
      cluster.gpus_per_node, kMinCpTokens,
      base.model().mtp_num_layers() > 0 ? ", layouts counting embedding, MTP and loss as layers"
                                        : "",
      kMaxVpp,
      bounds.cross_node_expert_parallel
          ? "within and across NVLink domains (across them on the network)"
          : "within the NVLink domain (crossing it forbidden)",
      recomputes, bounds.allow_offload ? "off/on" : "off",
      base.model().num_experts() == 0 ? ""
      : base.parallelism().overlap_moe_expert_parallel_comm()
          ? ", the job's EP all-to-all overlap where Megatron-Core accepts it"
      : options.allow_expert_parallel_overlap
          ? ", the EP all-to-all overlap where Megatron-Core accepts it"
          : ", no EP all-to-all overlap added",
      kMaxPlanSettings);
  absl::StrAppend(&space, BoundsText(options.sizes));
  if (base.parallelism().tp_comm_overlap()) {
    absl::StrAppend(&space,
                    "; TP > 1 with sequence parallelism only (the job's --tp-comm-overlap)");
  }
  if (search.empty() && base.model().num_experts() > 0 && !bounds.cross_node_expert_parallel) {
    notes.push_back(
        "nothing fits with the expert-parallel group inside one NVLink domain, and the request "
        "forbids crossing it (allow_cross_node_expert_parallel = false)");
  }
  if (const GivenOverlap* refused = search.OverlapRefusedEverywhere();
      refused != nullptr && search.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(refused->field, " = true: Megatron refuses ", SwitchFlagFor(refused->field),
                     " in every setting the plan may choose that could fit (the first: ",
                     *refused->first_refusal, "); drop it or relax the sizes fixed"));
  }
  PlanResult result;
  result.candidates = search.Best(options.limit);
  v1::PlanSummary& s = result.summary;
  s.set_candidates_considered(search.counts().considered);
  s.set_candidates_estimated(search.counts().estimated);
  s.set_candidates_fitting(search.counts().fitting);
  s.set_candidates_pruned(search.counts().pruned);
  s.set_search_space(space);
  s.set_usable_bytes(usable);
  if (result.candidates.empty() && search.counts().estimated == 0 && search.first_refusal()) {
    // Not a question of memory: more GPUs would not help.
    notes.push_back(absl::StrCat(
        "Megatron-Core refuses every configuration the plan tried, whatever its memory (the "
        "first: ",
        *search.first_refusal(), "): change the job's settings or the sizes fixed"));
  } else if (result.candidates.empty()) {
    notes.push_back("no configuration fits: use more GPUs or GPUs with more memory");
  }
  for (std::string& n : notes) s.add_notes(std::move(n));
  return result;
}

absl::StatusOr<StepTime> EstimateJobStepTime(const v1::JobSpec& job, const PlanCluster& cluster) {
  OOMGUARD_ASSIGN_OR_RETURN(const ValidatedJob j, ValidateJob(job, nullptr));
  return EstimateStepTime(j, cluster.speed);
}

}  // namespace oomguard
