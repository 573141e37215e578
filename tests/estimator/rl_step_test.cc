// The colocated RL step's phases (estimator/rl_step.h), term by term,
// against values derived here by hand: a tiny dense model on one GPU
// (every phase, the residencies, the reference placements, the critic with
// its value head, the weight-sync bucket, host bytes, binding phase,
// validation) and Qwen3-30B-A3B at seed 000's story (32 x 80 GB, prompt +
// response 10k tokens, actor TP2 EP8, vLLM TP2 at 0.5).
//
// The engine's numbers are the engine model's (rollout_engine_memory.h,
// tested with it): these tests read them from EstimateEngineMemory and
// check how the step places them. The actor's and critic's Megatron-Core
// estimates are the estimator's (tested in estimator_test.cc and beside
// it): these tests check which of their parts each phase holds.
//
// Tiny model, derived by hand: 2 layers, h 1024, ffn 4096 (GELU), 8 heads,
// RMSNorm, no biases, RoPE, vocabulary 32000 (a multiple of 128), untied.
//   per layer: QKV 1024 x 3072 = 3,145,728 + proj 1,048,576 + fc1 4,194,304
//              + fc2 4,194,304 + two norms 2,048 = 12,584,960
//   N = 2 x 12,584,960 + embedding 32,768,000 + output 32,768,000
//       + final norm 1,024 = 90,706,944 parameters
//   bf16 weights 2 N = 181,413,888 B; fp32 main gradients 4 N =
//   362,827,776 B (+ Transformer Engine's dummy weight gradients, the
//   estimator's te_weight_gradients); Adam 12 N = 1,088,483,328 B.
#include "estimator/rl_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimator.h"
#include "estimator/rl_knobs.h"
#include "estimator/rollout_engine_memory.h"
#include "jobspec/presets.h"
#include "oomguard/v1/rl_job.pb.h"
#include "oomguard/v1/rl_report.pb.h"

namespace oomguard {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t k80GB = 80 * kGiB;
constexpr uint64_t kTinyParams = 90706944;
constexpr uint64_t kTinyWeights = 2 * kTinyParams;     // 181,413,888
constexpr uint64_t kTinyOptimizer = 12 * kTinyParams;  // 1,088,483,328

v1::JobSpec TinyActor() {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(2);
  m->set_hidden_size(1024);
  m->set_ffn_hidden_size(4096);
  m->set_num_attention_heads(8);
  m->set_vocab_size(32000);
  m->set_normalization(v1::NORMALIZATION_RMS_NORM);
  m->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  m->set_add_bias_linear(false);
  m->set_untie_embeddings_and_output_weights(true);
  m->set_hidden_dropout(0);
  m->set_attention_dropout(0);
  job.mutable_parallelism()->set_num_gpus(1);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(4096);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  return job;
}

v1::RlJobSpec TinyJob() {
  v1::RlJobSpec job;
  job.set_framework(v1::RL_FRAMEWORK_VERL);
  *job.mutable_actor() = TinyActor();
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_VLLM);
  job.mutable_rollout()->set_memory_fraction(0.5);
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_2);
  job.mutable_weight_sync()->set_bucket_bytes(2048ull << 20);
  job.set_max_prompt_length(1024);
  job.set_max_response_length(3072);
  job.set_colocated(true);
  return job;
}

RlStepOptions Options() {
  RlStepOptions o;
  o.gpu_memory_bytes = k80GB;
  o.gpu_name = "H100";
  return o;
}

