#include "feedback/training_log_reader.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/valid_utf8.h"
#include "feedback/report_limits.h"

namespace oomguard::feedback {
namespace {

// Where a memory line's record starts: report_memory prints
// "[Rank {torch.distributed.get_rank()}] {name} memory (MB) | ..." in both
// Megatron-LM and Megatron-Bridge.
constexpr absl::string_view kRankMarker = "[Rank ";

// The unit a memory line states after its name ("(after N iterations)",
// "(before save_checkpoint for iteration N)"), and the fields read in it.
struct MemoryUnit {
  absl::string_view marker;
  double bytes;  // Bytes per unit.
  bool bridge;   // Megatron-Bridge's line.
};
constexpr MemoryUnit kMegatronLmUnit = {" memory (MB) | ", 1024.0 * 1024.0, false};
constexpr MemoryUnit kBridgeUnit = {" memory (GB) | ", 1e9, true};

struct MemoryField {
  const MemoryUnit* unit;
  absl::string_view name;
  std::optional<uint64_t> RankPeaks::*value;
};
// Megatron-LM: torch.cuda.max_memory_allocated / max_memory_reserved /
// device_memory_used. Megatron-Bridge: memory_stats()'s
// "allocated_bytes.all.peak" / "reserved_bytes.all.peak" (its MEMORY_KEYS).
constexpr MemoryField kMemoryFields[] = {
    {&kMegatronLmUnit, "max allocated", &RankPeaks::max_allocated},
    {&kMegatronLmUnit, "max reserved", &RankPeaks::max_reserved},
    {&kMegatronLmUnit, "total device memory used", &RankPeaks::device_used},
    {&kBridgeUnit, "mem-max-allocated-gigabytes", &RankPeaks::max_allocated},
    {&kBridgeUnit, "mem-max-reserved-gigabytes", &RankPeaks::max_reserved},
};

// What marks a CUDA out-of-memory error: the exception the caching
// allocator raises ("CUDA out of memory. Tried to allocate ..."), printed
// by its class's name: torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
// in earlier PyTorch releases.
constexpr absl::string_view kCudaOomMarkers[] = {
    "torch.OutOfMemoryError: CUDA out of memory",
    "torch.cuda.OutOfMemoryError: CUDA out of memory",
};

struct MemoryLine {
  uint32_t rank = 0;
  bool bridge = false;
  RankPeaks peaks;
};

void KeepLarger(std::optional<uint64_t>& kept, uint64_t value) {
  if (!kept || *kept < value) kept = value;
}

// The record that starts after a "[Rank " marker, when it is a whole memory
// line: a rank, a name, a unit, then only "NAME: NUMBER" fields up to the
// line's end (a line that two ranks' output interleaved into is not one),
// and at least one value read.
std::optional<MemoryLine> ParseMemoryRecord(absl::string_view text) {
  const size_t close = text.find("] ");
  if (close == absl::string_view::npos || close == 0 || close > 8) return std::nullopt;
  MemoryLine line;
  for (char c : text.substr(0, close)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  if (!absl::SimpleAtoi(text.substr(0, close), &line.rank) || line.rank >= kMaxRank) {
    return std::nullopt;
  }
  text.remove_prefix(close + 2);
  const MemoryUnit* unit = nullptr;
  size_t at = absl::string_view::npos;
  for (const MemoryUnit* u : {&kMegatronLmUnit, &kBridgeUnit}) {
    if (const size_t found = text.find(u->marker); found < at) {
      at = found;
      unit = u;
    }
  }
  if (unit == nullptr || text.substr(0, at).find('|') != absl::string_view::npos) {
    return std::nullopt;
  }
  line.bridge = unit->bridge;
  bool any = false;
  for (absl::string_view field : absl::StrSplit(text.substr(at + unit->marker.size()), " | ")) {
    const size_t colon = field.find(": ");
    if (colon == absl::string_view::npos) return std::nullopt;
    double value = 0;
    if (!absl::SimpleAtod(field.substr(colon + 2), &value) || !std::isfinite(value) || value < 0) {
      return std::nullopt;
    }
    const absl::string_view name = field.substr(0, colon);
    for (const MemoryField& f : kMemoryFields) {
      if (f.unit != unit || f.name != name) continue;
      const double bytes = value * unit->bytes;
      if (bytes > static_cast<double>(kMaxMeasuredBytes)) return std::nullopt;
      KeepLarger(line.peaks.*f.value, static_cast<uint64_t>(std::llround(bytes)));
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return line;
}

// `line` as a report's detail: valid UTF-8, at most kMaxDetailBytes, cut
// before a character, never inside one.
std::string DetailOf(absl::string_view line) {
  std::string detail = ValidUtf8(line);
  if (detail.size() > kMaxDetailBytes) {
    size_t cut = kMaxDetailBytes;
    while (cut > 0 && (static_cast<unsigned char>(detail[cut]) & 0xC0) == 0x80) --cut;
    detail.resize(cut);
  }
  return detail;
}

}  // namespace

void TrainingLogReader::Feed(absl::string_view bytes) {
  while (!bytes.empty()) {
    const size_t end = bytes.find_first_of("\n\r");
    const absl::string_view piece = bytes.substr(0, end);
    if (!overlong_) {
      if (partial_.size() + piece.size() > kMaxLogLineBytes) {
        overlong_ = true;
        partial_.clear();
      } else {
        partial_.append(piece.data(), piece.size());
      }
    }
    if (end == absl::string_view::npos) return;
    EndLine();
    bytes.remove_prefix(end + 1);
  }
}

void TrainingLogReader::Finish() { EndLine(); }

void TrainingLogReader::EndLine() {
  if (overlong_) {
    ++lines_;
    ++overlong_lines_;
    overlong_ = false;
  } else if (!partial_.empty()) {
    ReadLine(partial_);
  }
  partial_.clear();
}

void TrainingLogReader::ReadLine(absl::string_view line) {
  ++lines_;
  if (line.size() > kMaxLogLineBytes) {
    ++overlong_lines_;
    return;
  }
  line = absl::StripTrailingAsciiWhitespace(line);
  if (oom_line_.empty()) {
    for (absl::string_view marker : kCudaOomMarkers) {
      if (absl::StrContains(line, marker)) {
        oom_line_ = DetailOf(line);
        break;
      }
    }
  }
  // Each "[Rank " in turn: output interleaved from two ranks may hold a
  // broken record before a whole one.
  for (size_t at = line.find(kRankMarker); at != absl::string_view::npos;
       at = line.find(kRankMarker, at + 1)) {
    const std::optional<MemoryLine> memory =
        ParseMemoryRecord(line.substr(at + kRankMarker.size()));
    if (!memory) continue;
    auto rank = ranks_.find(memory->rank);
    if (rank == ranks_.end()) {
      if (ranks_.size() >= static_cast<size_t>(kMaxReportRanks)) {
        ++ranks_left_out_;
        return;
      }
      rank = ranks_.emplace(memory->rank, RankPeaks{}).first;
    }
    for (auto value :
         {&RankPeaks::max_allocated, &RankPeaks::max_reserved, &RankPeaks::device_used}) {
      if (memory->peaks.*value) KeepLarger(rank->second.*value, *(memory->peaks.*value));
    }
    (memory->bridge ? bridge_line_ : megatron_lm_line_) = true;
    ++memory_lines_;
    return;
  }
}

std::vector<v1::RankMeasurement> TrainingLogReader::Measurements() const {
  std::vector<v1::RankMeasurement> measurements;
  measurements.reserve(ranks_.size());
  for (const auto& [rank, peaks] : ranks_) {
    v1::RankMeasurement& m = measurements.emplace_back();
    m.set_rank(rank);
    if (peaks.max_allocated) m.set_max_allocated_bytes(*peaks.max_allocated);
    if (peaks.max_reserved) m.set_max_reserved_bytes(*peaks.max_reserved);
    if (peaks.device_used) m.set_device_used_bytes(*peaks.device_used);
  }
  return measurements;
}

v1::MeasurementSource TrainingLogReader::source() const {
  if (megatron_lm_line_) return v1::MEASUREMENT_SOURCE_MEGATRON_LOG;
  if (bridge_line_) return v1::MEASUREMENT_SOURCE_MEGATRON_BRIDGE_LOG;
  return v1::MEASUREMENT_SOURCE_UNSPECIFIED;
}

}  // namespace oomguard::feedback
