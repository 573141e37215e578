// The admission check of an RL step (see rl_admission.h): the binding
// phase against the usable memory, the verdict's wording, and the ladder of
// changes of the framework's own keys, each re-estimated.
#include "admission/rl_admission.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "admission/check_basis.h"
#include "admission/peak_wording.h"
#include "admission/recommendations.h"
#include "admission/rl_megatron_setting.h"
#include "common/status_macros.h"
#include "estimator/job_defaults.h"
#include "estimator/rl_knobs.h"
#include "estimator/unmodelled_settings.h"

namespace oomguard {
namespace {

// --- Reading the step's report ------------------------------------------------

// Where the step peaks as the policy compares it: the phase (index into
// RlStepReport.phases), its rank (index into the phase's ranks) and both
// peaks of that rank.
struct Binding {
  int phase = 0;
  int rank = 0;
  uint32_t pp_rank = 0;
  uint64_t point = 0, upper = 0;
  uint64_t compared = 0;
};

// The largest compared peak of any phase's rank; ties: the earlier phase,
// the lower rank. InternalError for a report without a phase or rank.
absl::StatusOr<Binding> BindingOf(const v1::RlStepReport& report, const AdmissionOptions& options) {
  std::optional<Binding> best;
  for (int p = 0; p < report.phases_size(); ++p) {
    const v1::RlPhaseReport& phase = report.phases(p);
    for (int r = 0; r < phase.ranks_size(); ++r) {
      const v1::RlPhaseRank& rank = phase.ranks(r);
      const uint64_t compared =
          ComparedBytes(rank.peak_device_bytes(), rank.peak_device_upper_bytes(), options);
      if (!best || compared > best->compared) {
        best = Binding{
            p,       r, rank.pp_rank(), rank.peak_device_bytes(), rank.peak_device_upper_bytes(),
            compared};
      }
    }
  }
  if (!best) return absl::InternalError("the RL step's estimate has no phase with a rank");
  return *best;
}

// The first phase that cannot run (RlPhaseReport.failure), or null.
const v1::RlPhaseReport* FailingPhase(const v1::RlStepReport& report) {
  for (const v1::RlPhaseReport& phase : report.phases()) {
    if (!phase.failure().empty()) return &phase;
  }
  return nullptr;
}

// The largest term of a phase's rank (the first of equals), or null.
const v1::RlTerm* LargestTerm(const v1::RlPhaseRank& rank) {
  const v1::RlTerm* largest = nullptr;
  for (const v1::RlTerm& term : rank.terms()) {
    if (largest == nullptr || term.bytes() > largest->bytes()) largest = &term;
  }
  return largest;
}

// A phase as a verdict names it ("log-prob peaks at ...").
std::string PhaseWords(const std::string& phase) {
  if (phase == "generate") return "generation";
  if (phase == "weight_sync") return "weight sync";
  if (phase == "log_prob") return "log-prob";
  if (phase == "ref_log_prob") return "reference log-prob";
  if (phase == "critic") return "critic";
  if (phase == "actor_update") return "actor update";
  return phase;
}

// --- The changes --------------------------------------------------------------

// The effective token budgets (RlJobSpec's "0 = ..." rules).
uint32_t TrainTokens(const v1::RlJobSpec& job) { return job.actor().training().seq_length(); }
uint32_t LogProbTokens(const v1::RlJobSpec& job) {
  const uint32_t t = job.log_prob().max_tokens_per_microbatch();
  return t > 0 ? t : TrainTokens(job);
}
uint32_t RefLogProbTokens(const v1::RlJobSpec& job) {
  const uint32_t t = job.reference().log_prob().max_tokens_per_microbatch();
  return t > 0 ? t : LogProbTokens(job);
}
// A packed micro-batch must hold one whole sequence: a budget is halved only
// while it stays at least the longest prompt plus response.
std::optional<uint32_t> Halved(uint32_t tokens, const v1::RlJobSpec& job) {
  const uint64_t sequence = uint64_t{job.max_prompt_length()} + job.max_response_length();
  if (tokens / 2 < sequence || tokens / 2 == 0) return std::nullopt;
  return tokens / 2;
}
bool HasReference(const v1::RlJobSpec& job) {
  const v1::ReferencePlacement p = job.reference().placement();
  return p != v1::REFERENCE_PLACEMENT_UNSPECIFIED && p != v1::REFERENCE_PLACEMENT_NONE;
}
bool IsMegatronEngine(const v1::RlJobSpec& job) {
  return job.rollout().engine() == v1::ROLLOUT_ENGINE_MEGATRON;
}

// Log-prob chunking: the logits of this many tokens at a time.
constexpr uint32_t kLogProbChunkTokens = 4096;
// The engine's fraction moves by this much a step, within these bounds.
constexpr double kFractionStep = 0.1;
constexpr double kLowestFraction = 0.1;
constexpr double kHighestFraction = 0.95;
// Megatron's KV buffer when unset (--inference-dynamic-batching-buffer-size-gb
// 40, rl_job.proto).
constexpr uint64_t kDefaultKvBufferBytes = uint64_t{40} << 30;
// The weight-sync bucket is halved down to this.
constexpr uint64_t kSmallestBucketBytes = uint64_t{256} << 20;

// A fraction written with two decimals, as users write them.
double RoundedFraction(double f) { return std::round(f * 100) / 100; }

// One change of one framework key: makes it in the job (false where it does
// not apply); the setting shown is RlKnobSetting of the changed job.
struct RlChange {
  const char* id;
  const char* reason;
  RlKnob knob;
  std::function<bool(v1::RlJobSpec*)> make;
};

// A rung: alternatives in order of preference; the first that applies and
// helps is taken. `when_failing`: only tried while a phase cannot run.
struct RlRung {
  bool when_failing = false;
  std::vector<RlChange> changes;
};

RlChange FractionBy(double delta, const char* id, const char* reason) {
  return {id, reason, RlKnob::kEngineMemoryFraction, [delta](v1::RlJobSpec* job) {
            v1::RolloutEngineSpec* e = job->mutable_rollout();
            if (IsMegatronEngine(*job) || !e->has_memory_fraction()) return false;
            const double f = RoundedFraction(e->memory_fraction() + delta);
            if (f < kLowestFraction - 1e-9 || f > kHighestFraction + 1e-9) return false;
            e->set_memory_fraction(f);
            return true;
          }};
}

RlChange KvBufferTimes(double factor, const char* id, const char* reason) {
  return {id, reason, RlKnob::kEngineKvBuffer, [factor](v1::RlJobSpec* job) {
            if (!IsMegatronEngine(*job)) return false;
            v1::RolloutEngineSpec* e = job->mutable_rollout();
            const uint64_t bytes =
                e->has_kv_buffer_bytes() ? e->kv_buffer_bytes() : kDefaultKvBufferBytes;
            const auto changed = static_cast<uint64_t>(static_cast<double>(bytes) * factor);
            if (changed < (uint64_t{1} << 30)) return false;
            e->set_kv_buffer_bytes(changed);
            return true;
          }};
}

RlChange Offload(RlKnob knob, const char* id, const char* reason,
                 v1::ModelResidency* (*residency)(v1::RlJobSpec*),
                 bool (v1::ModelResidency::*is_set)() const,
                 void (v1::ModelResidency::*set)(bool)) {
  return {id, reason, knob, [=](v1::RlJobSpec* job) {
            v1::ModelResidency* r = residency(job);
            if (r == nullptr || r->release_all() || (r->*is_set)()) return false;
            (r->*set)(true);
            return true;
          }};
}

v1::ModelResidency* ActorResidency(v1::RlJobSpec* job) { return job->mutable_actor_residency(); }
v1::ModelResidency* CriticResidency(v1::RlJobSpec* job) {
  return job->has_critic() ? job->mutable_critic()->mutable_residency() : nullptr;
}

// The ladder, cheapest in throughput first: what lets a failing engine
// start, then the forward-only passes' budgets, the reference's copy, the
// weight-sync bucket, the engine's pool and layout, the offloads, and the
// training budgets last.
const std::vector<RlRung>& RlLadder() {
  static const auto* const kLadder = new std::vector<RlRung>{
      {true,
       {FractionBy(kFractionStep, "engine_memory_fraction_raised",
                   "a larger budget leaves the engine room for its KV cache"),
        FractionBy(2 * kFractionStep, "engine_memory_fraction_raised",
                   "a larger budget leaves the engine room for its KV cache"),
        FractionBy(3 * kFractionStep, "engine_memory_fraction_raised",
                   "a larger budget leaves the engine room for its KV cache"),
        KvBufferTimes(2, "engine_kv_buffer_raised",
                      "a larger KV buffer holds the engine's longest sequence")}},
      {false,
       {{"log_prob_chunking",
         "computing the log-probs' fp32 logits a chunk of tokens at a time bounds them at no "
         "throughput cost",
         RlKnob::kLogProbChunk,
         [](v1::RlJobSpec* job) {
           v1::LogProbSpec* lp = job->mutable_log_prob();
           if (lp->chunk_tokens() > 0 || lp->fused_kernels() ||
               LogProbTokens(*job) <= kLogProbChunkTokens) {
             return false;
           }
           lp->set_chunk_tokens(kLogProbChunkTokens);
           return true;
         }}}},
      {false,
       {{"log_prob_tokens_halved",
         "a smaller forward-only micro-batch holds fewer activations and logits (more "
         "micro-batches, little throughput)",
         RlKnob::kLogProbTokens,
         [](v1::RlJobSpec* job) {
           const std::optional<uint32_t> half = Halved(LogProbTokens(*job), *job);
           if (!half) return false;
           job->mutable_log_prob()->set_max_tokens_per_microbatch(*half);
           return true;
         }}}},
      {false,
       {{"ref_log_prob_tokens_halved",
         "a smaller reference forward micro-batch holds fewer activations and logits",
         RlKnob::kRefLogProbTokens,
         [](v1::RlJobSpec* job) {
           if (!HasReference(*job)) return false;
           const std::optional<uint32_t> half = Halved(RefLogProbTokens(*job), *job);
           if (!half) return false;
           job->mutable_reference()->mutable_log_prob()->set_max_tokens_per_microbatch(*half);
           return true;
         }}}},
      {false,
       {{"ref_param_offload",
         "keeps the reference model's weights in host memory outside its log-prob phase",
         RlKnob::kRefParamOffload,
         [](v1::RlJobSpec* job) {
           if (job->reference().placement() != v1::REFERENCE_PLACEMENT_GPU_COPY) return false;
           job->mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_OFFLOADED_COPY);
           return true;
         }}}},
      {false,
       {{"weight_sync_bucket_halved",
         "a smaller transfer bucket while both weight copies are on the GPU (more transfers)",
         RlKnob::kWeightSyncBucket,
         [](v1::RlJobSpec* job) {
           v1::WeightSyncSpec* w = job->mutable_weight_sync();
           if (!w->has_bucket_bytes() || w->bucket_bytes() / 2 < kSmallestBucketBytes) {
             return false;
           }
           w->set_bucket_bytes(w->bucket_bytes() / 2);
           return true;
         }}}},
      {false,
       {FractionBy(-kFractionStep, "engine_memory_fraction_lowered",
                   "a smaller engine budget leaves more of the GPU to the trainer while it "
                   "generates (a smaller KV pool: fewer sequences decoded at once)"),
        KvBufferTimes(0.5, "engine_kv_buffer_halved",
                      "a smaller KV buffer (fewer sequences decoded at once)")}},
      {false,
       {{"engine_tensor_parallel_raised",
         "splits the engine's weights over more GPUs, leaving more room (more communication "
         "while generating)",
         RlKnob::kEngineTensorParallel,
         [](v1::RlJobSpec* job) {
           v1::RolloutEngineSpec* e = job->mutable_rollout();
           uint32_t tp = e->tensor_parallel();
           if (tp == 0) {
             tp = IsMegatronEngine(*job) ? TensorParallelSize(job->actor().parallelism()) : 1;
           }
           const uint32_t raised = 2 * tp;
           if (raised > GpusPerNode(job->actor().runtime()) ||
               job->actor().parallelism().num_gpus() % raised != 0) {
             return false;
           }
           e->set_tensor_parallel(raised);
           return true;
         }}}},
      {false,
       {Offload(RlKnob::kOptimizerOffload, "optimizer_offload",
                "keeps the actor's optimizer state in host memory outside the actor update",
                ActorResidency, &v1::ModelResidency::optimizer_offload,
                &v1::ModelResidency::set_optimizer_offload)}},
      {false,
       {Offload(RlKnob::kGradOffload, "grad_offload",
                "keeps the actor's gradient buffers in host memory outside the actor update",
                ActorResidency, &v1::ModelResidency::grad_offload,
                &v1::ModelResidency::set_grad_offload)}},
      {false,
       {Offload(RlKnob::kParamOffload, "param_offload",
                "keeps the actor's parameters in host memory outside its own phases",
                ActorResidency, &v1::ModelResidency::param_offload,
                &v1::ModelResidency::set_param_offload)}},
      {false,
       {Offload(RlKnob::kCriticOptimizerOffload, "critic_optimizer_offload",
                "keeps the critic's optimizer state in host memory outside its update",
                CriticResidency, &v1::ModelResidency::optimizer_offload,
                &v1::ModelResidency::set_optimizer_offload)}},
      {false,
       {Offload(RlKnob::kCriticGradOffload, "critic_grad_offload",
                "keeps the critic's gradient buffers in host memory outside its update",
                CriticResidency, &v1::ModelResidency::grad_offload,
                &v1::ModelResidency::set_grad_offload)}},
      {false,
       {Offload(RlKnob::kCriticParamOffload, "critic_param_offload",
                "keeps the critic's parameters in host memory outside its phases", CriticResidency,
                &v1::ModelResidency::param_offload, &v1::ModelResidency::set_param_offload)}},
      {false,
       {{"train_tokens_halved",
         "a smaller training micro-batch holds fewer activations (more micro-batches per "
         "step)",
         RlKnob::kTrainTokens,
         [](v1::RlJobSpec* job) {
           const std::optional<uint32_t> half = Halved(TrainTokens(*job), *job);
           if (!half) return false;
           job->mutable_actor()->mutable_training()->set_seq_length(*half);
           return true;
         }}}},
      {false,
       {{"critic_train_tokens_halved",
         "a smaller critic micro-batch holds fewer activations (more micro-batches per step)",
         RlKnob::kCriticTrainTokens,
         [](v1::RlJobSpec* job) {
           if (!job->has_critic()) return false;
           v1::TrainingSpec* t = job->mutable_critic()->mutable_job()->mutable_training();
           const std::optional<uint32_t> half = Halved(t->seq_length(), *job);
           if (!half) return false;
           t->set_seq_length(*half);
           return true;
         }}}},
  };
  return *kLadder;
}

// --- Expandable segments ------------------------------------------------------

// "MAJOR.MINOR[.PATCH]" before `major`.`minor`; an empty or unreadable
// version is the newest rule (rl_job.proto).
bool VersionBefore(const std::string& version, int major, int minor) {
  const std::vector<std::string> parts = absl::StrSplit(version, '.');
  int have_major = 0, have_minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &have_major) ||
      !absl::SimpleAtoi(parts[1], &have_minor)) {
    return false;
  }
  return have_major < major || (have_major == major && have_minor < minor);
}