v1::RlStepReport Step(const v1::RlJobSpec& job, RlStepOptions options = Options()) {
  absl::StatusOr<v1::RlStepReport> r = EstimateRlStep(job, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : v1::RlStepReport();
}

EngineMemory Engine(const v1::RlJobSpec& job, uint64_t others) {
  absl::StatusOr<EngineMemory> e = EstimateEngineMemory(job, k80GB, others);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : EngineMemory();
}

v1::RankReport ActorRank(const v1::JobSpec& actor, int rank = 0) {
  absl::StatusOr<v1::EstimateReport> r = Estimate(actor);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->ranks(rank) : v1::RankReport();
}

const v1::RlPhaseReport& Phase(const v1::RlStepReport& report, const std::string& name) {
  for (const v1::RlPhaseReport& p : report.phases()) {
    if (p.phase() == name) return p;
  }
  ADD_FAILURE() << "no phase " << name;
  static const v1::RlPhaseReport kNone;
  return kNone;
}

std::vector<std::string> PhaseNames(const v1::RlStepReport& report) {
  std::vector<std::string> names;
  for (const v1::RlPhaseReport& p : report.phases()) names.push_back(p.phase());
  return names;
}

// The bytes of the term `name` on `rank` of the phase; -1 (and a failure
// when `required`) without one.
int64_t Term(const v1::RlPhaseReport& phase, const std::string& name, int rank = 0,
             bool required = true) {
  for (const v1::RlTerm& t : phase.ranks(rank).terms()) {
    if (t.name() == name) return static_cast<int64_t>(t.bytes());
  }
  if (required) ADD_FAILURE() << "no term " << name << " in " << phase.phase();
  return -1;
}

std::string KeyOf(const v1::RlPhaseReport& phase, const std::string& name) {
  for (const v1::RlTerm& t : phase.ranks(0).terms()) {
    if (t.name() == name) return t.key();
  }
  return "<none>";
}

uint64_t SumOfTerms(const v1::RlPhaseRank& rank) {
  uint64_t sum = 0;
  for (const v1::RlTerm& t : rank.terms()) sum += t.bytes();
  return sum;
}

// Every rank's peak is the sum of its terms, its upper bound at least that.
void ExpectTermsSumToPeaks(const v1::RlStepReport& report) {
  for (const v1::RlPhaseReport& p : report.phases()) {
    for (const v1::RlPhaseRank& r : p.ranks()) {
      EXPECT_EQ(SumOfTerms(r), r.peak_device_bytes()) << p.phase() << " rank " << r.pp_rank();
      EXPECT_GE(r.peak_device_upper_bytes(), r.peak_device_bytes());
    }
  }
}

// The tiny actor's estimate parts (one GPU: no NCCL group, so the CUDA
// context, 2.5 GiB, is all it holds outside the allocator besides slack).
struct TinyParts {
  v1::RankReport rank = ActorRank(TinyActor());
  uint64_t grads = rank.static_().dense_grad_bytes() + rank.static_().te_dummy_wgrad_bytes();
  uint64_t context = 2560ull << 20;
};

TEST(RlStep, TinyStatesAreTheHandDerivedOnes) {
  const TinyParts a;
  EXPECT_EQ(a.rank.static_().dense_param_bytes(), kTinyWeights);
  EXPECT_EQ(a.rank.static_().dense_grad_bytes(), 4 * kTinyParams);
  EXPECT_EQ(a.rank.static_().dense_optimizer_bytes(), kTinyOptimizer);
}

TEST(RlStep, PhasesInStepOrder) {
  v1::RlJobSpec job = TinyJob();
  EXPECT_EQ(PhaseNames(Step(job)),
            (std::vector<std::string>{"generate", "weight_sync", "log_prob", "actor_update"}));
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_GPU_COPY);
  *job.mutable_critic()->mutable_job() = TinyActor();
  EXPECT_EQ(PhaseNames(Step(job)),
            (std::vector<std::string>{"generate", "weight_sync", "log_prob", "ref_log_prob",
                                      "critic", "actor_update"}));
}

TEST(RlStep, GenerateHoldsTheTrainerStatesAndTheEngine) {
  const v1::RlJobSpec job = TinyJob();
  const TinyParts a;
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport& generate = Phase(report, "generate");
  EXPECT_EQ(Term(generate, "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(generate, "actor gradients"), a.grads);
  EXPECT_EQ(Term(generate, "actor optimizer states"), kTinyOptimizer);
  EXPECT_EQ(Term(generate, "CUDA context and NCCL buffers"), a.context);
  // The engine sized beside what the trainer keeps: its states and context.
  const EngineMemory e = Engine(job, kTinyWeights + a.grads + kTinyOptimizer + a.context);
  EXPECT_EQ(Term(generate, "engine KV pool"), e.kv_pool_bytes);
  EXPECT_EQ(SumOfTerms(generate.ranks(0)),
            kTinyWeights + a.grads + kTinyOptimizer + a.context + e.GenerateBytes());
  EXPECT_EQ(KeyOf(generate, "engine KV pool"),
            RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kEngineMemoryFraction));
  EXPECT_EQ(KeyOf(generate, "actor parameters"),
            RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kParamOffload));
  EXPECT_EQ(report.engine_kv_pool_bytes(), e.kv_pool_bytes);
  EXPECT_EQ(generate.failure(), e.failure);
  ExpectTermsSumToPeaks(report);
}

