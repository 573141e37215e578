// Tests of the RL admission check (admission/rl_admission.h) against a
// model of the step estimator whose phases are known in whole GiB, so that
// the binding phase, the margin, a failing phase, the recommendations'
// re-estimates and the wording can be checked exactly. (The estimator's own
// tests derive the phases' numbers; tests/service checks the check against
// the real estimator.)
#include "admission/rl_admission.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "estimator/rl_knobs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr uint64_t kGiB = uint64_t{1} << 30;

uint64_t Gib(double gib) { return static_cast<uint64_t>(gib * static_cast<double>(kGiB)); }

v1::RlTerm* AddTerm(v1::RlPhaseRank* rank, const std::string& name, double gib,
                    const v1::RlJobSpec& job, RlKnob knob) {
  v1::RlTerm* t = rank->add_terms();
  t->set_name(name);
  t->set_bytes(Gib(gib));
  t->set_key(std::string(RlKnobKey(job.framework(), knob)));
  rank->set_peak_device_bytes(rank->peak_device_bytes() + t->bytes());
  return t;
}

// A model of EstimateRlStep on two PP ranks, in GiB: the actor's parameters
// 10, gradients 10 and optimizer 20 unless offloaded; generate adds the
// engine's budget, fraction x the GPU (failing below its weights, 16 / engine
// TP, plus 4); log-prob adds the asleep engine 2, activations tokens / 1024 x
// 0.5 and, on the last rank, fp32 logits (chunk or tokens) / 1024 x 2; the
// actor update loads everything and adds tokens / 1024 x 1. Each rank's
// upper bound is 1 GiB above its point estimate. A reference's GPU copy
// holds 10 more in every phase; with a bucket set, the weight sync holds the
// resident set, the engine's weights and the bucket.
absl::StatusOr<v1::RlStepReport> FakeStep(const v1::RlJobSpec& job, const RlStepOptions& o) {
  if (job.actor().training().seq_length() == 0) {
    return absl::InvalidArgumentError("actor.training.seq_length = 0: must be > 0");
  }
  const double gpu_gib = static_cast<double>(o.gpu_memory_bytes) / static_cast<double>(kGiB);
  v1::RlStepReport step;
  step.set_framework(job.framework());
  auto add_phase = [&](const std::string& name) {
    v1::RlPhaseReport* p = step.add_phases();
    p->set_phase(name);
    for (uint32_t r = 0; r < 2; ++r) p->add_ranks()->set_pp_rank(r);
    return p;
  };
  auto resident = [&](v1::RlPhaseRank* rank, bool loaded) {
    const v1::ModelResidency& res = job.actor_residency();
    if (loaded || !res.param_offload()) {
      AddTerm(rank, "actor parameters", 10, job, RlKnob::kParamOffload);
    }
    if (loaded || !res.grad_offload()) {
      AddTerm(rank, "actor gradients", 10, job, RlKnob::kGradOffload);
    }
    if (loaded || !res.optimizer_offload()) {
      AddTerm(rank, "actor optimizer", 20, job, RlKnob::kOptimizerOffload);
    }
    if (job.reference().placement() == v1::REFERENCE_PLACEMENT_GPU_COPY) {
      AddTerm(rank, "reference weights", 10, job, RlKnob::kRefParamOffload);
    }
  };
  const uint32_t engine_tp = std::max<uint32_t>(job.rollout().tensor_parallel(), 1);
  const double budget = job.rollout().memory_fraction() * gpu_gib;
  v1::RlPhaseReport* generate = add_phase("generate");
  for (v1::RlPhaseRank& rank : *generate->mutable_ranks()) {
    resident(&rank, false);
    AddTerm(&rank, "engine budget", budget, job, RlKnob::kEngineMemoryFraction);
  }
  if (budget < 16.0 / engine_tp + 4) {
    generate->set_failure(absl::StrCat("the engine's budget, ", budget,
                                       " GiB, is short of its weights and one sequence's KV."));
  }
  if (job.weight_sync().has_bucket_bytes()) {
    v1::RlPhaseReport* sync = add_phase("weight_sync");
    for (v1::RlPhaseRank& rank : *sync->mutable_ranks()) {
      resident(&rank, false);
      AddTerm(&rank, "engine weights", 16.0 / engine_tp, job, RlKnob::kEngineTensorParallel);
      AddTerm(&rank, "weight-sync bucket",
              static_cast<double>(job.weight_sync().bucket_bytes()) / static_cast<double>(kGiB),
              job, RlKnob::kWeightSyncBucket);
    }
  }
  const double lp_tokens = job.log_prob().max_tokens_per_microbatch() > 0
                               ? job.log_prob().max_tokens_per_microbatch()
                               : job.actor().training().seq_length();
  const double chunk =
      job.log_prob().chunk_tokens() > 0 ? job.log_prob().chunk_tokens() : lp_tokens;
  v1::RlPhaseReport* log_prob = add_phase("log_prob");
  for (v1::RlPhaseRank& rank : *log_prob->mutable_ranks()) {
    resident(&rank, false);
    AddTerm(&rank, "engine asleep", 2, job, RlKnob::kEngineSleep);
    AddTerm(&rank, "forward activations", lp_tokens / 1024 * 0.5, job, RlKnob::kLogProbTokens);
    if (rank.pp_rank() == 1) {
      AddTerm(&rank, "fp32 logits", std::min(chunk, lp_tokens) / 1024 * 2, job,
              RlKnob::kLogProbTokens);
    }
  }
  v1::RlPhaseReport* update = add_phase("actor_update");
  for (v1::RlPhaseRank& rank : *update->mutable_ranks()) {
    resident(&rank, true);
    AddTerm(&rank, "engine asleep", 2, job, RlKnob::kEngineSleep);
    AddTerm(&rank, "training activations",
            static_cast<double>(job.actor().training().seq_length()) / 1024, job,
            RlKnob::kTrainTokens);
  }
  for (v1::RlPhaseReport& p : *step.mutable_phases()) {
    for (v1::RlPhaseRank& rank : *p.mutable_ranks()) {
      rank.set_peak_device_upper_bytes(rank.peak_device_bytes() + kGiB);
    }
  }
  step.set_gpu_memory_bytes(o.gpu_memory_bytes);
  step.set_upper_bound_coverage(o.upper_bound_coverage);
  step.add_notes("a note of the step");
  if (o.actor_report) {
    step.mutable_actor_update()->set_num_gpus(job.actor().parallelism().num_gpus());
    step.mutable_actor_update()->add_notes("a note of the actor update");
  }
  return step;
}

