// Layer-level activation offloading (issue 25, item 3) through the real
// estimator and admission: `--cpu-offloading`, a flag no Megatron-LM release
// has, turns nothing on and is never recommended; `--cpu-offloading-num-layers
// N`, Megatron-Core's flag, alone offloads N layers, by the bytes derived
// below; the settings Megatron-Core refuses it with are flagged; and every
// flag the ladder writes is Megatron-LM's.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "admission/admission.h"
#include "admission/gpu_catalog.h"
#include "admission/recommendations.h"
#include "estimator/estimator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_builder.h"
#include "jobspec/presets.h"
#include "tests/testing/megatron_lm_arguments.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// The reproducer: Llama-3 8B on 8 GPUs, TP 8 (no sequence parallelism), at
// a 128k sequence, then `extra`.
struct BuiltJob {
  v1::JobSpec job;
  std::vector<std::string> notes;
};
BuiltJob Llama3At128k(const std::vector<std::string>& extra) {
  JobInputs src;
  src.preset = "llama3-8b";
  src.num_gpus = 8;
  src.megatron_args = {"--tensor-model-parallel-size", "8",      "--seq-length",       "131072",
                       "--max-position-embeddings",    "131072", "--micro-batch-size", "1",
                       "--global-batch-size",          "8"};
  src.megatron_args.insert(src.megatron_args.end(), extra.begin(), extra.end());
  BuiltJob built;
  absl::StatusOr<v1::JobSpec> job = BuildJob(src, &built.notes);
  EXPECT_TRUE(job.ok()) << job.status();
  if (job.ok()) built.job = *std::move(job);
  return built;
}

v1::GpuSpec H100() { return *GpuCatalog::Builtin().Find("H100-SXM-80GB"); }

// One Llama-3 8B layer's activations at TP 8 without sequence parallelism,
// s = 131072, b = 1, bf16 (s x h x 2 bytes = 1 GiB), in MiB: each of the two
// RMSNorms keeps its input and its output (TE's LayerNormLinear keeps ln_out
// for the weight gradient), 4 x 1024, and its fp32 rstdev, 2 x 0.5; the
// attention keeps q (4 heads x 128), k and v (1 head x 128), q and k before
// RoPE, its output, 128 + 32 + 32 + 128 + 32 + 128, and flash attention's
// fp32 log-sum-exp, 131072 x 4 heads x 4 bytes = 2; the MLP keeps fc1's
// output (2 x 14336 / 8 columns) and the SwiGLU's (14336 / 8), 896 + 448.
constexpr uint64_t kLayerActivationBytes =
    (4 * 1024 + 1 + 128 + 32 + 32 + 128 + 32 + 128 + 2 + 896 + 448) * kMiB;  // 5923 MiB.

v1::EstimateReport Estimated(const v1::JobSpec& job) {
  absl::StatusOr<v1::EstimateReport> report = Estimate(job);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : v1::EstimateReport();
}