TEST(RlStep, WeightSyncHoldsBothWeightCopiesAndTheBucket) {
  v1::RlJobSpec job = TinyJob();
  const TinyParts a;
  const EngineMemory e = Engine(job, kTinyWeights + a.grads + kTinyOptimizer + a.context);
  const v1::RlPhaseReport sync = Phase(Step(job), "weight_sync");
  EXPECT_EQ(Term(sync, "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(sync, "engine weights"), e.weight_bytes);
  EXPECT_EQ(Term(sync, "weight-sync bucket"), 2048ll << 20);  // 2 GiB, veRL's default
  // Sleep level 2 keeps no weights: the asleep part is all "other".
  EXPECT_EQ(Term(sync, "engine asleep (other than its weights)", 0, e.asleep_bytes > 0),
            e.asleep_bytes > 0 ? static_cast<int64_t>(e.asleep_bytes) : -1);
  EXPECT_EQ(Term(sync, "engine KV pool", 0, false), -1);  // Not resumed yet.
  const uint64_t without_bucket =
      kTinyWeights + a.grads + kTinyOptimizer + a.context + e.weight_bytes + e.asleep_bytes;
  EXPECT_EQ(sync.peak_device_bytes(), without_bucket + (2048ull << 20));

  // NeMo-RL's rule: 30 % of what is free then.
  job.mutable_weight_sync()->clear_bucket_bytes();
  job.mutable_weight_sync()->set_free_fraction(0.3);
  const v1::RlPhaseReport nemo = Phase(Step(job), "weight_sync");
  EXPECT_EQ(Term(nemo, "weight-sync bucket"),
            std::llround(0.3 * static_cast<double>(k80GB - without_bucket)));
}

// The tiny actor's log-prob pass at its training budget, T = 4096 tokens on
// the only (last) stage: logits 4096 x 32000 = 131,072,000 elements. veRL
// runs Megatron's cross entropy in place on the fp32 logits, so the worst
// moment is Float16Module's upcast, bf16 and fp32 alive at once (6 B per
// logit, measured 6.0 on an H100):
//   final hidden states (4096 + 4096) x 1024 x 2 B = 16,777,216
//   bf16 logits 262,144,000; fp32 logits 524,288,000
//   allocator slack 512 MiB + 10 % x 803,209,216 = 617,191,834.
TEST(RlStep, LogProbHoldsTheStatesAndTheFp32Logits) {
  const v1::RlJobSpec job = TinyJob();
  const TinyParts a;
  const EngineMemory e = Engine(job, kTinyWeights + a.grads + kTinyOptimizer + a.context);
  const v1::RlPhaseReport log_prob = Phase(Step(job), "log_prob");
  EXPECT_EQ(Term(log_prob, "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(log_prob, "final hidden states"), 16777216);
  EXPECT_EQ(Term(log_prob, "bf16 logits (output layer)"), 262144000);
  EXPECT_EQ(Term(log_prob, "fp32 logits"), 524288000);
  EXPECT_EQ(Term(log_prob, "allocator slack"), 617191834);
  EXPECT_EQ(log_prob.peak_device_bytes(), kTinyWeights + a.grads + kTinyOptimizer + a.context +
                                              e.asleep_bytes + 16777216 + 262144000 + 524288000 +
                                              617191834);
  EXPECT_EQ(log_prob.largest_term(), "CUDA context and NCCL buffers");
  // slime clones the logits before its log-softmax: one fp32 copy more
  // (8 B per logit, 524,288,000 B), no bf16 logits at the peak.
  v1::RlJobSpec slime = job;
  slime.set_framework(v1::RL_FRAMEWORK_SLIME);
  const v1::RlPhaseReport cloned = Phase(Step(slime), "log_prob");
  EXPECT_EQ(Term(cloned, "fp32 log-softmax copies (1)"), 524288000);
  EXPECT_EQ(Term(cloned, "bf16 logits (output layer)", 0, false), -1);
}

TEST(RlStep, LogProbTokensEntropyAndChunking) {
  v1::RlJobSpec job = TinyJob();
  job.mutable_log_prob()->set_max_tokens_per_microbatch(16384);
  job.mutable_log_prob()->set_entropy(true);
  // 16384 x 32000 = 524,288,000 logits: fp32 2,097,152,000 B, and two
  // copies (veRL's clone kept for the log-probs, the entropy's softmax)
  // 4,194,304,000 B: 12 B per logit (measured 12.0 on an H100).
  const v1::RlPhaseReport big = Phase(Step(job), "log_prob");
  EXPECT_EQ(Term(big, "fp32 logits"), 2097152000);
  EXPECT_EQ(Term(big, "fp32 log-softmax copies (2)"), 4194304000);
  EXPECT_EQ(big.largest_term(), "fp32 log-softmax copies (2)");
  EXPECT_EQ(big.key(), RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kLogProbChunk).empty()
                           ? RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kLogProbTokens)
                           : RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kLogProbChunk));
  // A chunk of 2048 tokens: the upcast (bf16 1,048,576,000 + fp32
  // 2,097,152,000) is then larger than fp32 + 2 x 2048 x 32000 x 4.
  job.mutable_log_prob()->set_chunk_tokens(2048);
  const v1::RlPhaseReport chunked = Phase(Step(job), "log_prob");
  EXPECT_EQ(Term(chunked, "bf16 logits (output layer)"), 1048576000);
  EXPECT_EQ(Term(chunked, "fp32 logits"), 2097152000);
  EXPECT_LT(chunked.peak_device_bytes(), big.peak_device_bytes());
}

TEST(RlStep, OffloadsEmptyTheGpuOutsideTheUpdateAndFillTheHost) {
  v1::RlJobSpec job = TinyJob();
  const TinyParts a;
  job.mutable_actor_residency()->set_param_offload(true);
  job.mutable_actor_residency()->set_grad_offload(true);
  job.mutable_actor_residency()->set_optimizer_offload(true);
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport& generate = Phase(report, "generate");
  EXPECT_EQ(Term(generate, "actor parameters", 0, false), -1);
  EXPECT_EQ(Term(generate, "actor gradients", 0, false), -1);
  EXPECT_EQ(Term(generate, "actor optimizer states", 0, false), -1);
  // Loaded for the weight sync and the log-prob pass, nothing else.
  EXPECT_EQ(Term(Phase(report, "weight_sync"), "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(Phase(report, "log_prob"), "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(Phase(report, "log_prob"), "actor optimizer states", 0, false), -1);
  // The update loads all of them (its estimate's).
  EXPECT_EQ(Term(Phase(report, "actor_update"), "actor optimizer states"), kTinyOptimizer);
  // Host: the three states of the one GPU (the node's GPUs are the job's 1).
  EXPECT_EQ(report.host_bytes_per_node(), kTinyWeights + a.grads + kTinyOptimizer);
  EXPECT_EQ(report.host_terms_size(), 3);

  // release_all (slime's torch_memory_saver) does the same.
  v1::RlJobSpec all = TinyJob();
  all.mutable_actor_residency()->set_release_all(true);
  const v1::RlStepReport released = Step(all);
  EXPECT_EQ(Term(Phase(released, "generate"), "actor parameters", 0, false), -1);
  EXPECT_EQ(released.host_bytes_per_node(), report.host_bytes_per_node());
}

TEST(RlStep, HostBytesAreTimesTheGpusOfANode) {
  v1::RlJobSpec job = TinyJob();
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(16);  // DP 16, 8 per node.
  job.mutable_actor_residency()->set_optimizer_offload(true);
  const v1::RlStepReport report = Step(job);
  // Adam over DP 16 without the distributed optimizer: 12 N per GPU.
  EXPECT_EQ(report.host_bytes_per_node(), 8 * kTinyOptimizer);
}

TEST(RlStep, ReferenceGpuCopyStaysAllAlong) {
  v1::RlJobSpec job = TinyJob();
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_GPU_COPY);
  const v1::RlStepReport report = Step(job);
  for (const char* phase :
       {"generate", "weight_sync", "log_prob", "ref_log_prob", "actor_update"}) {
    EXPECT_EQ(Term(Phase(report, phase), "reference weights (GPU copy)"), kTinyWeights) << phase;
  }
  // Its own pass follows log_prob's budget: the same logits.
  EXPECT_EQ(Term(Phase(report, "ref_log_prob"), "fp32 logits"), 524288000);
  EXPECT_EQ(report.host_bytes_per_node(), 0u);
}

TEST(RlStep, ReferenceOffloadedIsLoadedForItsPassOnly) {
  v1::RlJobSpec job = TinyJob();
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_OFFLOADED_COPY);
  job.mutable_reference()->mutable_log_prob()->set_max_tokens_per_microbatch(8192);
  const v1::RlStepReport report = Step(job);
  EXPECT_EQ(Term(Phase(report, "generate"), "reference weights (GPU copy)", 0, false), -1);
  const v1::RlPhaseReport& ref = Phase(report, "ref_log_prob");
  EXPECT_EQ(Term(ref, "reference weights (loaded)"), kTinyWeights);
  EXPECT_EQ(Term(ref, "actor parameters"), kTinyWeights);
  // Its own budget: 8192 x 32000 x 4 B.
  EXPECT_EQ(Term(ref, "fp32 logits"), 1048576000);
  EXPECT_EQ(report.host_bytes_per_node(), kTinyWeights);
}

