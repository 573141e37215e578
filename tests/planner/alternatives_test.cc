// The planner inside an admission check: a job that does not fit gets the
// configurations that fit on the same GPUs; a job that fits but runs a slow
// layout gets a clearly faster one.
#include "planner/alternatives.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admission/admission.h"
#include "admission/gpu_catalog.h"
#include "jobspec/job_builder.h"
#include "planner/plan_cache.h"

namespace oomguard {
namespace {

v1::JobSpec Job(const std::string& preset, uint32_t gpus, const std::string& args) {
  JobInputs src;
  src.preset = preset;
  src.num_gpus = gpus;
  src.megatron_args = absl::StrSplit(args, ' ', absl::SkipEmpty());
  auto job = BuildJob(src, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : v1::JobSpec();
}

v1::CheckResponse CheckWithAlternatives(const v1::JobSpec& job, PlanCache* cache = nullptr) {
  const v1::GpuSpec gpu = *GpuCatalog::Builtin().Find("H100-SXM-80GB");
  auto checked =
      CheckJob(job, gpu, AdmissionOptions{.safety_margin = 0.05, .deadline = Deadline()});
  EXPECT_TRUE(checked.ok()) << checked.status();
  if (!checked.ok()) return {};
  // A generous budget: the test machine's speed must not decide.
  EXPECT_TRUE(AddAlternatives(job, gpu, Deadline(), cache, &*checked).ok());
  return *checked;
}

TEST(Alternatives, DoesNotFitNamesConfigurationsThatFit) {
  // Llama-3 70B on 32 GPUs with TP 1 (DP 32): far over 80 GB.
  const v1::CheckResponse r =
      CheckWithAlternatives(Job("llama3-70b", 32,
                                "--seq-length 4096 --global-batch-size 64 --micro-batch-size 1 "
                                "--use-distributed-optimizer"));
  ASSERT_EQ(r.verdict(), v1::VERDICT_DOES_NOT_FIT);
  ASSERT_FALSE(r.alternatives().empty());
  EXPECT_LE(r.alternatives_size(), kMaxAlternatives);
  for (const v1::Alternative& a : r.alternatives()) {
    EXPECT_LE(a.peak_device_bytes(), r.usable_bytes()) << a.description();
    EXPECT_EQ(a.speedup(), 0);
    EXPECT_NE(a.megatron_args().find("--micro-batch-size 1"), std::string::npos);
  }
}

TEST(Alternatives, FitsButSlowNamesAClearlyFasterOne) {
  // Llama-3 8B on 8 GPUs at TP 8: fits, and TP 1 (or 2) is much faster.
  const v1::CheckResponse r = CheckWithAlternatives(
      Job("llama3-8b", 8,
          "--seq-length 4096 --global-batch-size 64 --micro-batch-size 1 "
          "--tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer"));
  ASSERT_NE(r.verdict(), v1::VERDICT_DOES_NOT_FIT);
  ASSERT_EQ(r.alternatives_size(), 1);
  EXPECT_GE(r.alternatives(0).speedup(), 1.1);
  EXPECT_EQ(r.alternatives(0).megatron_args().find("--tensor-model-parallel-size 8"),
            std::string::npos);
}

// An alternative's arguments go on top of the job's own line: a job that
// runs --moe-shared-expert-overlap is offered no --overlap-moe-expert-
// parallel-comm, which Megatron-Core refuses beside it; without it, the
// fastest alternatives hide the all-to-all that way.
TEST(Alternatives, KeepTheOverlapsTheJobChose) {
  const std::string job =
      "--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 "
      "--moe-token-dispatcher-type flex --moe-grouped-gemm --expert-model-parallel-size 8";
  for (const bool shared : {false, true}) {
    const v1::CheckResponse r = CheckWithAlternatives(
        Job("qwen3-30b-a3b", 32, job + (shared ? " --moe-shared-expert-overlap" : "")));
    ASSERT_EQ(r.verdict(), v1::VERDICT_DOES_NOT_FIT);
    ASSERT_GT(r.alternatives_size(), 0);
    int overlapped = 0;
    for (const v1::Alternative& a : r.alternatives()) {
      overlapped +=
          a.megatron_args().find("--overlap-moe-expert-parallel-comm") != std::string::npos;
    }
    EXPECT_EQ(overlapped > 0, !shared) << r.DebugString();
  }
}

// The plan behind the alternatives is kept per model and shape: the same
// job in another layout (here TP 4 instead of 8) is answered from it, and
// every answer is the one made without the cache. A cache hit is seen by
// a deadline that has already passed: only a hit can answer then.
TEST(Alternatives, PlanCacheServesOtherLayoutsOfTheSameShape) {
  const std::string shape =
      "--seq-length 4096 --global-batch-size 64 --micro-batch-size 1 --sequence-parallel "
      "--use-distributed-optimizer ";
  const v1::JobSpec tp8 = Job("llama3-8b", 8, shape + "--tensor-model-parallel-size 8");
  const v1::JobSpec tp4 = Job("llama3-8b", 8, shape + "--tensor-model-parallel-size 4");
  PlanCache cache(1 << 20);
  const v1::CheckResponse first = CheckWithAlternatives(tp8, &cache);
  EXPECT_EQ(first.SerializeAsString(), CheckWithAlternatives(tp8).SerializeAsString());

  const v1::GpuSpec gpu = *GpuCatalog::Builtin().Find("H100-SXM-80GB");
  auto checked =
      CheckJob(tp4, gpu, AdmissionOptions{.safety_margin = 0.05, .deadline = Deadline()});
  ASSERT_TRUE(checked.ok()) << checked.status();
  v1::CheckResponse from_cache = *checked;
  const Deadline passed(absl::Now() - absl::Seconds(1));
  ASSERT_TRUE(AddAlternatives(tp4, gpu, passed, &cache, &from_cache).ok());
  EXPECT_EQ(from_cache.SerializeAsString(), CheckWithAlternatives(tp4).SerializeAsString());
  ASSERT_EQ(from_cache.alternatives_size(), 1);

  // A different shape is not in it: its search meets the passed deadline.
  const v1::JobSpec longer =
      Job("llama3-8b", 8,
          "--seq-length 8192 --global-batch-size 64 --micro-batch-size 1 "
          "--tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer");
  checked = CheckJob(longer, gpu, AdmissionOptions{.safety_margin = 0.05, .deadline = Deadline()});
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(AddAlternatives(longer, gpu, passed, &cache, &*checked)));
}

TEST(PlanCacheKey, NamesEverythingThePlanDependsOn) {
  const v1::JobSpec job = Job("llama3-8b", 8, "--seq-length 4096 --global-batch-size 64");
  PlanCluster cluster;
  cluster.gpu = *GpuCatalog::Builtin().Find("H100-SXM-80GB");
  const PlanOptions options;
  const std::string key = PlanCacheKey(job, cluster, options);
  EXPECT_EQ(key, PlanCacheKey(job, cluster, options));
  v1::JobSpec other = job;
  other.mutable_training()->set_seq_length(8192);
  EXPECT_NE(key, PlanCacheKey(other, cluster, options));
  PlanCluster h200 = cluster;
  h200.gpu = *GpuCatalog::Builtin().Find("H200-SXM-141GB");
  EXPECT_NE(key, PlanCacheKey(job, h200, options));
  PlanCluster four = cluster;
  four.gpus_per_node = 4;
  EXPECT_NE(key, PlanCacheKey(job, four, options));
  PlanOptions margin = options;
  margin.memory_margin = 1e-9;
  EXPECT_NE(key, PlanCacheKey(job, cluster, margin));
  PlanOptions point = options;
  point.compare_upper_bound = false;
  EXPECT_NE(key, PlanCacheKey(job, cluster, point));
  PlanOptions limit = options;
  limit.limit = 3;
  EXPECT_NE(key, PlanCacheKey(job, cluster, limit));
}

}  // namespace
}  // namespace oomguard
