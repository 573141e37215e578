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

// Issue 25's array-doubling script: `A=(<elements>)`, then 5,000 lines of
// `A+=("${A[@]}")`, then a launch (75 KB). Unbounded, it made the reader copy
// 65,536 elements a line for thousands of lines (17 s of CPU). The fuzz seed
// corpus holds it too (fuzz/seed_corpus.py).
inline std::string ArrayDoublingScript(const std::string& elements) {
  std::string script = "A=(" + elements + ")\n";
  for (int i = 0; i < 5000; ++i) script += "A+=(\"${A[@]}\")\n";
  return script + "torchrun pretrain_gpt.py --num-layers 2\n";
}

// Issue 25 item 10's launch: a data blend of `pairs` weight/path pairs on
// one line (with 32,768 of them, 65,537 words after --data-path).
inline std::string DataBlendScript(int pairs) {
  std::string script = "#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2 --data-path";
  for (int i = 0; i < pairs; ++i) script += " 0.5 /d/c" + std::to_string(i);
  return script + "\n";
}

// Every note, one a line.
inline std::string AllNotes(const ScriptJob& job) { return absl::StrJoin(job.notes, "\n"); }

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_JOBSCRIPT_JOB_SCRIPT_TEST_UTIL_H_