TEST(RlStep, ReferenceSwappedInReplacesTheActorsWeights) {
  v1::RlJobSpec job = TinyJob();
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport& ref = Phase(report, "ref_log_prob");
  EXPECT_EQ(Term(ref, "reference weights (swapped into the actor's module)"), kTinyWeights);
  EXPECT_EQ(Term(ref, "actor parameters", 0, false), -1);
  EXPECT_EQ(Term(ref, "actor optimizer states"), kTinyOptimizer);
  EXPECT_EQ(report.host_bytes_per_node(), kTinyWeights);
}

// The critic: the tiny model with a value head. Its output layer is
// hidden x 1: N_c = N - 32,768,000 + 1,024 = 57,939,968 parameters, bf16
// weights 115,879,936 B, Adam 695,279,616 B.
TEST(RlStep, CriticHasAValueHeadAndTakesItsTurn) {
  v1::RlJobSpec job = TinyJob();
  *job.mutable_critic()->mutable_job() = TinyActor();
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport& generate = Phase(report, "generate");
  EXPECT_EQ(Term(generate, "critic parameters"), 115879936);
  EXPECT_EQ(Term(generate, "critic optimizer states"), 695279616);
  // Its phase: its training peak (the estimator's, value head set) beside
  // the actor's states and NCCL (its CUDA context is in the critic's).
  v1::JobSpec critic = TinyActor();
  critic.mutable_model()->set_value_head(true);
  const v1::RankReport c = ActorRank(critic);
  EXPECT_EQ(c.parameters(), 57939968u);
  const v1::RlPhaseReport& phase = Phase(report, "critic");
  EXPECT_EQ(Term(phase, "critic update (Megatron-Core estimate)"), c.peak_device_bytes());
  EXPECT_EQ(Term(phase, "actor parameters"), kTinyWeights);
  EXPECT_EQ(Term(phase, "actor NCCL buffers", 0, false), -1);  // One GPU: none.
  // Offloaded, it leaves the other phases and fills the host.
  job.mutable_critic()->mutable_residency()->set_param_offload(true);
  job.mutable_critic()->mutable_residency()->set_grad_offload(true);
  job.mutable_critic()->mutable_residency()->set_optimizer_offload(true);
  const v1::RlStepReport offloaded = Step(job);
  EXPECT_EQ(Term(Phase(offloaded, "generate"), "critic parameters", 0, false), -1);
  EXPECT_EQ(
      offloaded.host_bytes_per_node(),
      115879936 + 695279616 + c.static_().dense_grad_bytes() + c.static_().te_dummy_wgrad_bytes());
  ExpectTermsSumToPeaks(report);
}