// Why the job's expandable segments break its sleeping engine, or nullopt:
// vLLM's sleep-mode pool asserts against them before 0.20 (vLLM PR #14189;
// auto-disabled inside the pool from PR #40812), and torch_memory_saver
// (SGLang's release, slime's trainer pause) fails with them
// (torch_memory_saver #24). RL_MEMORY.md §3.3.
std::optional<std::string> ExpandableSegmentsConflict(const v1::RlJobSpec& job) {
  if (!job.actor().runtime().expandable_segments() || !job.colocated() ||
      job.rollout().sleep() == v1::ROLLOUT_SLEEP_NONE) {
    return std::nullopt;
  }
  if (job.rollout().engine() == v1::ROLLOUT_ENGINE_SGLANG ||
      job.framework() == v1::RL_FRAMEWORK_SLIME) {
    return "torch_memory_saver, which pauses the colocated engine (and slime's trainer), fails "
           "with PyTorch's expandable segments";
  }
  if (job.rollout().engine() == v1::ROLLOUT_ENGINE_VLLM &&
      VersionBefore(job.rollout().version(), 0, 20)) {
    return "vLLM's sleep-mode memory pool refuses PyTorch's expandable segments before vLLM 0.20 "
           "(\"Expandable segments are not compatible with memory pool\")";
  }
  return std::nullopt;
}

