// PeakInFlight (estimator/pipeline_schedule.h) against a simulation of
// Megatron-Core's interleaved 1F1B schedule, every forward and backward of
// every micro-batch on every chunk: the closed-form counts and the steps
// PeakInFlight walks must find the same peak, with the same micro-batches
// per chunk, for whole and partial micro-batch groups.
#include "estimator/pipeline_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
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

struct Event {
  bool forward;
  int64_t microbatch;
  int64_t chunk;
  // A forward run with the next event, a backward, as one combined step
  // (the EP overlap's combined 1F1B): the live set is looked at after both.
  bool combined_with_next = false;
};

// What rank r of Megatron-Core's forward_backward_pipelining_with_interleaving
// (megatron/core/pipeline_parallel/schedules.py) runs, in order. The forward
// order is the schedule table: micro-batches 0..n-1 cut into groups of g
// from the start (the last one shorter when g does not divide n), each
// group run on chunk 0, then 1, ..., then v - 1. The warm-up runs
// 2 (p - r - 1) + (v - 1) g forwards (one more with the EP overlap), all
// of them when there are fewer; then each step runs the next forward and
// the next backward (with the EP overlap as one combined step,
// combined_1f1b_schedule_for_interleaved_pipelining); the cool-down the
// backwards left. The k-th backward
// runs chunk v - 1 - (the k-th forward's chunk), on that chunk's oldest
// micro-batch not yet run backward.
std::vector<Event> InterleavedEvents(int64_t p, int64_t r, int64_t v, int64_t g, int64_t n,
                                     bool overlap) {
  std::vector<Event> table;
  for (int64_t first = 0; first < n; first += g) {
    const int64_t end = std::min(first + g, n);
    for (int64_t c = 0; c < v; ++c) {
      for (int64_t m = first; m < end; ++m) table.push_back(Event{true, m, c});
    }
  }
  const int64_t total = n * v;
  const int64_t warmup = std::min(2 * (p - r - 1) + (v - 1) * g + (overlap ? 1 : 0), total);
  std::vector<std::deque<int64_t>> waiting(v);  // Forwards run, per chunk, oldest first.
  std::vector<Event> events;
  int64_t forwards = 0, backwards = 0;
  const auto forward = [&] {
    const Event& e = table[forwards++];
    waiting[e.chunk].push_back(e.microbatch);
    events.push_back(e);
  };
  const auto backward = [&] {
    const int64_t c = v - 1 - table[backwards++].chunk;
    EXPECT_FALSE(waiting[c].empty()) << "backward before its forward on chunk " << c;
    if (waiting[c].empty()) return;
    events.push_back(Event{false, waiting[c].front(), c});
    waiting[c].pop_front();
  };
  while (forwards < warmup) forward();
  while (forwards < total) {
    forward();
    events.back().combined_with_next = overlap;
    backward();
  }
  while (backwards < total) backward();
  return events;
}

// The events walked: micro-batches live on each chunk between their forward
// and their backward; the peak is the largest weighted live set, the first
// one on a tie.
InFlight Simulate(const std::vector<Event>& events, const std::vector<double>& bytes) {
  ChunkCounts live(bytes.size(), 0);
  InFlight peak;
  peak.per_chunk = live;
  double held = 0;
  for (const Event& e : events) {
    live[e.chunk] += e.forward ? 1 : -1;
    held += e.forward ? bytes[e.chunk] : -bytes[e.chunk];
    if (e.combined_with_next) {
      peak.combined_steps = true;
      continue;
    }
    if (held > peak.held_bytes) {
      peak.held_bytes = held;
      peak.per_chunk = live;
    }
  }
  return peak;
}

// Megatron-Core runs the interleaved schedule only when g is in [p, n] and
// the last group is whole or holds at least p micro-batches
// (CheckMicroBatchGroups, estimator/interleaved_schedule_rules.h).
bool Admitted(int64_t p, int64_t g, int64_t n) {
  return p <= g && g <= n && (n % g == 0 || n % g >= p);
}

