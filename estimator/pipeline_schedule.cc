#include "estimator/pipeline_schedule.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/status_macros.h"

namespace oomguard {
namespace {

// The order in which Megatron-Core's interleaved schedule runs its forwards
// (get_schedule_table in megatron/core/pipeline_parallel/schedules.py): the
// micro-batches in groups of g, each group through chunks 0..v-1 in turn;
// a last, partial group holds what is left (n mod g, when g does not divide
// n). Entry k of the table is the k-th forward; the k-th backward runs
// chunk v - 1 - chunk(k).
class ScheduleTable {
 public:
  ScheduleTable(int64_t n, int64_t g, int64_t v)
      : n_(n), g_(g), v_(v), whole_entries_((n - n % g) * v) {}

  // How many of the first m entries run chunk c (m <= n x v): whole groups
  // hold g entries of each chunk, the partial group n mod g.
  int64_t CountOfChunk(int64_t m, int64_t c) const {
    if (m <= whole_entries_) {
      const int64_t period = g_ * v_;
      return m / period * g_ + std::clamp<int64_t>(m % period - c * g_, 0, g_);
    }
    const int64_t partial = n_ % g_;
    return n_ - partial + std::clamp<int64_t>(m - whole_entries_ - c * partial, 0, partial);
  }

  // Entries of the whole groups: the table repeats every g x v of them.
  int64_t whole_entries() const { return whole_entries_; }
  int64_t n() const { return n_; }
  int64_t g() const { return g_; }
  int64_t v() const { return v_; }

 private:
  const int64_t n_, g_, v_, whole_entries_;
};

// Steps through the table's entries k = start, start + 1, ... without
// dividing at each step: chunk() is the chunk entry k runs.
class ChunkCursor {
 public:
  ChunkCursor(const ScheduleTable& table, int64_t start) : table_(table) {
    const int64_t g = table.g(), v = table.v();
    if (start < table.whole_entries()) {
      group_start_ = start / (g * v) * g;
      size_ = g;
      const int64_t at = start % (g * v);
      chunk_ = at / g;
      in_group_ = at % g;
    } else {
      group_start_ = table.whole_entries() / v;
      size_ = table.n() - group_start_;
      const int64_t at = start - table.whole_entries();
      chunk_ = size_ > 0 ? at / size_ : 0;
      in_group_ = size_ > 0 ? at % size_ : 0;
    }
  }
  int64_t chunk() const { return chunk_; }
  void Next() {
    if (++in_group_ < size_) return;
    in_group_ = 0;
    if (++chunk_ < table_.v()) return;
    chunk_ = 0;
    group_start_ += size_;
    size_ = std::min(table_.g(), table_.n() - group_start_);
  }

 private:
  const ScheduleTable& table_;
  int64_t group_start_, size_, chunk_, in_group_;
};

}  // namespace

absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t r,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline) {
  const int64_t p = j.parallelism.pp, v = static_cast<int64_t>(chunk_bytes.size()),
                n = j.training.num_microbatches;
  InFlight out;
  out.per_chunk.assign(v, 0);
  const bool overlap = j.parallelism.overlap_moe_ep;
  if (v == 1) {
    // No interleaving: rank r runs p - r - 1 warm-up forwards, then one more
    // forward before its first backward. With the EP overlap (Megatron-Core
    // takes it only at PP = 1: combined_1f1b_schedule_for_no_pipelining in
    // megatron/core/pipeline_parallel/combined_1f1b.py) the first forward
    // runs alone, then micro-batch i + 1's forward beside micro-batch i's
    // backward, layer by layer (TransformerModelChunkSchedulePlan.run in
    // megatron/core/models/common/model_chunk_schedule_plan.py: forward layer
    // i with backward layer L - 1 - i, each backward layer's state released
    // after it): one micro-batch whole, no second one.
    out.per_chunk[0] = std::min(p - r, n);
    out.held_bytes = static_cast<double>(out.per_chunk[0]) * chunk_bytes[0];
    out.combined_steps = overlap && n > p - r;
    return out;
  }
  // Interleaved (forward_backward_pipelining_with_interleaving): the
  // warm-up forwards of get_pp_rank_microbatches, then one forward and one
  // backward per step, forwards and backwards in the table's order.
  const int64_t g = j.parallelism.group_size, total = n * v;
  const ScheduleTable table(n, g, v);
  // The EP overlap runs one more warm-up forward (get_pp_rank_microbatches:
  // "to ensure the forward and backward computations are independent").
  const int64_t warmup = std::min(2 * (p - r - 1) + (v - 1) * g + (overlap ? 1 : 0), total);
  out.combined_steps = overlap && warmup < total;
  // The warm-up only adds: its peak is its end.
  ChunkCounts live(v, 0);
  double bytes = 0;
  for (int64_t c = 0; c < v; ++c) {
    live[c] = table.CountOfChunk(warmup, c);
    bytes += static_cast<double>(live[c]) * chunk_bytes[c];
  }
  out.per_chunk = live;
  out.held_bytes = bytes;
  // Steady step i runs forward warmup + i, then backward i. While the
  // forward is in the whole groups, both gain g per chunk every g x v
  // steps, so the live set repeats with period g x v and one period holds
  // each of those states (the first time it occurs). The steps whose
  // forward is in the partial group, at most its size x v, are walked one by
  // one from the live set counted at the first of them.
  int64_t walked = 0;
  const auto walk = [&](int64_t first, int64_t steps) -> absl::Status {
    ChunkCursor forward(table, warmup + first), backward(table, first);
    for (int64_t i = 0; i < steps; ++i, forward.Next(), backward.Next()) {
      OOMGUARD_RETURN_IF_ERROR(deadline.CheckEvery(walked++, "walking the pipeline schedule"));
      const int64_t f = forward.chunk();
      ++live[f];
      bytes += chunk_bytes[f];
      const int64_t b = v - 1 - backward.chunk();
      if (overlap) {
        // A combined step: the backward's layers go as the forward's come.
        --live[b];
        bytes -= chunk_bytes[b];
      }
      if (bytes > out.held_bytes) {
        out.held_bytes = bytes;
        out.per_chunk = live;
      }
      if (!overlap) {
        --live[b];
        bytes -= chunk_bytes[b];
      }
    }
    return absl::OkStatus();
  };
  const int64_t periodic_steps =
      std::min(total - warmup, std::max<int64_t>(0, table.whole_entries() - warmup));
  OOMGUARD_RETURN_IF_ERROR(walk(0, std::min(periodic_steps, g * v)));
  if (periodic_steps < total - warmup) {
    bytes = 0;
    for (int64_t c = 0; c < v; ++c) {
      live[c] = table.CountOfChunk(warmup + periodic_steps, c) -
                table.CountOfChunk(periodic_steps, v - 1 - c);
      bytes += static_cast<double>(live[c]) * chunk_bytes[c];
    }
    OOMGUARD_RETURN_IF_ERROR(walk(periodic_steps, total - warmup - periodic_steps));
  }
  return out;
}

}  // namespace oomguard