constexpr char kUnsetExpandableSegments[] =
    "unset expandable_segments:True in PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF (PyTorch "
    "2.10 reads PYTORCH_ALLOC_CONF first)";

// --- The check ----------------------------------------------------------------

// A job's step as the check compares it.
struct Measured {
  Binding binding;
  std::string phase;    // The binding phase's name.
  std::string failure;  // The first failing phase's failure; empty if none.
};

// Runs the step's estimates within the check's deadline.
class BudgetedStepEstimator {
 public:
  BudgetedStepEstimator(RlEstimateFunction estimate, const RlStepOptions& options,
                        const AdmissionOptions& admission)
      : estimate_(estimate), options_(options), admission_(admission) {}

  absl::StatusOr<v1::RlStepReport> Report(const v1::RlJobSpec& job, const RlStepOptions& options) {
    if (options_.deadline.Passed()) {
      return options_.deadline.Check(
          absl::StrCat("running the RL admission check (after ", runs_, " estimates)"));
    }
    ++runs_;
    return estimate_(job, options);
  }

  // The step of a changed job; nullopt when the estimator refuses it.
  absl::StatusOr<std::optional<Measured>> TryMeasure(const v1::RlJobSpec& job) {
    RlStepOptions brief = options_;
    brief.actor_report = false;
    const absl::StatusOr<v1::RlStepReport> report = Report(job, brief);
    if (absl::IsDeadlineExceeded(report.status()) || absl::IsUnavailable(report.status())) {
      return report.status();
    }
    if (!report.ok()) return std::nullopt;
    return Measure(*report);
  }