// veRL, 8 GPUs, vLLM at 0.5, engine TP 1, 16384 tokens per micro-batch
// everywhere, sequences of 1024 + 3072 tokens.
v1::RlJobSpec VerlJob() {
  v1::RlJobSpec job;
  job.set_framework(v1::RL_FRAMEWORK_VERL);
  job.set_colocated(true);
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(8);
  job.mutable_actor()->mutable_training()->set_seq_length(16384);
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_VLLM);
  job.mutable_rollout()->set_memory_fraction(0.5);
  job.mutable_rollout()->set_tensor_parallel(1);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(16384);
  job.set_max_prompt_length(1024);
  job.set_max_response_length(3072);
  return job;
}

v1::GpuSpec H100() {
  v1::GpuSpec gpu;
  gpu.set_name("H100-SXM-80GB");
  gpu.set_memory_bytes(80 * kGiB);
  return gpu;
}

absl::StatusOr<v1::CheckResponse> Check(const v1::RlJobSpec& job,
                                        const AdmissionOptions& options = {},
                                        const v1::GpuSpec& gpu = H100()) {
  return CheckRlJob(job, gpu, options, FakeStep);
}

// The binding phase is log-prob on rank 1: 40 resident + 2 asleep + 8
// activations + 32 logits = 82, bound 83 > 80 usable. Halving the log-prob
// budget leaves 40 + 2 + 4 + 16 = 62 (bound 63), and generation binds at
// 40 + 40 = 80 (bound 81): saves 2, still over; the engine at 0.4 then
// generates at 40 + 32 = 72 (bound 73): saves 8 and fits.
TEST(RlAdmissionTest, BindingPhaseVerdictAndLadder) {
  const v1::RlJobSpec job = VerlJob();
  absl::StatusOr<v1::CheckResponse> r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_EQ(r->rl_step().phases_size(), 3);
  EXPECT_EQ(r->worst_pp_rank(), 1u);
  EXPECT_EQ(r->peak_device_bytes(), 82 * kGiB);
  EXPECT_EQ(r->peak_device_upper_bytes(), 83 * kGiB);
  EXPECT_EQ(r->compared_peak_bytes(), 83 * kGiB);
  EXPECT_EQ(r->peak_bound(), v1::PEAK_BOUND_UPPER);
  EXPECT_EQ(r->compared_peak_label(), "95% bound");
  EXPECT_EQ(r->capacity_bytes(), 80 * kGiB);
  EXPECT_EQ(r->usable_bytes(), 80 * kGiB);
  EXPECT_EQ(r->headroom_bytes(), -static_cast<int64_t>(3 * kGiB));
  EXPECT_EQ(r->gpu_name(), "H100-SXM-80GB");

  ASSERT_EQ(r->recommendations_size(), 2);
  const v1::Recommendation& halved = r->recommendations(0);
  EXPECT_EQ(halved.id(), "log_prob_tokens_halved");
  EXPECT_EQ(halved.kind(), v1::Recommendation::KIND_CONFIG_CHANGE);
  v1::RlJobSpec expected = job;
  expected.mutable_log_prob()->set_max_tokens_per_microbatch(8192);
  EXPECT_EQ(halved.setting(), RlKnobSetting(expected, RlKnob::kLogProbTokens));
  EXPECT_THAT(halved.setting(),
              HasSubstr("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"));
  EXPECT_THAT(halved.setting(), HasSubstr("8192"));
  EXPECT_EQ(halved.saved_bytes(), static_cast<int64_t>(2 * kGiB));
  EXPECT_EQ(halved.peak_device_bytes_after(), 81 * kGiB);
  EXPECT_FALSE(halved.sufficient());
  const v1::Recommendation& fraction = r->recommendations(1);
  EXPECT_EQ(fraction.id(), "engine_memory_fraction_lowered");
  expected.mutable_rollout()->set_memory_fraction(0.4);
  EXPECT_EQ(fraction.setting(), RlKnobSetting(expected, RlKnob::kEngineMemoryFraction));
  EXPECT_THAT(fraction.setting(), HasSubstr("0.4"));
  EXPECT_EQ(fraction.saved_bytes(), static_cast<int64_t>(8 * kGiB));
  EXPECT_EQ(fraction.peak_device_bytes_after(), 73 * kGiB);
  EXPECT_TRUE(fraction.sufficient());

  EXPECT_EQ(
      r->summary(),
      absl::StrCat("Does not fit: log-prob peaks at 83.0 GiB (95% bound; point estimate "
                   "82.0 GiB) on PP rank 1 (fp32 logits 32.0 GiB) of 80.0 GiB usable on "
                   "H100-SXM-80GB, 3.0 GiB over: lower "
                   "`actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu`; first try ",
                   halved.setting(), " (saves 2.0 GiB); it fits once the recommendations up to ",
                   fraction.setting(), " are applied."));
}

