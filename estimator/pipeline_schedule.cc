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
  ChunkCursor(int64_t g, int64_t v) : g_(g), v_(v) {}
  int64_t chunk() const { return chunk_; }
  void Next() {
    if (++in_group_ < g_) return;
    in_group_ = 0;
    if (++chunk_ == v_) chunk_ = 0;
  }

 private:
  const int64_t g_, v_;
  int64_t chunk_ = 0, in_group_ = 0;
};

}  // namespace

absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t r,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline) {
  const int64_t p = j.parallelism.pp, v = static_cast<int64_t>(chunk_bytes.size()),
                n = j.training.num_microbatches;
  InFlight out;
  out.per_chunk.assign(v, 0);
  if (v == 1) {
    // No interleaving: rank r runs p - r - 1 warm-up forwards, then one more
    // forward before its first backward.
    out.per_chunk[0] = std::min(p - r, n);
    out.held_bytes = static_cast<double>(out.per_chunk[0]) * chunk_bytes[0];
    return out;
  }
  // Interleaved: forwards go through chunks in groups of g micro-batches;
  // backwards visit chunks in reverse order.
  const int64_t g = j.parallelism.group_size, total = n * v;
  int64_t warmup = 2 * (p - r - 1) + (v - 1) * g + (j.parallelism.overlap_moe_ep ? 1 : 0);
  warmup = std::min(warmup, total);
  // The chunk of the k-th forward is (k mod g*v) / g; of the k-th backward
  // v - 1 minus that. Cursors step k without dividing.
  ChunkCursor forward(g, v), backward(g, v);
  std::vector<int64_t> live(v, 0);
  double bytes = 0;
  auto consider = [&] {
    if (bytes > out.held_bytes) {
      out.held_bytes = bytes;
      out.per_chunk = live;
    }
  };
  for (int64_t k = 0; k < warmup; ++k, forward.Next()) {
    OOMGUARD_RETURN_IF_ERROR(deadline.CheckEvery(k, "walking the pipeline schedule's warm-up"));
    ++live[forward.chunk()];
    bytes += chunk_bytes[forward.chunk()];
  }
  consider();
  // Steady state: one forward, then one backward. The live set is periodic
  // with period g * v, so two periods cover every distinct state.
  const int64_t steps = std::min(total - warmup, 2 * g * v + 2);
  for (int64_t i = 0; i < steps; ++i, forward.Next(), backward.Next()) {
    OOMGUARD_RETURN_IF_ERROR(deadline.CheckEvery(i, "walking the pipeline schedule"));
    const int64_t f = forward.chunk();
    ++live[f];
    bytes += chunk_bytes[f];
    consider();
    const int64_t b = v - 1 - backward.chunk();
    --live[b];
    bytes -= chunk_bytes[b];
  }
  return out;
}

}  // namespace oomguard