  absl::StatusOr<Measured> Measure(const v1::RlStepReport& report) const {
    Measured m;
    OOMGUARD_ASSIGN_OR_RETURN(m.binding, BindingOf(report, admission_));
    m.phase = report.phases(m.binding.phase).phase();
    if (const v1::RlPhaseReport* failing = FailingPhase(report)) m.failure = failing->failure();
    return m;
  }

 private:
  RlEstimateFunction estimate_;
  const RlStepOptions& options_;
  const AdmissionOptions& admission_;
  int runs_ = 0;
};

// Whether the job as it stands fits: every phase runs and the peak fits.
bool Fits(const Measured& now, uint64_t usable) {
  return now.failure.empty() && now.binding.compared <= usable;
}

// Measures `candidate`, `job` with one change (shown as `setting`), and
// takes it (appending its recommendation, moving `job` and `now` to it) when
// it helps: when it lets a phase that could not run run, or lowers the
// compared peak by at least 1 % without stopping a phase that ran (while one
// cannot run, what the others hold may be what keeps it from starting:
// vLLM's free memory at start). A change that saves less costs throughput
// (an engine's TP, an offload) for less than the estimate's own spread.
// Whether it was taken.
absl::StatusOr<bool> TakeIfHelps(v1::RlJobSpec candidate, std::string setting, const char* id,
                                 const char* reason, uint64_t usable,
                                 BudgetedStepEstimator& estimator, v1::RlJobSpec& job,
                                 Measured& now, v1::CheckResponse* out) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<Measured> after, estimator.TryMeasure(candidate));
  if (!after) return false;
  const bool failing = !now.failure.empty();
  const bool lets_run = failing && after->failure.empty();
  const uint64_t least_saving = now.binding.compared / 100;
  const bool lowers = after->binding.compared + least_saving <= now.binding.compared &&
                      after->binding.compared < now.binding.compared &&
                      (failing || after->failure.empty());
  if (!lets_run && !lowers) return false;
  v1::Recommendation rec =
      MeasuredRecommendation(v1::Recommendation::KIND_CONFIG_CHANGE, id, std::move(setting), reason,
                             now.binding.compared, after->binding.compared, usable);
  // Sufficient only when every phase runs, too.
  rec.set_sufficient(rec.sufficient() && after->failure.empty());
  *out->add_recommendations() = std::move(rec);
  job = std::move(candidate);
  now = *after;
  return true;
}