// Every admitted schedule with p in [2, 6], v in [2, 5], g in [p, 2p + 1],
// n up to 3g + p, with and without the EP overlap, on every rank, with chunk
// sizes drawn from a fixed seed (whole MiB, so sums are exact) and with
// equal chunk sizes (ties keep the first peak).
TEST(PeakInFlight, EqualsTheSimulatedSchedule) {
  std::mt19937_64 random(25);
  std::uniform_int_distribution<int64_t> mib(1, 4096);
  int cases = 0, partial = 0;
  for (int64_t pp = 2; pp <= 6; ++pp) {
    for (int64_t v = 2; v <= 5; ++v) {
      for (int64_t group = pp; group <= 2 * pp + 1; ++group) {
        for (int64_t n = 1; n <= 3 * group + pp; ++n) {
          if (!Admitted(pp, group, n)) continue;
          for (const bool overlap : {false, true}) {
            const ValidatedJob j = Schedule(pp, group, n, overlap);
            for (int64_t r = 0; r < pp; ++r) {
              const std::vector<Event> events = InterleavedEvents(pp, r, v, group, n, overlap);
              std::vector<double> drawn(v);
              for (double& b : drawn) b = static_cast<double>(mib(random)) * 1048576.0;
              for (const std::vector<double>& bytes : {drawn, std::vector<double>(v, 1e9)}) {
                const absl::StatusOr<InFlight> fast = PeakInFlight(j, r, bytes);
                ASSERT_TRUE(fast.ok()) << fast.status();
                const InFlight slow = Simulate(events, bytes);
                EXPECT_EQ(fast->per_chunk, slow.per_chunk)
                    << "pp " << pp << " v " << v << " group " << group << " microbatches " << n
                    << " overlap " << overlap << " rank " << r;
                EXPECT_EQ(fast->held_bytes, slow.held_bytes)
                    << "pp " << pp << " v " << v << " group " << group << " microbatches " << n
                    << " overlap " << overlap << " rank " << r;
                EXPECT_EQ(fast->combined_steps, slow.combined_steps)
                    << "pp " << pp << " v " << v << " group " << group << " microbatches " << n
                    << " overlap " << overlap << " rank " << r;
                ++cases;
                if (n % group != 0) ++partial;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 20320);
  EXPECT_EQ(partial, 13760);  // With a partial group.
}

// Megatron-Core's own example of a partial group (get_schedule_table's
// comment: PP 2, VP 2, groups of 3, 5 micro-batches): forwards run chunks
// 0 0 0 1 1 1 0 0 1 1, backwards chunks 1 1 1 0 0 0 1 1 0 0. Rank 1 warms
// up with (2 - 1) x 3 forwards, all on chunk 0; the last two steps run
// micro-batches 3 and 4 forward on chunk 1 while the backwards are still on
// chunk 0, so chunk 1 ends up holding 2 (whole groups of 3 would hold 1).
TEST(PeakInFlight, PartialGroupFollowsMegatronsExample) {
  const absl::StatusOr<InFlight> peak = PeakInFlight(Schedule(2, 3, 5, false), 1, {1e9, 1e10});
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_THAT(peak->per_chunk, ElementsAre(2, 2));
  EXPECT_DOUBLE_EQ(peak->held_bytes, 2e9 + 2e10);
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
// micro-batch i's backward, layer by layer (combined_1f1b_schedule_for_no_
// pipelining, TransformerModelChunkSchedulePlan.run): one micro-batch whole
// at a time, as without the overlap; the steps are combined only when the
// iteration has a second micro-batch.
TEST(PeakInFlight, ExpertParallelOverlapWithoutPipeliningHoldsOne) {
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 8, false), 0, {2e9})->per_chunk, ElementsAre(1));
  EXPECT_FALSE(PeakInFlight(Schedule(1, 1, 8, false), 0, {2e9})->combined_steps);
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 8, true), 0, {2e9})->per_chunk, ElementsAre(1));
  EXPECT_DOUBLE_EQ(PeakInFlight(Schedule(1, 1, 8, true), 0, {2e9})->held_bytes, 2e9);
  EXPECT_TRUE(PeakInFlight(Schedule(1, 1, 8, true), 0, {2e9})->combined_steps);
  EXPECT_THAT(PeakInFlight(Schedule(1, 1, 1, true), 0, {2e9})->per_chunk, ElementsAre(1));
  EXPECT_FALSE(PeakInFlight(Schedule(1, 1, 1, true), 0, {2e9})->combined_steps);
}

// With interleaving, the overlap's extra warm-up forward stays; a steady
// step takes one chunk's forward and another's backward together. PP 2,
// VPP 2, groups of 2, 4 micro-batches, rank 1, 10 GB a micro-batch on chunk
// 0 and 1 GB on chunk 1. Forwards run chunks 0 0 1 1 0 0 1 1, backwards
// chunks 1 1 0 0 1 1 0 0. Warm-up 2 x 0 + 1 x 2 + 1 = 3 forwards: (2, 1).
// Step 0: forward chunk 1, backward chunk 1: (2, 1). Step 1: forward chunk
// 0, backward chunk 1: (3, 0) = 30 GB. Step 2: forward chunk 0, backward
// chunk 0: (3, 0) again, the peak. Counting the forward before the backward
// (as before the combined step was modelled) would hold (4, 0) in step 2.
TEST(PeakInFlight, ExpertParallelOverlapInterleavedCountsAfterEachStep) {
  const absl::StatusOr<InFlight> with = PeakInFlight(Schedule(2, 2, 4, true), 1, {1e10, 1e9});
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_THAT(with->per_chunk, ElementsAre(3, 0));
  EXPECT_DOUBLE_EQ(with->held_bytes, 3e10);
  EXPECT_TRUE(with->combined_steps);
}

}  // namespace
}  // namespace oomguard
