#include "estimator/rl_step.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "estimator/forward_only_memory.h"
#include "estimator/job_defaults.h"
#include "estimator/overheads.h"
#include "estimator/reported_count.h"
#include "estimator/rl_knobs.h"
#include "estimator/rollout_engine_memory.h"
#include "estimator/unmodelled_settings.h"
#include "estimator/validated_job.h"

namespace oomguard {
namespace {

// One standard deviation of each term's error, as a fraction of it (the
// rule is in rl_step.h).
constexpr double kStateSpread = 0.01;              // Parameters, gradients, optimizer states.
constexpr double kTrainerRuntimeSpread = 0.35;     // CUDA context and NCCL (as overheads.cc).
constexpr double kForwardActivationSpread = 0.25;  // The no-grad working set (a bound).
constexpr double kLogitsSpread = 0.05;             // Logits: exact shapes, allocator rounding.

constexpr absl::string_view kGenerate = "generate";
constexpr absl::string_view kWeightSync = "weight_sync";
constexpr absl::string_view kLogProb = "log_prob";
constexpr absl::string_view kRefLogProb = "ref_log_prob";
constexpr absl::string_view kCritic = "critic";
constexpr absl::string_view kActorUpdate = "actor_update";

std::string GiB(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

absl::Status Bad(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// One term of a phase on one rank, with the standard deviation of its error.
struct Term {
  std::string name;
  uint64_t bytes = 0;
  std::string basis;
  std::string key;
  double sd = 0;
};

// One phase on one rank: its terms and the variance the terms' sd do not
// carry (the Megatron-Core estimates' own, peak_bound.h).
struct RankTerms {
  std::vector<Term> terms;
  double extra_variance = 0;
};

// What a Megatron model keeps on one GPU of pipeline rank r (its estimate's
// RankReport).
struct ModelStates {
  uint64_t params = 0;
  uint64_t grads = 0;  // Main gradients (and TE's dummy weight gradients).
  uint64_t optimizer = 0;
  uint64_t host_optimizer = 0;  // --optimizer-cpu-offload's share.
  uint64_t context = 0;         // cuda_context.
  uint64_t runtime = 0;         // The other overheads outside the allocator, slack left out.
};

ModelStates StatesOf(const v1::RankReport& r) {
  const v1::StaticBytes& s = r.static_();
  ModelStates m;
  m.params = AddCounts(s.dense_param_bytes(), s.expert_param_bytes());
  m.grads =
      AddCounts(AddCounts(s.dense_grad_bytes(), s.expert_grad_bytes()), s.te_dummy_wgrad_bytes());
  m.optimizer = AddCounts(s.dense_optimizer_bytes(), s.expert_optimizer_bytes());
  m.host_optimizer = s.host_optimizer_bytes();
  for (const v1::Overhead& o : r.overheads()) {
    if (o.in_allocated() || o.name() == "allocator_slack") continue;
    if (o.name() == "cuda_context") {
      m.context = AddCounts(m.context, o.bytes());
    } else {
      m.runtime = AddCounts(m.runtime, o.bytes());
    }
  }
  return m;
}

// Which states stay on the GPU outside the phases that use them.
struct Kept {
  bool params, grads, optimizer;
};
Kept KeptOf(const v1::ModelResidency& r) {
  const bool all = r.release_all();
  return {!all && !r.param_offload(), !all && !r.grad_offload(), !all && !r.optimizer_offload()};
}

// Everything the step needs, computed once.
struct Step {
  const v1::RlJobSpec* job = nullptr;
  double z = 0;
  uint64_t gpu = 0;
  ValidatedJob actor;
  v1::EstimateReport actor_report;
  std::vector<ModelStates> actor_states;  // Per PP rank.
  Kept actor_kept{};
  bool has_critic = false;
  v1::EstimateReport critic_report;
  std::vector<ModelStates> critic_states;  // Per critic PP rank.
  Kept critic_kept{};
  v1::ReferencePlacement reference = v1::REFERENCE_PLACEMENT_NONE;
  EngineMemory engine;
  bool engine_keeps_weights = false;  // Asleep, it keeps its weights (no sleep).
  ForwardOnlyPass log_prob, ref_log_prob;
  std::vector<std::string> notes;

  std::string Key(RlKnob knob) const {
    const std::string_view key = RlKnobKey(job->framework(), knob);
    return std::string(key);
  }
  // The critic's rank sharing the GPUs of actor rank r: the same rank when
  // both pipelines have the same depth, else the critic's largest.
  int CriticRank(int64_t r, bool by_peak) const {
    const int n = critic_report.ranks_size();
    if (n == actor_report.ranks_size()) return static_cast<int>(r);
    int best = 0;
    for (int i = 1; i < n; ++i) {
      const auto& a = critic_report.ranks(i);
      const auto& b = critic_report.ranks(best);
      if (by_peak ? a.peak_device_bytes() > b.peak_device_bytes()
                  : a.static_bytes() > b.static_bytes()) {
        best = i;
      }
    }
    return best;
  }
};

// A term whose error has one standard deviation of `sd_bytes`.
void AddWithSd(RankTerms& t, std::string name, uint64_t bytes, std::string basis, std::string key,
               double sd_bytes) {
  if (bytes == 0) return;
  t.terms.push_back({std::move(name), bytes, std::move(basis), std::move(key), sd_bytes});
}

// A term whose error has one standard deviation of `sd_fraction` of it.
void Add(RankTerms& t, std::string name, uint64_t bytes, std::string basis, std::string key,
         double sd_fraction) {
  AddWithSd(t, std::move(name), bytes, std::move(basis), std::move(key),
            sd_fraction * static_cast<double>(bytes));
}

// The actor's states its residency keeps on the GPU (`params_loaded`: its
// parameters are on the GPU whatever the residency).
void AddActorStates(const Step& s, int64_t r, bool params_loaded, RankTerms& t) {
  const ModelStates& m = s.actor_states[r];
  const std::string basis_tail = " (the actor's Megatron-Core estimate, static bytes of PP rank ";
  if (s.actor_kept.params || params_loaded) {
    Add(t, "actor parameters", m.params,
        absl::StrCat("bf16 weights", basis_tail, r, ")",
                     params_loaded && !s.actor_kept.params ? "; loaded for this phase" : ""),
        s.Key(RlKnob::kParamOffload), kStateSpread);
  }
  if (s.actor_kept.grads) {
    Add(t, "actor gradients", m.grads, absl::StrCat("main gradient buffers", basis_tail, r, ")"),
        s.Key(RlKnob::kGradOffload), kStateSpread);
  }
  if (s.actor_kept.optimizer) {
    Add(t, "actor optimizer states", m.optimizer,
        absl::StrCat("master weights and moments", basis_tail, r, ")"),
        s.Key(RlKnob::kOptimizerOffload), kStateSpread);
  }
}

// The reference's GPU copy, where it stays on the GPU all along.
void AddReferenceCopy(const Step& s, int64_t r, RankTerms& t) {
  if (s.reference != v1::REFERENCE_PLACEMENT_GPU_COPY) return;
  Add(t, "reference weights (GPU copy)", s.actor_states[r].params,
      "a second bf16 copy of the actor's weights at its layout (veRL's ref module without "
      "ref.megatron.param_offload, verl/workers/megatron_workers.py)",
      s.Key(RlKnob::kRefParamOffload), kStateSpread);
}

// The critic's states its residency keeps on the GPU.
void AddCriticResident(const Step& s, int64_t r, RankTerms& t) {
  if (!s.has_critic) return;
  const int c = s.CriticRank(r, false);
  const ModelStates& m = s.critic_states[c];
  const std::string basis = absl::StrCat(" (the critic's Megatron-Core estimate, PP rank ", c, ")");
  if (s.critic_kept.params) {
    Add(t, "critic parameters", m.params, absl::StrCat("bf16 weights", basis),
        s.Key(RlKnob::kCriticParamOffload), kStateSpread);
  }
  if (s.critic_kept.grads) {
    Add(t, "critic gradients", m.grads, absl::StrCat("main gradient buffers", basis),
        s.Key(RlKnob::kCriticGradOffload), kStateSpread);
  }
  if (s.critic_kept.optimizer) {
    Add(t, "critic optimizer states", m.optimizer,
        absl::StrCat("master weights and moments", basis), s.Key(RlKnob::kCriticOptimizerOffload),
        kStateSpread);
  }
}

void AddEngineAsleep(const Step& s, RankTerms& t, bool weights_too) {
  const uint64_t weights = s.engine_keeps_weights && !weights_too ? s.engine.weight_bytes : 0;
  const uint64_t bytes = s.engine.asleep_bytes > weights ? s.engine.asleep_bytes - weights : 0;
  AddWithSd(t, weights_too ? "engine asleep" : "engine asleep (other than its weights)", bytes,
            s.engine.asleep_basis, s.Key(RlKnob::kEngineSleep),
            static_cast<double>(s.engine.asleep_sd_bytes));
}

// The CUDA context and the trainer's NCCL buffers (outside PyTorch's
// allocator), `context` too unless another estimate counts it.
void AddTrainerRuntime(const Step& s, int64_t r, bool context, RankTerms& t) {
  const ModelStates& m = s.actor_states[r];
  const uint64_t bytes = AddCounts(context ? m.context : 0, m.runtime);
  Add(t, context ? "CUDA context and NCCL buffers" : "actor NCCL buffers", bytes,
      absl::StrCat("outside PyTorch's allocator: the actor estimate's overheads with "
                   "in_allocated false (estimator/overheads.cc), allocator slack left out",
                   context ? "" : ", the CUDA context counted in the critic's"),
      "", kTrainerRuntimeSpread);
}

// The forward-only pass's terms, and the allocator's slack for them.
void AddForwardPass(const Step& s, int64_t r, const ForwardOnlyPass& pass, RlKnob tokens_knob,
                    RankTerms& t) {
  const ForwardOnlyMemory fwd = ForwardOnlyPassMemory(s.actor, r, pass);
  const std::string chunk_key = s.Key(RlKnob::kLogProbChunk);
  for (const ForwardOnlyTerm& term : fwd.terms) {
    const bool logits = term.kind == ForwardOnlyTermKind::kLogits;
    // The logits move with the chunk where the framework has one and no
    // chunk is set yet; everything else with the micro-batch's tokens.
    const std::string key =
        logits && pass.chunk_tokens == 0 && !chunk_key.empty() ? chunk_key : s.Key(tokens_knob);
    Add(t, term.name, RoundedCount(term.bytes), term.basis, key,
        logits ? kLogitsSpread : kForwardActivationSpread);
  }
  const AllocatorSlack slack = AllocatorSlackOf(s.actor, fwd.Bytes());
  Add(t, "allocator slack", RoundedCount(slack.bytes), slack.basis, "", slack.sd_fraction);
}

// The engine's parts while it generates; their error is the engine's
// generate_sd_bytes (its terms move its KV pool the other way inside its
// budget, rollout_engine_memory.h), carried by the phase.
void AddEngineGenerating(const Step& s, RankTerms& t) {
  const EngineMemory& e = s.engine;
  const bool megatron = s.job->rollout().engine() == v1::ROLLOUT_ENGINE_MEGATRON;
  Add(t, "engine weights", e.weight_bytes, e.weight_basis, s.Key(RlKnob::kEngineTensorParallel), 0);
  Add(t, "engine KV pool", e.kv_pool_bytes, e.kv_basis,
      s.Key(megatron ? RlKnob::kEngineKvBuffer : RlKnob::kEngineMemoryFraction), 0);
  Add(t, "engine activations", e.activation_bytes, e.activation_basis, "", 0);
  Add(t, "engine CUDA graphs", e.cuda_graph_bytes, e.cuda_graph_basis,
      s.Key(RlKnob::kEngineCudaGraphs), 0);
  Add(t, "engine runtime", e.runtime_bytes, e.runtime_basis, "", 0);
  const double sd = static_cast<double>(e.generate_sd_bytes);
  t.extra_variance += sd * sd;
}

uint64_t SumOf(const RankTerms& t) {
  uint64_t sum = 0;
  for (const Term& term : t.terms) sum = AddCounts(sum, term.bytes);
  return sum;
}

// The phases' terms on rank r.
RankTerms Generate(const Step& s, int64_t r) {
  RankTerms t;
  AddActorStates(s, r, false, t);
  AddReferenceCopy(s, r, t);
  AddCriticResident(s, r, t);
  AddTrainerRuntime(s, r, true, t);
  AddEngineGenerating(s, t);
  return t;
}

RankTerms WeightSync(const Step& s, int64_t r) {
  RankTerms t;
  // veRL's rollout_mode loads offloaded parameters before the push
  // (verl/workers/megatron_workers.py), KV cache not resumed yet.
  AddActorStates(s, r, true, t);
  AddReferenceCopy(s, r, t);
  AddCriticResident(s, r, t);
  AddTrainerRuntime(s, r, true, t);
  Add(t, "engine weights", s.engine.weight_bytes, s.engine.weight_basis,
      s.Key(RlKnob::kEngineTensorParallel), 0);
  AddEngineAsleep(s, t, false);
  const v1::WeightSyncSpec& sync = s.job->weight_sync();
  if (s.engine.shares_trainer_weights) {
    // Megatron's engine runs on the trainer's own weights: nothing moves.
  } else if (sync.has_bucket_bytes()) {
    Add(t, "weight-sync bucket", sync.bucket_bytes(),
        absl::StrCat("the transfer bucket, weight_sync.bucket_bytes ", sync.bucket_bytes(),
                     " (veRL checkpoint_engine.update_weights_bucket_megabytes, a torch.empty "
                     "bucket, verl/workers/rollout/vllm_rollout/vllm_rollout.py; NeMo-RL "
                     "refit_buffer_size_gb)"),
        s.Key(RlKnob::kWeightSyncBucket), 0);
  } else if (sync.has_free_fraction()) {
    const uint64_t used = SumOf(t);
    const uint64_t free = s.gpu > used ? s.gpu - used : 0;
    Add(t, "weight-sync bucket", RoundedCount(sync.free_fraction() * static_cast<double>(free)),
        absl::StrCat("weight_sync.free_fraction ", sync.free_fraction(), " x the ", GiB(free),
                     " free then (NeMo-RL NRL_REFIT_BUFFER_MEMORY_RATIO, "
                     "nemo_rl/algorithms/grpo.py refit)"),
        s.Key(RlKnob::kWeightSyncBucket), 0);
  }
  return t;
}

RankTerms LogProb(const Step& s, int64_t r) {
  RankTerms t;
  AddActorStates(s, r, true, t);
  AddReferenceCopy(s, r, t);
  AddCriticResident(s, r, t);
  AddTrainerRuntime(s, r, true, t);
  AddEngineAsleep(s, t, true);
  AddForwardPass(s, r, s.log_prob, RlKnob::kLogProbTokens, t);
  return t;
}

RankTerms RefLogProb(const Step& s, int64_t r) {
  RankTerms t;
  if (s.reference == v1::REFERENCE_PLACEMENT_SWAPPED_IN) {
    // The reference's weights in the policy's own module: no second copy.
    Add(t, "reference weights (swapped into the actor's module)", s.actor_states[r].params,
        "the reference's state swapped in from host memory (slime --ref-load, "
        "slime/backends/megatron_utils/actor.py; NeMo-RL megatron_policy_worker.py)",
        "", kStateSpread);
    AddActorStates(s, r, false, t);
    // The actor's own parameters are the swapped-out ones.
    t.terms.erase(std::remove_if(t.terms.begin(), t.terms.end(),
                                 [](const Term& x) { return x.name == "actor parameters"; }),
                  t.terms.end());
  } else {
    AddActorStates(s, r, false, t);
    if (s.reference == v1::REFERENCE_PLACEMENT_GPU_COPY) {
      AddReferenceCopy(s, r, t);
    } else {
      Add(t, "reference weights (loaded)", s.actor_states[r].params,
          "the reference's bf16 copy loaded from the host for its pass (veRL "
          "ref.megatron.param_offload)",
          s.Key(RlKnob::kRefParamOffload), kStateSpread);
    }
  }
  AddCriticResident(s, r, t);
  AddTrainerRuntime(s, r, true, t);
  AddEngineAsleep(s, t, true);
  AddForwardPass(s, r, s.ref_log_prob, RlKnob::kRefLogProbTokens, t);
  return t;
}

RankTerms Critic(const Step& s, int64_t r) {
  RankTerms t;
  const int c = s.CriticRank(r, true);
  const v1::RankReport& cr = s.critic_report.ranks(c);
  Add(t, "critic update (Megatron-Core estimate)", cr.peak_device_bytes(),
      absl::StrCat("the critic's training peak on its PP rank ", c,
                   " with a hidden x 1 value head (model.value_head): states, activations, "
                   "overheads, its CUDA context and NCCL buffers"),
      s.Key(RlKnob::kCriticTrainTokens), 0);
  const double sd = static_cast<double>(cr.peak_device_upper_bytes() - cr.peak_device_bytes()) /
                    std::max(s.z, 1e-9);
  t.extra_variance += sd * sd;
  AddActorStates(s, r, false, t);
  AddReferenceCopy(s, r, t);
  AddTrainerRuntime(s, r, false, t);
  AddEngineAsleep(s, t, true);
  return t;
}

RankTerms ActorUpdate(const Step& s, int64_t r) {
  RankTerms t;
  const v1::RankReport& a = s.actor_report.ranks(r);
  const ModelStates& m = s.actor_states[r];
  const std::string basis = absl::StrCat("the actor's Megatron-Core estimate, PP rank ", r);
  Add(t, "actor parameters", m.params, absl::StrCat(basis, ": bf16 weights"), "", 0);
  Add(t, "actor gradients", m.grads, absl::StrCat(basis, ": main gradient buffers"), "", 0);
  Add(t, "actor optimizer states", m.optimizer, absl::StrCat(basis, ": master weights and moments"),
      "", 0);
  const uint64_t work =
      std::max(AddCounts(a.activation_bytes(), a.transient_bytes()),
               AddCounts(a.optimizer_step_bytes(), a.optimizer_step_temporary_bytes()));
  Add(t, "actor activations and backward", work,
      absl::StrCat(basis, ": ", a.activation_bytes(),
                   " B held activations of the micro-batches in "
                   "flight + ",
                   a.transient_bytes(),
                   " B backward working set (or the optimizer step's copies, if larger)"),
      s.Key(RlKnob::kTrainTokens), 0);
  uint64_t in_allocated = 0;
  for (const v1::Overhead& o : a.overheads()) {
    if (o.in_allocated()) in_allocated = AddCounts(in_allocated, o.bytes());
  }
  Add(t, "actor overheads in the allocator", in_allocated,
      absl::StrCat(basis,
                   ": workspaces, buffers, routing imbalance (its overheads with "
                   "in_allocated true)"),
      "", 0);
  // The rest of the rank's peak: its overheads outside the allocator.
  uint64_t counted = 0;
  for (const Term& term : t.terms) counted = AddCounts(counted, term.bytes);
  Add(t, "CUDA context, NCCL buffers and allocator slack",
      a.peak_device_bytes() > counted ? a.peak_device_bytes() - counted : 0,
      absl::StrCat(basis, ": its overheads with in_allocated false"), "", 0);
  const double sd = static_cast<double>(a.peak_device_upper_bytes() - a.peak_device_bytes()) /
                    std::max(s.z, 1e-9);
  t.extra_variance += sd * sd;
  AddEngineAsleep(s, t, true);
  AddReferenceCopy(s, r, t);
  AddCriticResident(s, r, t);
  return t;
}

// The phase report from its ranks' terms.
v1::RlPhaseReport PhaseOf(const Step& s, absl::string_view name,
                          RankTerms (*terms_of)(const Step&, int64_t)) {
  v1::RlPhaseReport phase;
  phase.set_phase(std::string(name));
  for (int64_t r = 0; r < s.actor.parallelism.pp; ++r) {
    const RankTerms t = terms_of(s, r);
    v1::RlPhaseRank* rank = phase.add_ranks();
    rank->set_pp_rank(static_cast<uint32_t>(r));
    double variance = t.extra_variance;
    for (const Term& term : t.terms) {
      v1::RlTerm* out = rank->add_terms();
      out->set_name(term.name);
      out->set_bytes(term.bytes);
      out->set_basis(term.basis);
      out->set_key(term.key);
      variance += term.sd * term.sd;
    }
    rank->set_peak_device_bytes(SumOf(t));
    rank->set_peak_device_upper_bytes(UpperBound(rank->peak_device_bytes(), variance, s.z));
    if (r == 0 || rank->peak_device_bytes() > phase.peak_device_bytes()) {
      phase.set_worst_rank(static_cast<uint32_t>(r));
      phase.set_peak_device_bytes(rank->peak_device_bytes());
    }
    phase.set_peak_device_upper_bytes(
        std::max(phase.peak_device_upper_bytes(), rank->peak_device_upper_bytes()));
  }
  const v1::RlPhaseRank& worst = phase.ranks(static_cast<int>(phase.worst_rank()));
  const v1::RlTerm* largest = nullptr;
  for (const v1::RlTerm& term : worst.terms()) {
    if (largest == nullptr || term.bytes() > largest->bytes()) largest = &term;
  }
  if (largest != nullptr) {
    phase.set_largest_term(largest->name());
    phase.set_key(largest->key());
  }
  return phase;
}

// `pass` with the unset (zero, false) fields of `own` taken from `base`,
// except the entropy, which is `own`'s: no framework computes the
// reference's entropy.
ForwardOnlyPass PassOf(const v1::LogProbSpec& own, const v1::LogProbSpec& base,
                       int64_t train_tokens) {
  ForwardOnlyPass p;
  const uint32_t tokens = own.max_tokens_per_microbatch() > 0 ? own.max_tokens_per_microbatch()
                                                              : base.max_tokens_per_microbatch();
  p.tokens = tokens > 0 ? tokens : train_tokens;
  p.chunk_tokens = own.chunk_tokens() > 0 ? own.chunk_tokens() : base.chunk_tokens();
  p.entropy = own.entropy();
  p.defer_fp32_logits = own.defer_fp32_logits() || base.defer_fp32_logits();
  p.fused_kernels = own.fused_kernels() || base.fused_kernels();
  return p;
}

absl::Status ValidateLogProb(const v1::LogProbSpec& spec, absl::string_view path) {
  if (spec.max_tokens_per_microbatch() > kMaxSeq) {
    return Bad(absl::StrCat(path, ".max_tokens_per_microbatch"),
               absl::StrCat(spec.max_tokens_per_microbatch(), " is more than ", kMaxSeq,
                            " tokens (0 = the training budget)"));
  }
  if (spec.chunk_tokens() > kMaxSeq) {
    return Bad(
        absl::StrCat(path, ".chunk_tokens"),
        absl::StrCat(spec.chunk_tokens(), " is more than ", kMaxSeq, " tokens (0 = no chunking)"));
  }
  return absl::OkStatus();
}

// Everything of `job` the estimator reads besides the actor's and critic's
// JobSpecs (ValidateJob checks those).
absl::Status ValidateRlJob(const v1::RlJobSpec& job, const RlStepOptions& options) {
  if (options.gpu_memory_bytes == 0 || options.gpu_memory_bytes > kMaxReportedCount) {
    return Bad("gpu_memory_bytes",
               absl::StrCat(options.gpu_memory_bytes, ": required, > 0 and at most 2^50"));
  }
  OOMGUARD_RETURN_IF_ERROR(
      ValidateUpperBoundCoverage(options.upper_bound_coverage, "upper_bound_coverage"));
  if (job.max_prompt_length() == 0) return Bad("max_prompt_length", "required, > 0");
  if (job.max_response_length() == 0) return Bad("max_response_length", "required, > 0");
  if (job.max_prompt_length() > kMaxSeq || job.max_response_length() > kMaxSeq ||
      job.max_prompt_length() + job.max_response_length() > kMaxSeq) {
    return Bad("max_response_length",
               absl::StrCat("prompt ", job.max_prompt_length(), " + response ",
                            job.max_response_length(), " tokens is more than ", kMaxSeq));
  }
  const v1::RolloutEngineSpec& rollout = job.rollout();
  if (rollout.has_memory_fraction() &&
      !(rollout.memory_fraction() > 0 && rollout.memory_fraction() <= 1)) {
    return Bad("rollout.memory_fraction",
               absl::StrCat(rollout.memory_fraction(), ": must be in (0, 1]"));
  }
  if (rollout.has_kv_buffer_bytes() && rollout.kv_buffer_bytes() > kMaxReportedCount) {
    return Bad("rollout.kv_buffer_bytes",
               absl::StrCat(rollout.kv_buffer_bytes(), ": at most 2^50"));
  }
  OOMGUARD_RETURN_IF_ERROR(ValidateLogProb(job.log_prob(), "log_prob"));
  OOMGUARD_RETURN_IF_ERROR(ValidateLogProb(job.reference().log_prob(), "reference.log_prob"));
  if (!v1::ReferencePlacement_IsValid(job.reference().placement())) {
    return Bad("reference.placement", absl::StrCat(job.reference().placement(), ": unknown"));
  }
  const v1::WeightSyncSpec& sync = job.weight_sync();
  if (sync.has_bucket_bytes() && sync.bucket_bytes() > kMaxReportedCount) {
    return Bad("weight_sync.bucket_bytes", absl::StrCat(sync.bucket_bytes(), ": at most 2^50"));
  }
  if (sync.has_free_fraction() && !(sync.free_fraction() > 0 && sync.free_fraction() <= 1)) {
    return Bad("weight_sync.free_fraction",
               absl::StrCat(sync.free_fraction(), ": must be in (0, 1]"));
  }
  if (job.train_microbatches() > kMaxBatch) {
    return Bad("train_microbatches", absl::StrCat(job.train_microbatches(), " is absurdly large"));
  }
  if (job.has_critic() && job.critic().forward_tokens_per_microbatch() > kMaxSeq) {
    return Bad("critic.forward_tokens_per_microbatch",
               absl::StrCat(job.critic().forward_tokens_per_microbatch(), " is more than ", kMaxSeq,
                            " tokens"));
  }
  return absl::OkStatus();
}

// A Megatron model's JobSpec with its global batch set so that the pipeline
// holds `microbatches` per optimizer step (0 = full), validated, its error
// prefixed with `path`.
absl::StatusOr<v1::JobSpec> WithMicrobatches(const v1::JobSpec& spec, uint32_t microbatches,
                                             absl::string_view path) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(spec, nullptr);
  if (!j.ok()) return Prefixed(j.status(), path);
  const Parallelism& par = j->parallelism;
  // A pipeline is full with 2 x PP x VPP micro-batches (more than any
  // schedule's warm-up, pipeline_schedule.h); without one, one.
  const int64_t m = microbatches > 0 ? microbatches : (par.pp > 1 ? 2 * par.pp * par.vpp : 1);
  v1::JobSpec out = spec;
  out.mutable_training()->set_global_batch_size(
      static_cast<uint32_t>(std::min<int64_t>(m * j->training.micro_batch * par.dp, kMaxBatch)));
  return out;
}

}  // namespace

absl::StatusOr<v1::RlStepReport> EstimateRlStep(const v1::RlJobSpec& job,
                                                const RlStepOptions& options) {
  OOMGUARD_RETURN_IF_ERROR(ValidateRlJob(job, options));
  Step s;
  s.job = &job;
  s.gpu = options.gpu_memory_bytes;
  s.z = CoverageQuantile(options.upper_bound_coverage);

  // What the estimate leaves out comes first: the job's own list, then the
  // actor's Megatron settings not already in it.
  for (const v1::UnmodelledSetting& u : job.unmodelled_settings()) {
    s.notes.push_back(UnmodelledSettingNote(u));
  }
  for (const v1::UnmodelledSetting& u : job.actor().unmodelled_settings()) {
    const std::string note = UnmodelledSettingNote(u);
    if (std::find(s.notes.begin(), s.notes.end(), note) == s.notes.end()) s.notes.push_back(note);
  }

  // The actor, its pipeline as full as train_microbatches says.
  OOMGUARD_ASSIGN_OR_RETURN(const v1::JobSpec actor,
                            WithMicrobatches(job.actor(), job.train_microbatches(), "actor."));
  {
    absl::StatusOr<ValidatedJob> j = ValidateJob(actor, nullptr);
    if (!j.ok()) return Prefixed(j.status(), "actor.");
    s.actor = *std::move(j);
  }
  EstimateOptions estimate_options{.module_tree = false,
                                   .overhead_basis = options.actor_report,
                                   .deadline = options.deadline,
                                   .upper_bound_coverage = options.upper_bound_coverage};
  {
    absl::StatusOr<v1::EstimateReport> report = Estimate(actor, estimate_options);
    if (!report.ok()) return Prefixed(report.status(), "actor.");
    s.actor_report = *std::move(report);
  }
  for (const v1::RankReport& r : s.actor_report.ranks()) s.actor_states.push_back(StatesOf(r));
  s.actor_kept = KeptOf(job.actor_residency());

  // The critic with its value head (its ModelSpec is the base model's).
  s.has_critic = job.has_critic();
  if (s.has_critic) {
    v1::JobSpec critic = job.critic().job();
    critic.mutable_model()->set_value_head(true);
    critic.mutable_model()->set_untie_embeddings_and_output_weights(true);
    OOMGUARD_ASSIGN_OR_RETURN(critic,
                              WithMicrobatches(critic, job.train_microbatches(), "critic.job."));
    estimate_options.overhead_basis = false;
    absl::StatusOr<v1::EstimateReport> report = Estimate(critic, estimate_options);
    if (!report.ok()) return Prefixed(report.status(), "critic.job.");
    s.critic_report = *std::move(report);
    for (const v1::RankReport& r : s.critic_report.ranks()) s.critic_states.push_back(StatesOf(r));
    s.critic_kept = KeptOf(job.critic().residency());
    if (s.critic_report.ranks_size() != s.actor_report.ranks_size()) {
      s.notes.push_back(absl::StrCat(
          "the critic's pipeline (", s.critic_report.ranks_size(),
          " stages) differs from the actor's (", s.actor_report.ranks_size(),
          "): every actor rank is taken to share its GPUs with the critic's largest rank"));
    }
  }
  s.reference = job.reference().placement() == v1::REFERENCE_PLACEMENT_UNSPECIFIED
                    ? v1::REFERENCE_PLACEMENT_NONE
                    : job.reference().placement();

  // The forward-only passes.
  const int64_t train_tokens = s.actor.training.seq;
  s.log_prob = PassOf(job.log_prob(), job.log_prob(), train_tokens);
  s.log_prob.entropy = job.log_prob().entropy();
  s.ref_log_prob = PassOf(job.reference().log_prob(), job.log_prob(), train_tokens);
  // veRL takes the log-probs with Megatron's in-place cross entropy on the
  // logits (verl/utils/megatron/tensor_parallel.py
  // vocab_parallel_log_probs_from_logits); slime clones them, NeMo-RL's
  // log-softmax is out of place; Megatron-LM's RL loop is taken to copy.
  const bool in_place = job.framework() == v1::RL_FRAMEWORK_VERL;
  s.log_prob.in_place_log_softmax = in_place;
  s.ref_log_prob.in_place_log_softmax = in_place;

  // The engine, beside what the trainer, reference and critic keep while it
  // generates (the most any rank keeps: its pool is sized on every GPU).
  uint64_t others = 0;
  for (int64_t r = 0; r < s.actor.parallelism.pp; ++r) {
    RankTerms t;
    AddActorStates(s, r, false, t);
    AddReferenceCopy(s, r, t);
    AddCriticResident(s, r, t);
    AddTrainerRuntime(s, r, true, t);
    others = std::max(others, SumOf(t));
  }
  OOMGUARD_ASSIGN_OR_RETURN(s.engine, EstimateEngineMemory(job, s.gpu, others));
  // Asleep, the engine keeps its weights without sleep, and Megatron's keeps
  // a separate inference model's whatever its KV mode (rollout_engine_memory.h).
  s.engine_keeps_weights = s.engine.sleep == v1::ROLLOUT_SLEEP_NONE ||
                           job.rollout().engine() == v1::ROLLOUT_ENGINE_MEGATRON;

  v1::RlStepReport report;
  report.set_framework(job.framework());
  report.set_gpu_memory_bytes(s.gpu);
  report.set_gpu_name(options.gpu_name);
  report.set_upper_bound_coverage(options.upper_bound_coverage);
  report.set_engine_kv_pool_bytes(s.engine.kv_pool_bytes);
  report.set_engine_kv_tokens(s.engine.kv_tokens);

  *report.add_phases() = PhaseOf(s, kGenerate, Generate);
  report.mutable_phases(0)->set_failure(s.engine.failure);
  *report.add_phases() = PhaseOf(s, kWeightSync, WeightSync);
  *report.add_phases() = PhaseOf(s, kLogProb, LogProb);
  if (s.reference != v1::REFERENCE_PLACEMENT_NONE) {
    *report.add_phases() = PhaseOf(s, kRefLogProb, RefLogProb);
  }
  if (s.has_critic) *report.add_phases() = PhaseOf(s, kCritic, Critic);
  *report.add_phases() = PhaseOf(s, kActorUpdate, ActorUpdate);

  // The binding phase: the largest upper bound, the earlier on a tie.
  const v1::RlPhaseReport* binding = &report.phases(0);
  for (const v1::RlPhaseReport& p : report.phases()) {
    if (p.peak_device_upper_bytes() > binding->peak_device_upper_bytes()) binding = &p;
  }
  report.set_binding_phase(binding->phase());
  report.set_worst_rank(binding->worst_rank());
  report.set_peak_device_bytes(binding->peak_device_bytes());
  report.set_peak_device_upper_bytes(binding->peak_device_upper_bytes());

  // Host memory per node: what the offloads and the sleeping engine move
  // there, on the rank that needs the most, times the GPUs of a node.
  const int64_t gpus_per_node =
      std::min<int64_t>(GpusPerNode(job.actor().runtime()), s.actor.parallelism.world);
  RankTerms host;
  for (int64_t r = 0; r < s.actor.parallelism.pp; ++r) {
    RankTerms t;
    const ModelStates& a = s.actor_states[r];
    const auto add = [&t, gpus_per_node](std::string name, uint64_t per_gpu, std::string basis,
                                         std::string key) {
      Add(t, std::move(name), RoundedCount(static_cast<double>(per_gpu) * gpus_per_node),
          absl::StrCat(basis, ": ", per_gpu, " B per GPU x ", gpus_per_node, " GPUs per node"),
          std::move(key), 0);
    };
    if (!s.actor_kept.params) {
      add("actor parameters offloaded", a.params, "the actor's weights",
          s.Key(RlKnob::kParamOffload));
    }
    if (!s.actor_kept.grads) {
      add("actor gradients offloaded", a.grads, "the actor's main gradients",
          s.Key(RlKnob::kGradOffload));
    }
    if (!s.actor_kept.optimizer) {
      add("actor optimizer states offloaded", a.optimizer, "the actor's master weights and moments",
          s.Key(RlKnob::kOptimizerOffload));
    }
    add("actor optimizer CPU offload", a.host_optimizer,
        "--optimizer-cpu-offload's share of the optimizer (the actor's estimate)", "");
    if (s.has_critic) {
      const ModelStates& c = s.critic_states[s.CriticRank(r, false)];
      if (!s.critic_kept.params) {
        add("critic parameters offloaded", c.params, "the critic's weights",
            s.Key(RlKnob::kCriticParamOffload));
      }
      if (!s.critic_kept.grads) {
        add("critic gradients offloaded", c.grads, "the critic's main gradients",
            s.Key(RlKnob::kCriticGradOffload));
      }
      if (!s.critic_kept.optimizer) {
        add("critic optimizer states offloaded", c.optimizer,
            "the critic's master weights and moments", s.Key(RlKnob::kCriticOptimizerOffload));
      }
      add("critic optimizer CPU offload", c.host_optimizer,
          "--optimizer-cpu-offload's share of the critic's optimizer", "");
    }
    add("engine weights asleep", s.engine.host_bytes,
        "the engine's weights moved to the host by its sleep (vLLM sleep level 1)",
        s.Key(RlKnob::kEngineSleep));
    if (s.reference == v1::REFERENCE_PLACEMENT_OFFLOADED_COPY ||
        s.reference == v1::REFERENCE_PLACEMENT_SWAPPED_IN) {
      add("reference weights on the host", a.params,
          "the reference's bf16 copy kept in host memory", s.Key(RlKnob::kRefParamOffload));
    }
    if (r == 0 || SumOf(t) > SumOf(host)) host = std::move(t);
  }
  report.set_host_bytes_per_node(SumOf(host));
  for (const Term& term : host.terms) {
    v1::RlTerm* out = report.add_host_terms();
    out->set_name(term.name);
    out->set_bytes(term.bytes);
    out->set_basis(term.basis);
    out->set_key(term.key);
  }

  // Assumptions.
  if (!job.colocated()) {
    s.notes.push_back(
        "colocated is false: trainer and engine on separate GPUs is not modelled; estimated as "
        "if they shared them (more than the trainer's GPUs hold)");
  }
  if (!s.engine.shares_trainer_weights && !job.weight_sync().has_bucket_bytes() &&
      !job.weight_sync().has_free_fraction()) {
    s.notes.push_back(
        "weight_sync sets neither bucket_bytes nor free_fraction: no transfer "
        "bucket counted in the weight sync");
  }
  if (s.actor.model.mtp_layers > 0) {
    s.notes.push_back("the log-prob passes are taken not to run the MTP layers");
  }
  s.notes.push_back(
      "forward-only passes: a decoder layer's live intermediates bounded by what its training "
      "forward saves at the pass's tokens; on the last stage the logits (fp32 unless deferred) "
      "and the log-softmax's fp32 copies");
  s.notes.push_back(absl::StrCat(
      "actor update: training micro-batches per optimizer step per pipeline: ",
      s.actor_report.num_microbatches(),
      job.train_microbatches() > 0 ? " (train_microbatches)" : " (as many as the pipeline holds)"));
  for (std::string& n : s.notes) report.add_notes(std::move(n));
  if (options.actor_report) *report.mutable_actor_update() = std::move(s.actor_report);
  return report;
}

}  // namespace oomguard