// Climbs the ladder of the framework's RL keys from `job` (measured `now`)
// while it fails or does not fit, appending the steps taken; `job` and
// `now` end as the job with them.
absl::Status ClimbRlLadder(v1::RlJobSpec& job, Measured& now, uint64_t usable,
                           BudgetedStepEstimator& estimator, v1::CheckResponse* out) {
  for (const RlRung& rung : RlLadder()) {
    if (Fits(now, usable)) break;
    if (rung.when_failing && now.failure.empty()) continue;
    for (const RlChange& change : rung.changes) {
      v1::RlJobSpec candidate = job;
      if (!change.make(&candidate)) continue;
      std::string setting = RlKnobSetting(candidate, change.knob);
      if (setting.empty()) continue;  // The framework has no key for it.
      OOMGUARD_ASSIGN_OR_RETURN(const bool taken,
                                TakeIfHelps(std::move(candidate), std::move(setting), change.id,
                                            change.reason, usable, estimator, job, now, out));
      if (taken) break;
    }
  }
  return absl::OkStatus();
}

// The Megatron job a phase trains: the actor's update, the critic's;
// nullopt for the others.
std::optional<RlTrainer> TrainerOf(const std::string& phase) {
  if (phase == "actor_update") return RlTrainer::kActor;
  if (phase == "critic") return RlTrainer::kCritic;
  return std::nullopt;
}
v1::JobSpec* TrainerJob(v1::RlJobSpec* job, RlTrainer trainer) {
  return trainer == RlTrainer::kActor ? job->mutable_actor() : job->mutable_critic()->mutable_job();
}

