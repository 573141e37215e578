#include "feedback/training_log_reader.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "feedback/report_limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::feedback {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// The lines as Megatron-LM's report_memory, Megatron-Bridge's training_log
// and PyTorch print them (../shared/design/FEEDBACK_SOURCES.md).
constexpr char kMegatronLine[] =
    "[Rank 3] (after 2 iterations) memory (MB) | allocated: 30720.25 | max allocated: 61440.50 | "
    "reserved: 65536.00 | max reserved: 65536.00";
constexpr char kMegatronDeviceLine[] =
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: 30720.25 | max allocated: 61440.50 | "
    "reserved: 65536.00 | max reserved: 65536.00 | total device memory used: 70000.25";
constexpr char kBridgeLine[] =
    "[Rank 1] (after 2 iterations) memory (GB) | mem-allocated-gigabytes: 32.212 | "
    "mem-active-gigabytes: 32.212 | mem-inactive-gigabytes: 0.51234 | mem-reserved-gigabytes: "
    "68.719 | mem-max-allocated-gigabytes: 64.425 | mem-max-active-gigabytes: 64.425 | "
    "mem-max-inactive-gigabytes: 2.1475 | mem-max-reserved-gigabytes: 68.719 | "
    "mem-alloc-retires: 0 | mem-allocated-count: 18234";