TEST(RlStep, ActorUpdateIsTheActorsEstimateBesideTheSleepingEngine) {
  const v1::RlJobSpec job = TinyJob();
  const TinyParts a;
  const EngineMemory e = Engine(job, kTinyWeights + a.grads + kTinyOptimizer + a.context);
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport& update = Phase(report, "actor_update");
  // Activations and backward: the estimate's held activations + transient.
  EXPECT_EQ(Term(update, "actor activations and backward"),
            a.rank.activation_bytes() + a.rank.transient_bytes());
  EXPECT_EQ(update.peak_device_bytes(), a.rank.peak_device_bytes() + e.asleep_bytes);
  EXPECT_GE(update.peak_device_upper_bytes(), a.rank.peak_device_upper_bytes() + e.asleep_bytes);
  EXPECT_EQ(report.actor_update().ranks(0).peak_device_bytes(), a.rank.peak_device_bytes());
  // Without the full report the phases are the same.
  RlStepOptions lean = Options();
  lean.actor_report = false;
  const v1::RlStepReport without = Step(job, lean);
  EXPECT_FALSE(without.has_actor_update());
  EXPECT_EQ(Phase(without, "actor_update").peak_device_bytes(), update.peak_device_bytes());
}

TEST(RlStep, BindingPhaseIsTheLargestUpperBound) {
  v1::RlJobSpec job = TinyJob();
  const v1::RlStepReport report = Step(job);
  const v1::RlPhaseReport* largest = &report.phases(0);
  for (const v1::RlPhaseReport& p : report.phases()) {
    if (p.peak_device_upper_bytes() > largest->peak_device_upper_bytes()) largest = &p;
  }
  EXPECT_EQ(report.binding_phase(), largest->phase());
  EXPECT_EQ(report.peak_device_upper_bytes(), largest->peak_device_upper_bytes());
  // A log-prob budget of 262144 tokens: 31.25 GiB of fp32 logits
  // (262144 x 32000 x 4 B = 33,554,432,000 B) beside their bf16 source
  // bind the step.
  job.mutable_log_prob()->set_max_tokens_per_microbatch(262144);
  const v1::RlStepReport long_pass = Step(job);
  EXPECT_EQ(long_pass.binding_phase(), "log_prob");
  EXPECT_EQ(Term(Phase(long_pass, "log_prob"), "fp32 logits"), 33554432000);
}