// Then, while every phase runs but the step does not fit and a training
// phase binds, the Megatron-Core changes of the pretraining ladder
// (RecommendationLadder: its config changes; the environment's are not
// recommended for RL, see rl_admission.h) of the binding phase's trainer,
// each shown in the framework's keys (RlMegatronSetting) and the whole step
// re-estimated.
absl::Status ClimbMegatronLadder(v1::RlJobSpec& job, Measured& now, uint64_t usable,
                                 const v1::GpuSpec& gpu, BudgetedStepEstimator& estimator,
                                 v1::CheckResponse* out) {
  for (const LadderRung& rung : RecommendationLadder()) {
    if (Fits(now, usable) || !now.failure.empty()) break;
    const std::optional<RlTrainer> trainer = TrainerOf(now.phase);
    if (!trainer) break;
    for (const RecommendedChange& change : rung) {
      if (change.kind != v1::Recommendation::KIND_CONFIG_CHANGE) continue;
      v1::RlJobSpec candidate = job;
      v1::JobSpec* trained = TrainerJob(&candidate, *trainer);
      const std::optional<JobChange> made = change.make(gpu, trained);
      if (!made) continue;
      std::optional<std::string> setting =
          RlMegatronSetting(job.framework(), *trainer, *trained, *made);
      if (!setting) continue;  // The framework has no key for it.
      OOMGUARD_ASSIGN_OR_RETURN(const bool taken,
                                TakeIfHelps(std::move(candidate), *std::move(setting), change.id,
                                            change.reason, usable, estimator, job, now, out));
      if (taken) break;
    }
  }
  return absl::OkStatus();
}

// The expandable-segments incompatibility, measured: the job with them unset.
absl::Status AddRlIncompatibilities(const v1::RlJobSpec& job, const Measured& base, uint64_t usable,
                                    BudgetedStepEstimator& estimator, v1::CheckResponse* out) {
  const std::optional<std::string> conflict = ExpandableSegmentsConflict(job);
  if (!conflict) return absl::OkStatus();
  v1::RlJobSpec fixed = job;
  fixed.mutable_actor()->mutable_runtime()->set_expandable_segments(false);
  if (fixed.has_critic()) {
    fixed.mutable_critic()->mutable_job()->mutable_runtime()->set_expandable_segments(false);
  }
  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<Measured> after, estimator.TryMeasure(fixed));
  const uint64_t after_bytes = after ? after->binding.compared : base.binding.compared;
  *out->add_recommendations() = MeasuredRecommendation(
      v1::Recommendation::KIND_INCOMPATIBILITY, "expandable_segments_with_sleep_mode",
      kUnsetExpandableSegments, *conflict, base.binding.compared, after_bytes, usable);
  return absl::OkStatus();
}