constexpr char kOomLine[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 1.06 GiB is free. Process 2712345 has 78.12 GiB memory in "
    "use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and 2.10 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

// 61440.50 MiB, 65536.00 MiB and 70000.25 MiB in bytes (MiB = 2^20 bytes).
constexpr uint64_t k61440_50MiB = 61440ull * 1048576 + 524288;  // 64,425,033,728
constexpr uint64_t k65536MiB = 65536ull * 1048576;              // 68,719,476,736
constexpr uint64_t k70000_25MiB = 70000ull * 1048576 + 262144;  // 73,400,582,144

TrainingLogReader ReadLog(absl::string_view log) {
  TrainingLogReader reader;
  reader.Feed(log);
  reader.Finish();
  return reader;
}

// A file of tests/data/feedback: what bench/device/oom_report_probe.py wrote
// on an NVIDIA H200 with PyTorch 2.11 (bench/device/README.md).
std::string ProbeOutput(const std::string& name) {
  std::ifstream in(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/feedback/", name),
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TrainingLogReaderTest, ReadsTheLinesPrintedFromAnH200sCounters) {
  // h200_probe.json: max_allocated_bytes = max_reserved_bytes = 8589934592.
  const std::vector<std::string> lines =
      absl::StrSplit(ProbeOutput("h200_memory_lines.txt"), '\n', absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(2));
  const TrainingLogReader megatron = ReadLog(lines[0]);
  ASSERT_THAT(megatron.Measurements(), SizeIs(1));
  EXPECT_EQ(megatron.source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(megatron.Measurements()[0].max_allocated_bytes(), 8589934592u);  // 8192.00 MiB
  EXPECT_EQ(megatron.Measurements()[0].max_reserved_bytes(), 8589934592u);
  // Bridge's 5 significant digits: 8.5899 GB, 34,592 bytes under the counter.
  const TrainingLogReader bridge = ReadLog(lines[1]);
  ASSERT_THAT(bridge.Measurements(), SizeIs(1));
  EXPECT_EQ(bridge.source(), v1::MEASUREMENT_SOURCE_MEGATRON_BRIDGE_LOG);
  EXPECT_EQ(bridge.Measurements()[0].max_allocated_bytes(), 8'589'900'000u);
  EXPECT_EQ(bridge.Measurements()[0].max_reserved_bytes(), 8'589'900'000u);
  // Both in one log: the larger of each.
  const TrainingLogReader both = ReadLog(ProbeOutput("h200_memory_lines.txt"));
  ASSERT_THAT(both.Measurements(), SizeIs(1));
  EXPECT_EQ(both.Measurements()[0].max_allocated_bytes(), 8589934592u);
  EXPECT_EQ(both.memory_lines(), 2u);
}

TEST(TrainingLogReaderTest, FindsTheOomInAnH200ChildsStderr) {
  const std::string stderr_text = ProbeOutput("h200_oom_stderr.txt");
  const TrainingLogReader reader = ReadLog(stderr_text);
  EXPECT_TRUE(reader.cuda_oom());
  const std::vector<std::string> lines = absl::StrSplit(stderr_text, '\n', absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_EQ(reader.oom_line(), lines[2]);
  EXPECT_TRUE(absl::StartsWith(reader.oom_line(),
                               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                               "83.88 GiB. GPU 0 has a total capacity of 139.80 GiB"));
  EXPECT_TRUE(reader.Measurements().empty());
  EXPECT_EQ(reader.lines(), 3u);
}

TEST(TrainingLogReaderTest, ReadsMegatronLmsMemoryLineInMiB) {
  const TrainingLogReader reader = ReadLog(kMegatronLine);
  const std::vector<v1::RankMeasurement> m = reader.Measurements();
  ASSERT_THAT(m, SizeIs(1));
  EXPECT_EQ(m[0].rank(), 3u);
  EXPECT_EQ(m[0].max_allocated_bytes(), k61440_50MiB);
  EXPECT_EQ(m[0].max_reserved_bytes(), k65536MiB);
  EXPECT_FALSE(m[0].has_device_used_bytes());
  EXPECT_EQ(reader.source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(reader.memory_lines(), 1u);
  EXPECT_FALSE(reader.cuda_oom());
}

TEST(TrainingLogReaderTest, ReadsTheDeviceMemoryUsed) {
  const std::vector<v1::RankMeasurement> m = ReadLog(kMegatronDeviceLine).Measurements();
  ASSERT_THAT(m, SizeIs(1));
  EXPECT_EQ(m[0].rank(), 0u);
  EXPECT_EQ(m[0].device_used_bytes(), k70000_25MiB);
}

TEST(TrainingLogReaderTest, ReadsMegatronBridgesLineInGigabytes) {
  const TrainingLogReader reader = ReadLog(kBridgeLine);
  const std::vector<v1::RankMeasurement> m = reader.Measurements();
  ASSERT_THAT(m, SizeIs(1));
  EXPECT_EQ(m[0].rank(), 1u);
  EXPECT_EQ(m[0].max_allocated_bytes(), 64'425'000'000u);  // 64.425 GB = 64.425e9 bytes
  EXPECT_EQ(m[0].max_reserved_bytes(), 68'719'000'000u);
  EXPECT_EQ(reader.source(), v1::MEASUREMENT_SOURCE_MEGATRON_BRIDGE_LOG);
}

TEST(TrainingLogReaderTest, ReadsBridgesExponentForm) {
  // Python prints 5 significant digits of a small float as 1.2346e-05.
  const std::vector<v1::RankMeasurement> m =
      ReadLog(
          "[Rank 0] (after 1 iterations) memory (GB) | mem-max-allocated-gigabytes: "
          "1.2346e-05 | mem-max-reserved-gigabytes: 0.0")
          .Measurements();
  ASSERT_THAT(m, SizeIs(1));
  EXPECT_EQ(m[0].max_allocated_bytes(), 12346u);
  EXPECT_EQ(m[0].max_reserved_bytes(), 0u);
}

TEST(TrainingLogReaderTest, KeepsEachRanksLargestValueOverItsLines) {
  const std::string log = absl::StrCat(
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 100.00 | max allocated: 200.00 | "
      "reserved: 300.00 | max reserved: 400.00\n",
      "[Rank 4] (after 1 iterations) memory (MB) | allocated: 10.00 | max allocated: 20.00 | "
      "reserved: 30.00 | max reserved: 40.00\n",
      " [2026-11-27 22:00:00] iteration        2/     100 | lm loss: 1.000000E+01 |\n",
      "[Rank 0] (after 2 iterations) memory (MB) | allocated: 150.00 | max allocated: 250.00 | "
      "reserved: 300.00 | max reserved: 350.00\n",
      "[Rank 0] (before save_checkpoint for iteration 100) memory (MB) | allocated: 1.00 | "
      "max allocated: 260.00 | reserved: 2.00 | max reserved: 3.00\n");
  const TrainingLogReader reader = ReadLog(log);
  const std::vector<v1::RankMeasurement> m = reader.Measurements();
  ASSERT_THAT(m, SizeIs(2));
  EXPECT_EQ(m[0].rank(), 0u);
  EXPECT_EQ(m[0].max_allocated_bytes(), 260u * 1048576);  // the checkpoint line's
  EXPECT_EQ(m[0].max_reserved_bytes(), 400u * 1048576);   // the first line's
  EXPECT_EQ(m[1].rank(), 4u);
  EXPECT_EQ(m[1].max_allocated_bytes(), 20u * 1048576);
  EXPECT_EQ(reader.lines(), 5u);
  EXPECT_EQ(reader.memory_lines(), 4u);
}

TEST(TrainingLogReaderTest, ReadsLinesBehindLaunchersPrefixes) {
  for (const std::string prefix : {"0: ", "  12: ", "[default3]:", "[default3]: ", "1: [default1]:",
                                   "[rank5]: ", "2026-11-27 22:00:01,123 INFO "}) {
    SCOPED_TRACE(prefix);
    const TrainingLogReader reader =
        ReadLog(absl::StrCat(prefix, kMegatronLine, "\n", prefix, kOomLine, "\n"));
    const std::vector<v1::RankMeasurement> m = reader.Measurements();
    ASSERT_THAT(m, SizeIs(1));
    EXPECT_EQ(m[0].rank(), 3u);  // The line's own global rank, not the prefix's.
    EXPECT_EQ(m[0].max_allocated_bytes(), k61440_50MiB);
    EXPECT_TRUE(reader.cuda_oom());
    EXPECT_EQ(reader.oom_line(), absl::StrCat(prefix, kOomLine));
  }
}

TEST(TrainingLogReaderTest, FindsTheCudaOomLineUnderBothNames) {
  const std::string old_name = absl::StrCat("3: torch.cuda.", std::string(kOomLine).substr(6));
  ASSERT_THAT(old_name, HasSubstr("torch.cuda.OutOfMemoryError: CUDA out of memory."));
  const TrainingLogReader reader = ReadLog(
      absl::StrCat("Traceback (most recent call last):\n", old_name, "\n", "1: ", kOomLine, "\n"));
  EXPECT_TRUE(reader.cuda_oom());
  EXPECT_EQ(reader.oom_line(), old_name);  // The first.
  EXPECT_TRUE(reader.Measurements().empty());
  EXPECT_EQ(reader.source(), v1::MEASUREMENT_SOURCE_UNSPECIFIED);
}

TEST(TrainingLogReaderTest, OtherCudaErrorsAreNotAnOom) {
  const TrainingLogReader reader = ReadLog(
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
      "  exitcode  : 1 (pid: 1234)\n"
      "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True # avoids CUDA out of memory\n");
  EXPECT_FALSE(reader.cuda_oom());
  EXPECT_EQ(reader.oom_line(), "");
}

TEST(TrainingLogReaderTest, TheOomLineIsValidUtf8AndBounded) {
  const TrainingLogReader bad = ReadLog(absl::StrCat("\xff\xfe: ", kOomLine, " \xc3("));
  EXPECT_EQ(bad.oom_line(), absl::StrCat("\xEF\xBF\xBD\xEF\xBF\xBD: ", kOomLine, " \xEF\xBF\xBD("));
  // A line of 3000 two-byte characters after the marker: cut before 2048
  // bytes, never inside a character.
  std::string long_line = kOomLine;
  for (int i = 0; i < 3000; ++i) long_line += "\xc3\xa9";
  const TrainingLogReader cut = ReadLog(long_line);
  EXPECT_LE(cut.oom_line().size(), kMaxDetailBytes);
  EXPECT_GE(cut.oom_line().size(), kMaxDetailBytes - 1);
  EXPECT_TRUE(absl::StartsWith(cut.oom_line(), kOomLine));
  EXPECT_TRUE(absl::EndsWith(cut.oom_line(), "\xc3\xa9"));
}

TEST(TrainingLogReaderTest, LinesMaySpanFeedsAndEndInCrLfOrCarriageReturns) {
  const std::string log = absl::StrCat("epoch 0:  10%|#  | 1/10\repoch 0: 20%|## | 2/10\r",
                                       kMegatronLine, "\r\n", "0: ", kOomLine);
  const TrainingLogReader whole = ReadLog(log);
  for (size_t chunk : {1, 2, 7, 64, 4096}) {
    SCOPED_TRACE(chunk);
    TrainingLogReader reader;
    for (size_t at = 0; at < log.size(); at += chunk) reader.Feed(log.substr(at, chunk));
    EXPECT_FALSE(reader.cuda_oom());  // The last line has no end yet.
    reader.Finish();
    EXPECT_TRUE(reader.cuda_oom());
    ASSERT_THAT(reader.Measurements(), SizeIs(1));
    EXPECT_EQ(reader.Measurements()[0].max_allocated_bytes(), k61440_50MiB);
    EXPECT_EQ(reader.oom_line(), whole.oom_line());
    EXPECT_EQ(reader.lines(), 4u);
  }
}

TEST(TrainingLogReaderTest, SkipsLinesOverTheBound) {
  const std::string over(kMaxLogLineBytes + 1, 'x');
  const TrainingLogReader reader = ReadLog(absl::StrCat(over, kOomLine, "\n", kMegatronLine, "\n"));
  EXPECT_EQ(reader.overlong_lines(), 1u);
  EXPECT_FALSE(reader.cuda_oom());
  ASSERT_THAT(reader.Measurements(), SizeIs(1));
  // At the bound a line is still read.
  const std::string at_bound = absl::StrCat(
      std::string(kMaxLogLineBytes - std::string(kMegatronLine).size(), ' '), kMegatronLine);
  EXPECT_THAT(ReadLog(at_bound).Measurements(), SizeIs(1));
}

TEST(TrainingLogReaderTest, InterleavedOutputKeepsOnlyWholeRecords) {
  // Two ranks writing one stderr without line buffering.
  const TrainingLogReader reader = ReadLog(
      "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1.00 | max allo[Rank 1] (after 2 "
      "iterations) memory (MB) | allocated: 2.00 | max allocated: 3.00 | reserved: 4.00 | max "
      "reserved: 5.00\n");
  const std::vector<v1::RankMeasurement> m = reader.Measurements();
  ASSERT_THAT(m, SizeIs(1));
  EXPECT_EQ(m[0].rank(), 1u);
  EXPECT_EQ(m[0].max_allocated_bytes(), 3u * 1048576);
}

TEST(TrainingLogReaderTest, IgnoresLinesThatAreNotWholeMemoryLines) {
  for (const char* line : {
           "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1.00 | max allocated: -3.00",
           "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1.00 | max allocated: nan",
           "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1.00 | max allocated: inf",
           "[Rank 0] (after 2 iterations) memory (MB) | max allocated: 2.00 | reserved: lots",
           "[Rank 0] (after 2 iterations) memory (MB) | max allocated: 2.00 | truncated",
           "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1.00 | reserved: 2.00",
           "[Rank 0] (after 2 iterations) memory (MB) | max allocated: 1073741825.00",  // > 1 PiB
           "[Rank 16777216] (after 2 iterations) memory (MB) | max allocated: 1.00",    // 2^24
           "[Rank -1] (after 2 iterations) memory (MB) | max allocated: 1.00",
           "[Rank 0] (after 2 iterations) memory (KB) | max allocated: 1.00",
           "[Rank 0] memory | max allocated: 1.00",
           "[Rank 0] (after 2 iterations) memory (GB) | max allocated: 1.00",  // Megatron-LM's name
       }) {
    SCOPED_TRACE(line);
    const TrainingLogReader reader = ReadLog(line);
    EXPECT_TRUE(reader.Measurements().empty());
    EXPECT_EQ(reader.memory_lines(), 0u);
  }
  // 1 PiB itself is taken (1073741824 MiB).
  EXPECT_THAT(ReadLog("[Rank 0] (after 2 iterations) memory (MB) | max allocated: 1073741824.00")
                  .Measurements(),
              SizeIs(1));
}

TEST(TrainingLogReaderTest, MixedLogsAreMegatronLms) {
  const TrainingLogReader reader = ReadLog(absl::StrCat(kBridgeLine, "\n", kMegatronLine));
  EXPECT_EQ(reader.source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_THAT(reader.Measurements(), SizeIs(2));
}

TEST(TrainingLogReaderTest, KeepsAtMostTheReportsRanks) {
  std::string log;
  for (int r = 0; r <= kMaxReportRanks; ++r) {
    absl::StrAppend(&log, "[Rank ", r,
                    "] (after 2 iterations) memory (MB) | max allocated: 1.00\n");
  }
  const TrainingLogReader reader = ReadLog(log);
  EXPECT_THAT(reader.Measurements(), SizeIs(kMaxReportRanks));
  EXPECT_EQ(reader.ranks_left_out(), 1u);
  v1::ReportRequest report;
  report.set_check_id("0123456789abcdef0123456789abcdef");
  report.set_source(reader.source());
  for (const v1::RankMeasurement& m : reader.Measurements()) *report.add_ranks() = m;
  EXPECT_TRUE(ValidateReport(report).ok()) << ValidateReport(report);
}

}  // namespace
}  // namespace oomguard::feedback