TEST(RlStep, NotesStartWithTheUnmodelledSettings) {
  v1::RlJobSpec job = TinyJob();
  v1::UnmodelledSetting* u = job.add_unmodelled_settings();
  u->set_flag("actor_rollout_ref.rollout.multi_turn.enable");
  u->set_reason("multi-turn rollouts are not modelled");
  *job.mutable_actor()->add_unmodelled_settings() = *u;  // Named once.
  v1::UnmodelledSetting* actor_only = job.mutable_actor()->add_unmodelled_settings();
  actor_only->set_flag("--tp-comm-overlap-cfg");
  actor_only->set_reason("a custom overlap configuration is not read");
  const v1::RlStepReport report = Step(job);
  ASSERT_GE(report.notes_size(), 3);
  EXPECT_EQ(report.notes(0),
            "actor_rollout_ref.rollout.multi_turn.enable is not modelled (multi-turn rollouts "
            "are not modelled): estimated as if it were absent");
  EXPECT_EQ(report.notes(1),
            "--tp-comm-overlap-cfg is not modelled (a custom overlap configuration is not "
            "read): estimated as if it were absent");
  EXPECT_EQ(report.notes(2).find("is not modelled"), std::string::npos);
}

// Each bad value is refused naming its field.
TEST(RlStep, ValidationNamesTheField) {
  const auto error = [](const v1::RlJobSpec& job, RlStepOptions o = Options()) {
    absl::StatusOr<v1::RlStepReport> r = EstimateRlStep(job, o);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    return std::string(r.status().message());
  };
  RlStepOptions no_gpu = Options();
  no_gpu.gpu_memory_bytes = 0;
  EXPECT_EQ(error(TinyJob(), no_gpu).rfind("gpu_memory_bytes: 0", 0), 0u);
  no_gpu.gpu_memory_bytes = (uint64_t{1} << 50) + 1;
  EXPECT_EQ(error(TinyJob(), no_gpu).rfind("gpu_memory_bytes: ", 0), 0u);

  v1::RlJobSpec job = TinyJob();
  job.set_max_prompt_length(0);
  EXPECT_EQ(error(job), "max_prompt_length: required, > 0");
  job = TinyJob();
  job.set_max_response_length(0);
  EXPECT_EQ(error(job), "max_response_length: required, > 0");
  job = TinyJob();
  job.mutable_log_prob()->set_max_tokens_per_microbatch(1u << 25);
  EXPECT_EQ(error(job).rfind("log_prob.max_tokens_per_microbatch: 33554432", 0), 0u);
  job = TinyJob();
  job.mutable_reference()->mutable_log_prob()->set_chunk_tokens(1u << 25);
  EXPECT_EQ(error(job).rfind("reference.log_prob.chunk_tokens: ", 0), 0u);
  job = TinyJob();
  job.mutable_rollout()->set_memory_fraction(1.5);
  EXPECT_EQ(error(job), "rollout.memory_fraction: 1.5: must be in (0, 1]");
  job = TinyJob();
  job.mutable_weight_sync()->set_free_fraction(0);
  EXPECT_EQ(error(job), "weight_sync.free_fraction: 0: must be in (0, 1]");
  // The actor's and critic's own errors, under their paths.
  job = TinyJob();
  job.mutable_actor()->mutable_parallelism()->set_tensor_model_parallel_size(3);
  EXPECT_EQ(error(job).rfind("actor.parallelism.num_gpus = 1: not divisible by TP", 0), 0u)
      << error(job);
  job = TinyJob();
  *job.mutable_critic()->mutable_job() = TinyActor();
  job.mutable_critic()->mutable_job()->mutable_training()->set_seq_length(0);
  EXPECT_EQ(error(job).rfind("critic.job.training.seq_length", 0), 0u);
}