// The verb and key(s) that move the binding term: "lower `k`", "set `k`",
// and for a log-prob phase whose logits are not chunked, " or set `chunk`".
std::string KeyAdvice(const v1::RlJobSpec& job, const std::string& phase, const std::string& key) {
  struct KnobVerb {
    RlKnob knob;
    const char* verb;
  };
  static constexpr KnobVerb kVerbs[] = {
      {RlKnob::kTrainTokens, "lower"},
      {RlKnob::kLogProbTokens, "lower"},
      {RlKnob::kLogProbChunk, "set"},
      {RlKnob::kRefLogProbTokens, "lower"},
      {RlKnob::kParamOffload, "set"},
      {RlKnob::kGradOffload, "set"},
      {RlKnob::kOptimizerOffload, "set"},
      {RlKnob::kRefParamOffload, "set"},
      {RlKnob::kCriticParamOffload, "set"},
      {RlKnob::kCriticGradOffload, "set"},
      {RlKnob::kCriticOptimizerOffload, "set"},
      {RlKnob::kCriticTrainTokens, "lower"},
      {RlKnob::kEngineMemoryFraction, "lower"},
      {RlKnob::kEngineKvBuffer, "lower"},
      {RlKnob::kEngineTensorParallel, "raise"},
      {RlKnob::kEngineCudaGraphs, "set"},
      {RlKnob::kEngineSleep, "set"},
      {RlKnob::kWeightSyncBucket, "lower"},
  };
  std::vector<std::string> parts;
  if (!key.empty()) {
    const char* verb = "change";
    for (const KnobVerb& kv : kVerbs) {
      if (RlKnobKey(job.framework(), kv.knob) == key) verb = kv.verb;
    }
    parts.push_back(absl::StrCat(verb, " `", key, "`"));
  }
  if ((phase == "log_prob" || phase == "ref_log_prob") && job.log_prob().chunk_tokens() == 0 &&
      !job.log_prob().fused_kernels()) {
    const std::string_view chunk = RlKnobKey(job.framework(), RlKnob::kLogProbChunk);
    if (!chunk.empty() && chunk != key)
      parts.push_back(absl::StrCat("set `", std::string(chunk), "`"));
  }
  if (parts.empty()) return "";
  return absl::StrCat(": ", parts.front(), parts.size() > 1 ? absl::StrCat(" or ", parts[1]) : "");
}

std::string RlSummary(const v1::RlJobSpec& job, const v1::RlStepReport& step, const Measured& base,
                      const v1::CheckResponse& r, const v1::GpuSpec& gpu,
                      const std::string& qualifier) {
  const v1::RlPhaseReport& phase = step.phases(base.binding.phase);
  const v1::RlPhaseRank& rank = phase.ranks(base.binding.rank);
  const v1::RlTerm* term = LargestTerm(rank);
  std::string where = absl::StrCat(PhaseWords(phase.phase()), " peaks at ", PeakPhrase(r),
                                   " on PP rank ", r.worst_pp_rank());
  if (term != nullptr) {
    absl::StrAppend(&where, " (", term->name(), " ",
                    FormatBytes(static_cast<double>(term->bytes())), ")");
  }
  absl::StrAppend(&where, " of ", UsablePhrase(r, gpu));
  std::vector<const v1::Recommendation*> ladder, incompatible;
  for (const v1::Recommendation& rec : r.recommendations()) {
    (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY ? incompatible : ladder)
        .push_back(&rec);
  }
  std::string s;
  if (const v1::RlPhaseReport* failing = FailingPhase(step)) {
    s = absl::StrCat("Does not fit", qualifier, ": ", PhaseWords(failing->phase()),
                     " cannot run: ", absl::StripSuffix(failing->failure(), "."), "; ", where,
                     LadderAdvice(ladder, r));
  } else if (r.verdict() == v1::VERDICT_FITS) {
    s = absl::StrCat("Fits", qualifier, ": ", where, ", ", FormatBytes(r.headroom_bytes()),
                     " headroom");
  } else {
    s = absl::StrCat("Does not fit", qualifier, ": ", where, ", ", FormatBytes(-r.headroom_bytes()),
                     " over", KeyAdvice(job, phase.phase(), term != nullptr ? term->key() : ""),
                     LadderAdvice(ladder, r));
  }
  if (!incompatible.empty()) {
    absl::StrAppend(&s, "; also, as given it will not start: ", incompatible.front()->reason(),
                    " (fix: ", incompatible.front()->setting(), ")");
  }
  return absl::StrCat(s, ".", WideningSentence(r));
}

// The unmodelled settings of an RL job carried by a JobSpec, for the one
// wording of estimator/unmodelled_settings.h (which reads
// JobSpec.unmodelled_settings).
v1::JobSpec UnmodelledCarrier(const v1::RlJobSpec& job) {
  v1::JobSpec carrier;
  *carrier.mutable_unmodelled_settings() = job.unmodelled_settings();
  return carrier;
}

}  // namespace

