// PeakInFlight (estimator/pipeline_schedule.h) against a walk of the whole
// interleaved 1F1B schedule, every forward and backward of every
// micro-batch: the closed-form warm-up and the one steady period it walks
// must find the same peak, with the same micro-batches per chunk.
#include "estimator/pipeline_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace oomguard {
namespace {

using ::testing::ElementsAre;

ValidatedJob Schedule(int64_t pp, int64_t group, int64_t microbatches, bool overlap) {
  ValidatedJob j;
  j.parallelism.pp = pp;
  j.parallelism.group_size = group;
  j.parallelism.overlap_moe_ep = overlap;
  j.training.num_microbatches = microbatches;
  return j;
}

// The schedule of Megatron-Core's forward_backward_pipelining_with_interleaving
// for rank r, walked to its end: the warm-up forwards, then one forward and
// one backward per step while forwards remain, then the cool-down backwards
// (which only free). Forward k runs chunk (k mod g*v) / g, backward k
// chunk v - 1 - (k mod g*v) / g.
InFlight WalkEverything(const ValidatedJob& j, int64_t r, const std::vector<double>& bytes) {
  const int64_t p = j.parallelism.pp, g = j.parallelism.group_size,
                v = static_cast<int64_t>(bytes.size()), total = j.training.num_microbatches * v;
  const int64_t warmup =
      std::min(2 * (p - r - 1) + (v - 1) * g + (j.parallelism.overlap_moe_ep ? 1 : 0), total);
  ChunkCounts live(v, 0);
  double held = 0;
  InFlight peak;
  peak.per_chunk.assign(v, 0);
  auto consider = [&] {
    if (held > peak.held_bytes) {
      peak.held_bytes = held;
      peak.per_chunk = live;
    }
  };
  int64_t forwards = 0, backwards = 0;
  auto forward = [&] {
    const int64_t c = (forwards++ % (g * v)) / g;
    ++live[c];
    held += bytes[c];
  };
  auto backward = [&] {
    const int64_t c = v - 1 - (backwards++ % (g * v)) / g;
    --live[c];
    held -= bytes[c];
  };
  while (forwards < warmup) forward();
  consider();
  while (forwards < total) {
    forward();
    consider();
    backward();
  }
  return peak;
}

TEST(PeakInFlight, EqualsTheWholeScheduleWalked) {
  int cases = 0;
  for (const int64_t pp : {2, 3, 4, 8}) {
    for (const int64_t v : {2, 3, 5}) {
      for (const int64_t group : {pp, pp + 1, 2 * pp}) {
        for (const int64_t microbatches : {group, 2 * group, 3 * group + 1, 7 * group}) {
          for (const bool overlap : {false, true}) {
            const ValidatedJob j = Schedule(pp, group, microbatches, overlap);
            // Chunks of unequal size (the first and last stages differ), and
            // of equal size (ties keep the first peak).
            for (const std::vector<double>& sizes :
                 {std::vector<double>{3e9, 1e9, 2e9, 5e8, 4e9},
                  std::vector<double>{1e9, 1e9, 1e9, 1e9, 1e9}}) {
              const std::vector<double> bytes(sizes.begin(), sizes.begin() + v);
              for (int64_t r = 0; r < pp; ++r) {
                const absl::StatusOr<InFlight> fast = PeakInFlight(j, r, bytes);
                ASSERT_TRUE(fast.ok()) << fast.status();
                const InFlight slow = WalkEverything(j, r, bytes);
                EXPECT_EQ(fast->per_chunk, slow.per_chunk)
                    << "pp " << pp << " v " << v << " group " << group << " microbatches "
                    << microbatches << " overlap " << overlap << " rank " << r;
                EXPECT_DOUBLE_EQ(fast->held_bytes, slow.held_bytes)
                    << "pp " << pp << " v " << v << " group " << group << " microbatches "
                    << microbatches << " overlap " << overlap << " rank " << r;
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2448);  // 17 ranks x 3 chunk counts x 3 x 4 x 2 x 2.
}

// Without interleaving, rank r holds p - r micro-batches (1F1B), fewer when
// the iteration has fewer.
TEST(PeakInFlight, PlainOneFOneBHoldsPipelineDepthMinusRank) {
  const ValidatedJob j = Schedule(4, 4, 8, false);
  EXPECT_THAT(PeakInFlight(j, 0, {2e9})->per_chunk, ElementsAre(4));
  EXPECT_THAT(PeakInFlight(j, 3, {2e9})->per_chunk, ElementsAre(1));
  EXPECT_DOUBLE_EQ(PeakInFlight(j, 1, {2e9})->held_bytes, 6e9);
  EXPECT_THAT(PeakInFlight(Schedule(4, 4, 2, false), 0, {2e9})->per_chunk, ElementsAre(2));
}

// Without pipelining, the EP overlap runs micro-batch i + 1's forward beside
// micro-batch i's backward (combined_1f1b_schedule_for_no_pipelining): two
// in flight, one when the iteration has one.
TEST(PeakInFlight, ExpertParallelOverlapWithoutPipeliningHoldsTwo) {
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 8, false), 0, {2e9})->per_chunk, ElementsAre(1));
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 8, true), 0, {2e9})->per_chunk, ElementsAre(2));
  EXPECT_DOUBLE_EQ(PeakInFlight(Schedule(1, 1, 8, true), 0, {2e9})->held_bytes, 4e9);
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 1, true), 0, {2e9})->per_chunk, ElementsAre(1));
}

}  // namespace
}  // namespace oomguard