TEST(RlStep, ValueHeadNeedsUntiedEmbeddingsAndNoMtp) {
  v1::JobSpec job = TinyActor();
  job.mutable_model()->set_value_head(true);
  job.mutable_model()->set_untie_embeddings_and_output_weights(false);
  EXPECT_EQ(Estimate(job).status().message().rfind("model.value_head: ", 0), 0u);
  job.mutable_model()->set_untie_embeddings_and_output_weights(true);
  job.mutable_model()->set_mtp_num_layers(1);
  EXPECT_EQ(Estimate(job).status().message().rfind("model.mtp_num_layers = 1", 0), 0u)
      << Estimate(job).status();
}

// Seed 000's story: Qwen3-30B-A3B RL on 32 x 80 GB, prompt 2048 + response
// 8192 = 10240 tokens per micro-batch (one sequence, packed), actor TP2 EP8
// (ETP 1) with the distributed optimizer, vLLM TP2 at
// gpu_memory_utilization 0.5, sleep level 2, a GPU reference copy.
// Padded vocabulary: 151936 rounded up to 128 x TP 2 = 256: 152064, so
// 76032 columns per rank; the log-prob micro-batch's logits are
// 10240 x 76032 = 778,567,680 elements: fp32 3,114,270,720 B (2.90 GiB) per
// copy.
v1::RlJobSpec QwenStory() {
  v1::RlJobSpec job;
  job.set_framework(v1::RL_FRAMEWORK_VERL);
  absl::StatusOr<v1::ModelSpec> model = FindPreset("qwen3-30b-a3b");
  EXPECT_TRUE(model.ok()) << model.status();
  v1::JobSpec* actor = job.mutable_actor();
  if (model.ok()) *actor->mutable_model() = *model;
  actor->mutable_model()->set_moe_grouped_gemm(true);
  v1::ParallelismSpec* p = actor->mutable_parallelism();
  p->set_num_gpus(32);
  p->set_tensor_model_parallel_size(2);
  p->set_expert_model_parallel_size(8);
  p->set_expert_tensor_parallel_size(1);
  p->set_sequence_parallel(true);
  actor->mutable_training()->set_micro_batch_size(1);
  actor->mutable_training()->set_seq_length(10240);
  actor->mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  actor->mutable_precision()->set_use_distributed_optimizer(true);
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_VLLM);
  job.mutable_rollout()->set_tensor_parallel(2);
  job.mutable_rollout()->set_memory_fraction(0.5);
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_2);
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_GPU_COPY);
  job.mutable_weight_sync()->set_bucket_bytes(2048ull << 20);
  job.set_max_prompt_length(2048);
  job.set_max_response_length(8192);
  job.set_colocated(true);
  return job;
}