v1::RlJobSpec RlJobOnGpu(const v1::RlJobSpec& job, const v1::GpuSpec& gpu) {
  v1::RlJobSpec on_gpu = job;
  *on_gpu.mutable_actor() = JobOnGpu(job.actor(), gpu);
  if (job.has_critic()) {
    *on_gpu.mutable_critic()->mutable_job() = JobOnGpu(job.critic().job(), gpu);
  }
  return on_gpu;
}

absl::StatusOr<v1::CheckResponse> CheckRlJob(const v1::RlJobSpec& job_spec, const v1::GpuSpec& gpu,
                                             const AdmissionOptions& options,
                                             RlEstimateFunction estimate) {
  // The job and every change the ladder tries run on this GPU's
  // architecture.
  const v1::RlJobSpec job = RlJobOnGpu(job_spec, gpu);
  OOMGUARD_RETURN_IF_ERROR(ValidateCheckInputs(gpu, options));
  RlStepOptions step_options;
  step_options.gpu_memory_bytes = gpu.memory_bytes();
  step_options.gpu_name = gpu.name();
  step_options.upper_bound_coverage = options.upper_bound_coverage;
  step_options.actor_report = options.with_report;
  step_options.deadline = options.deadline;
  BudgetedStepEstimator estimator(estimate, step_options, options);

  std::string qualifier;
  if (job.unmodelled_settings_size() > 0) {
    const v1::JobSpec carrier = UnmodelledCarrier(job);
    if (!options.judge_unmodelled) {
      // A job invalid in what oomguard reads is invalid whatever else it
      // sets (as CheckJob).
      if (absl::Status estimated = estimator.Report(job, step_options).status();
          !estimated.ok() && !absl::IsUnimplemented(estimated)) {
        return estimated;
      }
      return NotJudgedUnmodelled(carrier);
    }
    qualifier = absl::StrCat(", judged without modelling ", UnmodelledSettingList(carrier));
  }

  OOMGUARD_ASSIGN_OR_RETURN(v1::RlStepReport step, estimator.Report(job, step_options));
  OOMGUARD_ASSIGN_OR_RETURN(const Measured base, estimator.Measure(step));

  v1::CheckResponse out;
  SetComparedPeak(base.binding.pp_rank, base.binding.point, base.binding.upper, gpu, options, &out);
  const uint64_t usable = out.usable_bytes();
  *out.mutable_unmodelled_settings() = job.unmodelled_settings();
  {
    v1::RlJobSpec climbed = job;
    Measured now = base;
    OOMGUARD_RETURN_IF_ERROR(ClimbRlLadder(climbed, now, usable, estimator, &out));
    OOMGUARD_RETURN_IF_ERROR(ClimbMegatronLadder(climbed, now, usable, gpu, estimator, &out));
  }
  OOMGUARD_RETURN_IF_ERROR(AddRlIncompatibilities(job, base, usable, estimator, &out));
  out.set_verdict(base.failure.empty() && base.binding.compared <= usable
                      ? v1::VERDICT_FITS
                      : v1::VERDICT_DOES_NOT_FIT);
  out.set_summary(RlSummary(job, step, base, out, gpu, qualifier));

  // `report`: the actor update's estimate (without it, only the notes),
  // followed by the step's notes.
  if (options.with_report) *out.mutable_report() = step.actor_update();
  for (const std::string& note : step.notes()) {
    const auto& notes = out.report().notes();
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) {
      out.mutable_report()->add_notes(note);
    }
  }
  if (!options.with_report) step.clear_actor_update();
  *out.mutable_rl_step() = std::move(step);
  return out;
}

v1::GpuSpec AssumedRlGpu(const GpuCatalog& catalog, std::vector<std::string>* notes) {
  absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(kDefaultRlGpu);
  if (!gpu.ok()) {
    gpu = v1::GpuSpec();
    gpu->set_name(kDefaultRlGpu);
    gpu->set_memory_bytes(uint64_t{80} << 30);
  }
  notes->push_back(absl::StrCat("no GPU given: the RL step is estimated on ", kDefaultRlGpu, " (",
                                FormatBytes(static_cast<double>(gpu->memory_bytes())),
                                "); name another GPU or its memory"));
  return *std::move(gpu);
}

absl::StatusOr<v1::CheckResponse> CheckRlJob(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                                             const AdmissionOptions& options) {
  return CheckRlJob(job, gpu, options, [](const v1::RlJobSpec& j, const RlStepOptions& o) {
    return EstimateRlStep(j, o);
  });
}

}  // namespace oomguard
