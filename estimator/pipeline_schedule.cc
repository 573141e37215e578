#include "estimator/pipeline_schedule.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/status_macros.h"

namespace oomguard {
namespace {

// Steps through micro-batches k = 0, 1, ... of a schedule that runs them in
// groups of g per model chunk, chunks 0..v-1 in turn: chunk() is
// (k mod g*v) / g.
class ChunkCursor {
 public:
  // Starts at micro-batch k = start, in [0, g*v).
  ChunkCursor(int64_t g, int64_t v, int64_t start = 0)
      : g_(g), v_(v), chunk_(start / g), in_group_(start % g) {}
  int64_t chunk() const { return chunk_; }
  void Next() {
    if (++in_group_ < g_) return;
    in_group_ = 0;
    if (++chunk_ == v_) chunk_ = 0;
  }

 private:
  const int64_t g_, v_;
  int64_t chunk_, in_group_;
};

}  // namespace

absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t r,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline) {
  const int64_t p = j.parallelism.pp, v = static_cast<int64_t>(chunk_bytes.size()),
                n = j.training.num_microbatches;
  InFlight out;
  out.per_chunk.assign(v, 0);
  const int64_t overlap = j.parallelism.overlap_moe_ep ? 1 : 0;
  if (v == 1) {
    // No interleaving: rank r runs p - r - 1 warm-up forwards, then one more
    // forward before its first backward. With the EP overlap (Megatron-Core
    // takes it only at PP = 1: combined_1f1b_schedule_for_no_pipelining in
    // megatron/core/pipeline_parallel/combined_1f1b.py) the next
    // micro-batch's forward runs beside each backward: one more in flight.
    out.per_chunk[0] = std::min(p - r + overlap, n);
    out.held_bytes = static_cast<double>(out.per_chunk[0]) * chunk_bytes[0];
    return out;
  }
  // Interleaved: forwards go through chunks in groups of g micro-batches;
  // backwards visit chunks in reverse order.
  const int64_t g = j.parallelism.group_size, period = g * v, total = n * v;
  int64_t warmup = 2 * (p - r - 1) + (v - 1) * g + overlap;
  warmup = std::min(warmup, total);
  // The warm-up only adds: its peak is its end, where chunk c holds the
  // forwards k < warmup with (k mod g*v) / g = c.
  ChunkCounts live(v, 0);
  double bytes = 0;
  for (int64_t c = 0; c < v; ++c) {
    live[c] = warmup / period * g + std::clamp<int64_t>(warmup % period - c * g, 0, g);
    bytes += static_cast<double>(live[c]) * chunk_bytes[c];
  }
  out.per_chunk = live;
  out.held_bytes = bytes;
  // Steady state: one forward, then one backward. After step i's forward a
  // chunk holds its forwards among the first warmup + i + 1 minus its
  // backwards among the first i; both gain g per g*v steps, so the live set
  // repeats with period g*v and one period holds every state. The forward
  // of step i runs chunk ((warmup + i) mod g*v) / g, the backward
  // v - 1 - (i mod g*v) / g; cursors step them without dividing.
  ChunkCursor forward(g, v, warmup % period), backward(g, v);
  const int64_t steps = std::min(total - warmup, period);
  for (int64_t i = 0; i < steps; ++i, forward.Next(), backward.Next()) {
    OOMGUARD_RETURN_IF_ERROR(deadline.CheckEvery(i, "walking the pipeline schedule"));
    const int64_t f = forward.chunk();
    ++live[f];
    bytes += chunk_bytes[f];
    if (bytes > out.held_bytes) {
      out.held_bytes = bytes;
      out.per_chunk = live;
    }
    const int64_t b = v - 1 - backward.chunk();
    --live[b];
    bytes -= chunk_bytes[b];
  }
  return out;
}

}  // namespace oomguard