// Before: `--cpu-offloading` was read as offloading 31 of the 32 layers
// (Fits, 46.0 GiB point estimate). Now it is an unknown flag, as Megatron-LM's
// parser has it: not modelled (the job is not judged unless asked), and
// judged anyway it is the job estimated as written without it.
TEST(ActivationCpuOffload, CpuOffloadingIsNoFlagAndTurnsNothingOn) {
  const BuiltJob with = Llama3At128k({"--cpu-offloading"});
  ASSERT_EQ(with.job.unmodelled_settings_size(), 1);
  EXPECT_EQ(with.job.unmodelled_settings(0).flag(), "--cpu-offloading");
  BuiltJob without = Llama3At128k({});
  *without.job.mutable_unmodelled_settings() = with.job.unmodelled_settings();
  EXPECT_EQ(with.job.SerializeAsString(), without.job.SerializeAsString());

  EXPECT_EQ(CheckJob(with.job, H100(), AdmissionOptions()).status().code(),
            absl::StatusCode::kUnimplemented);
  absl::StatusOr<v1::CheckResponse> r =
      CheckJob(with.job, H100(), AdmissionOptions{.judge_unmodelled = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_NEAR(r->peak_device_bytes() / kGiB, 239.8, 0.05);
  for (const v1::Recommendation& rec : r->recommendations()) {
    std::vector<std::string> words = absl::StrSplit(rec.setting(), ' ', absl::SkipEmpty());
    EXPECT_THAT(testing::FlagsMegatronLmLacks(words), IsEmpty()) << rec.setting();
  }
}

// Before: `--cpu-offloading-num-layers 31` alone was ignored (239.8 GiB, does
// not fit). Now it offloads the activations of layers 0 to 30: the rank keeps
// 31 layers' fewer, and the job fits.
TEST(ActivationCpuOffload, TheNumberOfLayersAloneOffloadsThem) {
  const v1::EstimateReport kept = Estimated(Llama3At128k({}).job);
  for (uint32_t n : {1u, 8u, 31u}) {
    const v1::JobSpec job = Llama3At128k({"--cpu-offloading-num-layers", std::to_string(n)}).job;
    EXPECT_EQ(job.recompute().cpu_offloading_num_layers(), n);
    const v1::EstimateReport offloaded = Estimated(job);
    EXPECT_EQ(kept.ranks(0).activation_bytes() - offloaded.ranks(0).activation_bytes(),
              n * kLayerActivationBytes)
        << n;
    // One offloaded layer is back on the GPU for its backward.
    EXPECT_GE(offloaded.ranks(0).transient_bytes(), kLayerActivationBytes) << n;
  }
  absl::StatusOr<v1::CheckResponse> r =
      CheckJob(Llama3At128k({"--cpu-offloading-num-layers", "31"}).job, H100(), AdmissionOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);
  EXPECT_NEAR(r->peak_device_bytes() / kGiB, 46.0, 0.05);
}

// The ladder offers Megatron-Core's flag, with the most layers it allows.
TEST(ActivationCpuOffload, TheLadderRecommendsTheRealFlag) {
  absl::StatusOr<v1::CheckResponse> r = CheckJob(Llama3At128k({}).job, H100(), AdmissionOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> settings;
  for (const v1::Recommendation& rec : r->recommendations()) {
    if (rec.id() == "activation_cpu_offload") settings.push_back(rec.setting());
  }
  EXPECT_THAT(settings, ::testing::ElementsAre("--cpu-offloading-num-layers 31"));
}

// Megatron-Core's refusals: N of at least the layers is a bad value; PP > 1
// and recompute are refused settings, flagged with the fix.
TEST(ActivationCpuOffload, MegatronCoresRefusals) {
  absl::StatusOr<v1::EstimateReport> all =
      Estimate(Llama3At128k({"--cpu-offloading-num-layers", "32"}).job);
  EXPECT_EQ(all.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(all.status().message()),
              HasSubstr("recompute.cpu_offloading_num_layers = 32: must be below "
                        "model.num_layers 32 (--cpu-offloading-num-layers"));

  for (const auto& [extra, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "2"},
            "with pipeline parallelism > 1"},
           {{"--recompute-activations"}, "with activation recompute"},
           {{"--cuda-graph-impl", "transformer_engine"}, "with per-layer CUDA graphs"},
       }) {
    std::vector<std::string> args = {"--cpu-offloading-num-layers", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<v1::CheckResponse> r =
        CheckJob(Llama3At128k(args).job, H100(), AdmissionOptions());
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<std::string> fixes;
    for (const v1::Recommendation& rec : r->recommendations()) {
      if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) fixes.push_back(rec.setting());
    }
    EXPECT_THAT(fixes, ::testing::Contains("drop --cpu-offloading-num-layers (Megatron-Core "
                                           "refuses it " +
                                           why + ")"))
        << why;
  }
}

// Every flag a recommendation writes, over every preset with a few settings,
// is in oomguard's flag table and in Megatron-LM's parser.
TEST(ActivationCpuOffload, EveryRecommendedFlagIsMegatronLms) {
  std::vector<RecommendedChange> changes;
  for (const LadderRung& rung : RecommendationLadder()) {
    changes.insert(changes.end(), rung.begin(), rung.end());
  }
  changes.insert(changes.end(), IncompatibilityFixes().begin(), IncompatibilityFixes().end());
  int settings = 0;
  for (const PresetInfo& preset : ListPresets()) {
    for (const char* extra :
         {"", "--cpu-offloading-num-layers 2 --pipeline-model-parallel-size 2",
          "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
          "--cuda-graph-impl transformer_engine --use-nccl-ub",
          "--tp-comm-overlap --overlap-moe-expert-parallel-comm --moe-shared-expert-overlap"}) {
      JobInputs src;
      src.preset = preset.name;
      src.num_gpus = 64;
      src.megatron_args = absl::StrSplit(
          absl::StrCat("--seq-length 4096 --global-batch-size 512 --micro-batch-size 1 ", extra),
          ' ', absl::SkipEmpty());
      absl::StatusOr<v1::JobSpec> job = BuildJob(src, nullptr);
      if (!job.ok()) continue;  // A setting this model has no use for.
      for (const RecommendedChange& change : changes) {
        v1::JobSpec changed = *job;
        std::optional<std::string> setting = change.Apply(H100(), &changed);
        if (!setting) continue;
        ++settings;
        std::vector<std::string> words;
        for (absl::string_view word : absl::StrSplit(*setting, ' ', absl::SkipEmpty())) {
          word = absl::StripPrefix(word, "(");
          word = absl::StripSuffix(absl::StripSuffix(word, ","), ")");
          words.emplace_back(word);
        }
        EXPECT_THAT(testing::FlagsMegatronLmLacks(words), IsEmpty())
            << preset.name << " with " << extra << ": " << change.id << ": " << *setting;
      }
    }
  }
  EXPECT_GE(settings, 100);
}

}  // namespace
}  // namespace oomguard
