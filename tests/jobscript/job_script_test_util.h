// Helpers shared by the job script reader's tests.
#ifndef OOMGUARD_TESTS_JOBSCRIPT_JOB_SCRIPT_TEST_UTIL_H_
#define OOMGUARD_TESTS_JOBSCRIPT_JOB_SCRIPT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "jobscript/job_script.h"

namespace oomguard::testing {

// Parses `script`; fails the test on error.
inline ScriptJob Parse(const std::string& script) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(script);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : ScriptJob{};
}

// The blank-separated words of `line`.
inline std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

// Every note, one a line.
inline std::string AllNotes(const ScriptJob& job) { return absl::StrJoin(job.notes, "\n"); }

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_JOBSCRIPT_JOB_SCRIPT_TEST_UTIL_H_