// The wording in NeMo-RL's keys: the log-prob phase binds on its
// fp32 logits, so the verdict says to lower the log-prob budget or set the
// chunk, and chunking at 4096 tokens is the first step: logits 4096 / 1024
// x 2 = 8 GiB, log-prob 40 + 2 + 8 + 8 = 58 (bound 59), and generation at
// 0.45 binds at 40 + 36 = 76 (bound 77): saves 6 GiB and fits.
TEST(RlAdmissionTest, LogProbVerdictNamesTheBudgetAndTheChunk) {
  v1::RlJobSpec job = VerlJob();
  job.set_framework(v1::RL_FRAMEWORK_NEMO_RL);
  job.mutable_rollout()->set_memory_fraction(0.45);
  absl::StatusOr<v1::CheckResponse> r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->recommendations_size(), 1);
  const v1::Recommendation& chunk = r->recommendations(0);
  EXPECT_EQ(chunk.id(), "log_prob_chunking");
  EXPECT_EQ(chunk.setting(), "policy.logprob_chunk_size=4096");
  EXPECT_EQ(chunk.saved_bytes(), static_cast<int64_t>(6 * kGiB));
  EXPECT_EQ(chunk.peak_device_bytes_after(), 77 * kGiB);
  EXPECT_TRUE(chunk.sufficient());
  EXPECT_EQ(r->summary(),
            "Does not fit: log-prob peaks at 83.0 GiB (95% bound; point estimate 82.0 GiB) on PP "
            "rank 1 (fp32 logits 32.0 GiB) of 80.0 GiB usable on H100-SXM-80GB, 3.0 GiB over: "
            "lower `policy.sequence_packing.logprob_mb_tokens` or set `policy.logprob_chunk_size`; "
            "first try policy.logprob_chunk_size=4096 (saves 6.0 GiB).");
}

