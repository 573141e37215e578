// Reads what a training job's own log says about its GPU memory and how it
// ended, without touching training code (../shared/design/FEEDBACK_SOURCES.md
// sections 1 and 4):
//   - Megatron-LM's memory line (megatron/training/utils/common_utils.py
//     report_memory), MiB = 1024^2 bytes:
//       [Rank 3] (after 2 iterations) memory (MB) | allocated: ... |
//       max allocated: ... | reserved: ... | max reserved: ...
//     and ` | total device memory used: ...` with --log-device-memory-used;
//   - Megatron-Bridge's (src/megatron/bridge/training/utils/train_utils.py
//     training_log, report_memory), GB = 1e9 bytes:
//       [Rank 3] (after 2 iterations) memory (GB) | ... |
//       mem-max-allocated-gigabytes: ... | mem-max-reserved-gigabytes: ... | ...
//   - PyTorch's CUDA out-of-memory error (`torch.OutOfMemoryError: CUDA out
//     of memory. Tried to allocate ...`, also `torch.cuda.OutOfMemoryError`).
// Whatever precedes a line's marker is not read: srun --label's `0: `,
// torchrun's `[default0]:`, PyTorch's `[rank0]:`, a timestamp. A rank's
// peaks are the largest each value reached over its lines (Megatron's "max"
// values are process-lifetime peaks, so that is the last line's).
//
// The log is read line by line in bounded memory: '\n' and '\r' end a line
// (a progress bar's carriage returns too), a line longer than
// kMaxLogLineBytes is skipped, and at most kMaxReportRanks ranks are kept.
// No I/O: the caller feeds the bytes.
#ifndef OOMGUARD_FEEDBACK_TRAINING_LOG_READER_H_
#define OOMGUARD_FEEDBACK_TRAINING_LOG_READER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

// The largest of each value a rank's lines gave, in bytes (unset: no line
// had it).
struct RankPeaks {
  std::optional<uint64_t> max_allocated, max_reserved, device_used;
};

// A line longer than this is skipped (a memory line is about 200 bytes, the
// CUDA OOM line about 600).
inline constexpr size_t kMaxLogLineBytes = 64 * 1024;

class TrainingLogReader {
 public:
  // Reads the next bytes of the log; a line may span calls.
  void Feed(absl::string_view bytes);
  // Ends the log: reads its last line when it had no newline.
  void Finish();
  // Reads one line (without its end).
  void ReadLine(absl::string_view line);

  // One measurement per rank that printed a memory line, by ascending rank:
  // max_allocated_bytes and max_reserved_bytes, and device_used_bytes where
  // the line had it. Each passes feedback::ValidateReport.
  std::vector<v1::RankMeasurement> Measurements() const;
  // MEGATRON_LOG when any Megatron-LM (MiB) line was read, else
  // MEGATRON_BRIDGE_LOG when a Megatron-Bridge (GB) line was, else
  // UNSPECIFIED (no memory line).
  v1::MeasurementSource source() const;
  // A CUDA OOM line was read.
  bool cuda_oom() const { return !oom_line_.empty(); }
  // The first CUDA OOM line as read (its prefix names the rank), valid
  // UTF-8 (common/valid_utf8.h), cut to kMaxDetailBytes; empty without one.
  const std::string& oom_line() const { return oom_line_; }

  // What was read: lines, memory lines taken, lines skipped for their length,
  // memory lines of ranks past kMaxReportRanks left out.
  uint64_t lines() const { return lines_; }
  uint64_t memory_lines() const { return memory_lines_; }
  uint64_t overlong_lines() const { return overlong_lines_; }
  uint64_t ranks_left_out() const { return ranks_left_out_; }

 private:
  void EndLine();

  std::map<uint32_t, RankPeaks> ranks_;
  bool megatron_lm_line_ = false, bridge_line_ = false;
  std::string oom_line_;
  // The line being assembled by Feed; `overlong_` once it passed the bound
  // (the rest up to its end is dropped).
  std::string partial_;
  bool overlong_ = false;
  uint64_t lines_ = 0, memory_lines_ = 0, overlong_lines_ = 0, ranks_left_out_ = 0;
};

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_TRAINING_LOG_READER_H_