TEST(RlStep, QwenStoryLogitsAndResidentSets) {
  const v1::RlJobSpec job = QwenStory();
  const v1::RlStepReport report = Step(job);
  ASSERT_EQ(report.phases_size(), 5);
  const v1::RlPhaseReport& log_prob = Phase(report, "log_prob");
  EXPECT_EQ(Term(log_prob, "fp32 logits"), 3114270720);
  EXPECT_EQ(Term(log_prob, "bf16 logits (output layer)"), 1557135360);
  // Final hidden states: norm output 5120 x 2048 + gathered input
  // 10240 x 2048, bf16: 62,914,560 B.
  EXPECT_EQ(Term(log_prob, "final hidden states"), 62914560);
  // The actor's states in every phase are its estimate's (PP 1: one
  // micro-batch in flight); the reference copy is its bf16 weights.
  const v1::RankReport& a = report.actor_update().ranks(0);
  const int64_t weights = a.static_().dense_param_bytes() + a.static_().expert_param_bytes();
  EXPECT_EQ(Term(Phase(report, "generate"), "reference weights (GPU copy)"), weights);
  const v1::RlPhaseReport& update = Phase(report, "actor_update");
  const int64_t asleep = std::max<int64_t>(0, Term(update, "engine asleep", 0, false));
  EXPECT_EQ(update.peak_device_bytes(), a.peak_device_bytes() + weights + asleep);
  // With the entropy (veRL's clone) one more fp32 copy.
  v1::RlJobSpec entropy = job;
  entropy.mutable_log_prob()->set_entropy(true);
  EXPECT_EQ(Term(Phase(Step(entropy), "log_prob"), "fp32 log-softmax copies (2)"), 6228541440);
  ExpectTermsSumToPeaks(report);
}

// The public OOMs of RL_MEMORY.md §2, as far as their configurations can be
// reconstructed. slime #1951 tried to allocate 58.15 GiB in
// compute_log_probs(logits.clone()): that allocation is one fp32 copy,
// T x V/TP x 4 B, so T x V/TP = 58.15 x 2^30 / 4 = 1.561e10; with Qwen3's
// vocabulary at TP 1 (151936, a multiple of 128) T = 102,740 tokens, a
// 100k-token log-prob budget. The model below gives, at that budget, a
// clone ("fp32 log-softmax copies (1)") of 58.15 GiB beside the fp32 logits
// themselves (another 58.15 GiB): the 58.15 GiB request is the second
// copy. NeMo-RL #2871 (12.60 GiB, un-chunked training path) names neither
// its budget nor its TP: at TP 2 (75968 columns) one fp32 copy of
// 12.60 GiB is 44,517 tokens; not asserted.
TEST(RlStep, SlimeLogProbCloneOf58GiB) {
  v1::RlJobSpec job = TinyJob();
  job.set_framework(v1::RL_FRAMEWORK_SLIME);
  job.mutable_actor()->mutable_model()->set_vocab_size(151936);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(102740);
  const v1::RlPhaseReport log_prob = Phase(Step(job), "log_prob");
  const double clone = static_cast<double>(Term(log_prob, "fp32 log-softmax copies (1)"));
  EXPECT_NEAR(clone / kGiB, 58.15, 0.01);  // 102740 x 151936 x 4 B = 58.148 GiB
  EXPECT_EQ(Term(log_prob, "fp32 logits"), Term(log_prob, "fp32 log-softmax copies (1)"));
  EXPECT_EQ(log_prob.largest_term(), "fp32 logits");
}

}  // namespace
}  // namespace oomguard