// The reference's GPU copy (10 GiB in every phase here) and the weight-sync
// bucket, each re-estimated. Budgets of 4096 tokens, the engine at 0.35,
// 72 GiB usable: with the reference generation binds at 40 + 10 + 28 = 78
// (bound 79); offloading it leaves 68 (69), which fits. Without a reference
// and with a 24 GiB bucket the sync binds at 40 + 16 + 24 = 80 (81); half
// the bucket leaves it at 68 (69), which fits.
TEST(RlAdmissionTest, ReferenceOffloadAndSyncBucketAreReestimated) {
  v1::RlJobSpec job = VerlJob();
  job.mutable_actor()->mutable_training()->set_seq_length(4096);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(4096);
  job.mutable_rollout()->set_memory_fraction(0.35);
  AdmissionOptions margin;
  margin.safety_margin = 0.1;
  v1::RlJobSpec with_reference = job;
  with_reference.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_GPU_COPY);
  absl::StatusOr<v1::CheckResponse> r = Check(with_reference, margin);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->compared_peak_bytes(), 79 * kGiB);
  ASSERT_EQ(r->recommendations_size(), 1);
  EXPECT_EQ(r->recommendations(0).id(), "ref_param_offload");
  EXPECT_EQ(r->recommendations(0).setting(), "actor_rollout_ref.ref.megatron.param_offload=true");
  EXPECT_EQ(r->recommendations(0).peak_device_bytes_after(), 69 * kGiB);
  EXPECT_TRUE(r->recommendations(0).sufficient());

  v1::RlJobSpec with_bucket = job;
  with_bucket.mutable_weight_sync()->set_bucket_bytes(24 * kGiB);
  r = Check(with_bucket, margin);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->compared_peak_bytes(), 81 * kGiB);
  EXPECT_THAT(r->summary(), StartsWith("Does not fit: weight sync peaks at 81.0 GiB"));
  EXPECT_THAT(r->summary(),
              HasSubstr("(weight-sync bucket 24.0 GiB) of 72.0 GiB usable on H100-SXM-80GB (80.0 "
                        "GiB less 10% kept free), 9.0 GiB over: lower "
                        "`actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_"
                        "megabytes`"));
  ASSERT_EQ(r->recommendations_size(), 1);
  EXPECT_EQ(r->recommendations(0).id(), "weight_sync_bucket_halved");
  EXPECT_EQ(r->recommendations(0).setting(),
            "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=12288");
  EXPECT_EQ(r->recommendations(0).saved_bytes(), static_cast<int64_t>(12 * kGiB));
  EXPECT_TRUE(r->recommendations(0).sufficient());
}

// The report is the actor update's estimate, then the step's notes; without
// it only the notes, and rl_step without its actor update.
TEST(RlAdmissionTest, ReportIsTheActorUpdate) {
  absl::StatusOr<v1::CheckResponse> r = Check(VerlJob());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report().num_gpus(), 8u);
  EXPECT_THAT(r->report().notes(),
              testing::ElementsAre("a note of the actor update", "a note of the step"));
  EXPECT_EQ(r->rl_step().actor_update().num_gpus(), 8u);
  AdmissionOptions brief;
  brief.with_report = false;
  r = Check(VerlJob(), brief);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report().num_gpus(), 0u);
  EXPECT_THAT(r->report().notes(), testing::ElementsAre("a note of the step"));
  EXPECT_FALSE(r->rl_step().has_actor_update());
}

