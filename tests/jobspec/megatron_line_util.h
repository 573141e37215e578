// Test helpers: a Megatron-LM argument line, split into words and applied
// to a JobSpec (jobspec/megatron_args.h), and MoE layer patterns.
#ifndef OOMGUARD_TESTS_JOBSPEC_MEGATRON_LINE_UTIL_H_
#define OOMGUARD_TESTS_JOBSPEC_MEGATRON_LINE_UTIL_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Splits `line` and applies it to `job`.
inline absl::Status ApplyLine(const std::string& line, ArgsMode mode, v1::JobSpec* job,
                              std::vector<std::string>* notes = nullptr) {
  absl::StatusOr<std::vector<std::string>> args = SplitArgumentLine(line);
  if (!args.ok()) return args.status();
  return ApplyMegatronArgs(*args, mode, job, notes);
}

// Parses a whole command line into a fresh JobSpec; fails the test on error.
inline v1::JobSpec ParseFull(const std::string& line, std::vector<std::string>* notes = nullptr) {
  v1::JobSpec job;
  absl::Status status = ApplyLine(line, ArgsMode::kFullCommandLine, &job, notes);
  EXPECT_TRUE(status.ok()) << status << " for: " << line;
  return job;
}

// The error of parsing `line` into a fresh JobSpec.
inline absl::Status ParseError(const std::string& line,
                               ArgsMode mode = ArgsMode::kFullCommandLine) {
  v1::JobSpec job;
  return ApplyLine(line, mode, &job);
}

// `count` copies of `value`.
inline std::vector<uint32_t> Repeat(uint32_t value, int count) {
  return std::vector<uint32_t>(static_cast<size_t>(count), value);
}

// `a` then `b`.
inline std::vector<uint32_t> Concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The job's model.moe_layer_pattern.
inline std::vector<uint32_t> Pattern(const v1::JobSpec& job) {
  return {job.model().moe_layer_pattern().begin(), job.model().moe_layer_pattern().end()};
}

}  // namespace oomguard

#endif  // OOMGUARD_TESTS_JOBSPEC_MEGATRON_LINE_UTIL_H_