// The point estimate compared: log-prob rank 1 at 82 > 80, 2 over; the
// halved budget leaves generation binding at 80, which fits.
TEST(RlAdmissionTest, PointEstimateCompared) {
  AdmissionOptions options;
  options.compare_upper_bound = false;
  absl::StatusOr<v1::CheckResponse> r = Check(VerlJob(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->compared_peak_bytes(), 82 * kGiB);
  EXPECT_EQ(r->compared_peak_label(), "point estimate");
  ASSERT_EQ(r->recommendations_size(), 1);
  EXPECT_EQ(r->recommendations(0).peak_device_bytes_after(), 80 * kGiB);
  EXPECT_TRUE(r->recommendations(0).sufficient());
  EXPECT_THAT(r->summary(), HasSubstr("82.0 GiB (point estimate; 95% bound 83.0 GiB)"));
}

// A 10 % margin: 72 GiB usable. With budgets of 4096 tokens everywhere and
// the engine at 0.35 the step peaks in generation at 40 + 28 = 68 (bound
// 69): fits, 3 GiB headroom.
v1::RlJobSpec SmallBudgetsJob() {
  v1::RlJobSpec job = VerlJob();
  job.mutable_actor()->mutable_training()->set_seq_length(4096);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(4096);
  job.mutable_rollout()->set_memory_fraction(0.35);
  return job;
}

TEST(RlAdmissionTest, FitsWithinTheMargin) {
  AdmissionOptions options;
  options.safety_margin = 0.1;
  absl::StatusOr<v1::CheckResponse> r = Check(SmallBudgetsJob(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(r->usable_bytes(), 72 * kGiB);
  EXPECT_EQ(r->compared_peak_bytes(), 69 * kGiB);
  EXPECT_EQ(r->worst_pp_rank(), 0u);
  EXPECT_THAT(r->recommendations(), IsEmpty());
  EXPECT_THAT(r->summary(), StartsWith("Fits: generation peaks at 69.0 GiB (95% bound"));
  EXPECT_THAT(r->summary(), HasSubstr("(engine budget 28.0 GiB) of 72.0 GiB usable on "
                                      "H100-SXM-80GB (80.0 GiB less 10% kept free), 3.0 GiB "
                                      "headroom."));
}

// The same step with the cluster's learned widening of 4 %: the binding
// bound 69 GiB x 1.04 = 71.76 GiB, still under 72: fits, 0.24 GiB headroom,
// and the summary says the bound was widened.
TEST(RlAdmissionTest, TheLearnedWideningWidensTheBindingBound) {
  AdmissionOptions options;
  options.safety_margin = 0.1;
  options.learned_widening = 0.04;
  options.learned_widening_jobs = 25;
  options.learned_widening_cluster = "a";
  absl::StatusOr<v1::CheckResponse> r = Check(SmallBudgetsJob(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);
  // 69 x 2^30 x 1.04 = 77,051,713,290.24 bytes, rounded up.
  EXPECT_EQ(r->compared_peak_bytes(), 77'051'713'291u);
  EXPECT_EQ(r->peak_device_upper_bytes(), 69 * kGiB);
  EXPECT_DOUBLE_EQ(r->learned_widening(), 0.04);
  EXPECT_THAT(r->summary(), StartsWith("Fits: generation peaks at 71.8 GiB (95% bound + 4.0% "
                                       "learned; point estimate 68.0 GiB)"));
  EXPECT_THAT(r->summary(), ::testing::EndsWith("headroom. The 95% bound is widened by 4.0%, "
                                                "learned from 25 measured jobs of cluster \"a\"."));
}

// The engine at 0.2 has 16 GiB for 16 GiB of weights and 4 of KV: it cannot
// start, whatever the peaks: DOES_NOT_FIT naming generation; 0.3 (24 GiB)
// lets it start, and the step then fits (generation 40 + 24 = 64, bound 65).
TEST(RlAdmissionTest, FailingPhaseDoesNotFit) {
  v1::RlJobSpec job = VerlJob();
  job.mutable_actor()->mutable_training()->set_seq_length(4096);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(4096);
  job.mutable_rollout()->set_memory_fraction(0.2);
  absl::StatusOr<v1::CheckResponse> r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_EQ(r->compared_peak_bytes(), 57 * kGiB);  // Generation: 40 + 16, bound 57.
  ASSERT_EQ(r->recommendations_size(), 1);
  const v1::Recommendation& raised = r->recommendations(0);
  EXPECT_EQ(raised.id(), "engine_memory_fraction_raised");
  v1::RlJobSpec expected = job;
  expected.mutable_rollout()->set_memory_fraction(0.3);
  EXPECT_EQ(raised.setting(), RlKnobSetting(expected, RlKnob::kEngineMemoryFraction));
  EXPECT_EQ(raised.peak_device_bytes_after(), 65 * kGiB);
  EXPECT_EQ(raised.saved_bytes(), -static_cast<int64_t>(8 * kGiB));
  EXPECT_TRUE(raised.sufficient());
  EXPECT_THAT(r->summary(),
              StartsWith("Does not fit: generation cannot run: the engine's budget, 16 GiB, is "
                         "short of its weights and one sequence's KV; generation peaks at "));
  EXPECT_THAT(r->summary(), HasSubstr(absl::StrCat("first try ", raised.setting())));
}

// An engine that cannot start whatever its fraction (0.95 x 8 GiB = 7.6 GiB
// for 16 + 4, or 8 + 4 at engine TP 2): the changes that lower the peak are
// taken (log-prob 83 -> 63 with half its budget, then the actor update binds
// at 59 after the optimizer's offload, then 51 with half the training
// budget), but none lets the engine start, so none is sufficient.
TEST(RlAdmissionTest, AFailingEngineIsNotCuredByALowerPeak) {
  v1::RlJobSpec job = VerlJob();
  job.mutable_rollout()->set_memory_fraction(0.95);
  // 0.95 x 8 GiB = 7.6 GiB for 16 + 4 (8 + 4 at engine TP 2): no fraction
  // up to 0.95 and no engine TP is enough.
  v1::GpuSpec small;
  small.set_memory_bytes(8 * kGiB);
  absl::StatusOr<v1::CheckResponse> r = Check(job, {}, small);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  std::vector<std::string> ids;
  for (const v1::Recommendation& rec : r->recommendations()) {
    ids.push_back(rec.id());
    EXPECT_FALSE(rec.sufficient()) << rec.setting();
  }
  EXPECT_THAT(ids, testing::ElementsAre("log_prob_tokens_halved", "optimizer_offload",
                                        "train_tokens_halved"));
  EXPECT_EQ(r->recommendations(0).saved_bytes(), static_cast<int64_t>(20 * kGiB));
  EXPECT_EQ(r->recommendations(1).peak_device_bytes_after(), 59 * kGiB);
  EXPECT_EQ(r->recommendations(2).peak_device_bytes_after(), 51 * kGiB);
  EXPECT_THAT(r->summary(), HasSubstr("a 8.0 GiB GPU"));
  EXPECT_THAT(r->summary(), HasSubstr("even with all 3 recommended changes it needs 51.0 GiB"));
}

// An RL job never gets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (no
// environment step at all); one that sets it with vLLM's sleep pool before
// 0.20 gets the incompatibility that unsets it, naming PYTORCH_ALLOC_CONF.
TEST(RlAdmissionTest, ExpandableSegmentsNeverRecommendedForSleepingEngines) {
  v1::RlJobSpec job = VerlJob();
  absl::StatusOr<v1::CheckResponse> r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::Recommendation& rec : r->recommendations()) {
    EXPECT_NE(rec.kind(), v1::Recommendation::KIND_ENVIRONMENT);
    EXPECT_THAT(rec.setting(), Not(HasSubstr("expandable_segments")));
  }
  job.mutable_actor()->mutable_runtime()->set_expandable_segments(true);
  job.mutable_rollout()->set_version("0.10.2");
  r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Recommendation& last = r->recommendations(r->recommendations_size() - 1);
  EXPECT_EQ(last.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  EXPECT_EQ(last.id(), "expandable_segments_with_sleep_mode");
  EXPECT_THAT(last.setting(), HasSubstr("unset expandable_segments:True"));
  EXPECT_THAT(last.setting(), HasSubstr("PYTORCH_ALLOC_CONF first"));
  EXPECT_THAT(r->summary(), HasSubstr("also, as given it will not start: vLLM's sleep-mode"));
  // vLLM 0.20 disables them inside its pool; an engine that never sleeps
  // has no pool.
  job.mutable_rollout()->set_version("0.20.1");
  r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::Recommendation& rec : r->recommendations()) {
    EXPECT_NE(rec.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  }
  job.mutable_rollout()->set_version("0.10.2");
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_NONE);
  r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::Recommendation& rec : r->recommendations()) {
    EXPECT_NE(rec.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  }
  // SGLang pauses through torch_memory_saver, whatever the version.
  job.mutable_rollout()->clear_sleep();
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_SGLANG);
  r = Check(job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->recommendations(r->recommendations_size() - 1).id(),
            "expandable_segments_with_sleep_mode");
}

// With a critic whose update binds, 100 GiB / its PP size on both ranks
// (bound 1 above), over the log-prob phase's 83: the RL ladder's changes
// leave the critic's peak as it is, so none is taken; the pretraining
// ladder's Megatron-Core changes of the critic's job follow, in veRL's
// critic keys: recomputing the norms changes nothing here, PP 2 leaves the
// critic at 51 and the step at 83 (log-prob binds): saves 18 GiB, not
// enough, and the Megatron changes stop where the binding phase is no
// training phase.
TEST(RlAdmissionTest, CriticsMegatronChangesFollowTheRlLadder) {
  v1::RlJobSpec job = VerlJob();
  v1::JobSpec* critic = job.mutable_critic()->mutable_job();
  critic->mutable_parallelism()->set_num_gpus(8);
  critic->mutable_training()->set_seq_length(8192);
  auto with_critic = [](const v1::RlJobSpec& j,
                        const RlStepOptions& o) -> absl::StatusOr<v1::RlStepReport> {
    absl::StatusOr<v1::RlStepReport> step = FakeStep(j, o);
    if (!step.ok()) return step;
    v1::RlPhaseReport* phase = step->add_phases();
    phase->set_phase("critic");
    const uint32_t pp =
        std::max<uint32_t>(j.critic().job().parallelism().pipeline_model_parallel_size(), 1);
    for (uint32_t r = 0; r < 2; ++r) {
      v1::RlPhaseRank* rank = phase->add_ranks();
      rank->set_pp_rank(r);
      AddTerm(rank, "critic model state", 100.0 / pp, j, RlKnob::kCriticTrainTokens);
      rank->set_peak_device_upper_bytes(rank->peak_device_bytes() + kGiB);
    }
    return step;
  };
  absl::StatusOr<v1::CheckResponse> r = CheckRlJob(job, H100(), {}, with_critic);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->compared_peak_bytes(), 101 * kGiB);
  ASSERT_EQ(r->recommendations_size(), 1);
  const v1::Recommendation& pp = r->recommendations(0);
  EXPECT_EQ(pp.id(), "more_pipeline_parallel");
  EXPECT_EQ(pp.setting(), "critic.megatron.pipeline_model_parallel_size=2");
  EXPECT_EQ(pp.peak_device_bytes_after(), 83 * kGiB);
  EXPECT_EQ(pp.saved_bytes(), static_cast<int64_t>(18 * kGiB));
  EXPECT_FALSE(pp.sufficient());
}

// Settings oomguard does not model: not judged (JOB_NOT_MODELLED) unless
// the policy says to judge it, then the verdict says so.
TEST(RlAdmissionTest, UnmodelledSettingsAsCheckJob) {
  v1::RlJobSpec job = VerlJob();
  v1::UnmodelledSetting* s = job.add_unmodelled_settings();
  s->set_flag("actor_rollout_ref.rollout.multi_turn.enable");
  s->set_reason("multi-turn rollouts are not modelled");
  absl::StatusOr<v1::CheckResponse> r = Check(job);
  ASSERT_TRUE(absl::IsUnimplemented(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("actor_rollout_ref.rollout.multi_turn.enable"));
  AdmissionOptions judge;
  judge.judge_unmodelled = true;
  r = Check(job, judge);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->summary(),
              StartsWith("Does not fit, judged without modelling "
                         "actor_rollout_ref.rollout.multi_turn.enable: log-prob peaks"));
  EXPECT_EQ(r->unmodelled_settings_size(), 1);
  // Invalid in what oomguard reads: invalid, not "not judged".
  job.mutable_actor()->mutable_training()->set_seq_length(0);
  r = Check(job);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST(RlAdmissionTest, InputsValidatedAndDeadline) {
  AdmissionOptions bad;
  bad.safety_margin = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(Check(VerlJob(), bad).status()));
  v1::GpuSpec none;
  EXPECT_TRUE(absl::IsInvalidArgument(Check(VerlJob(), {}, none).status()));
  AdmissionOptions late;
  late.deadline = Deadline(absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(Check(VerlJob(), late).status()));
}

}  // namespace
}  // namespace oomguard
