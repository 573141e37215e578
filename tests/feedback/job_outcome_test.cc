#include "feedback/job_outcome.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::feedback {
namespace {

using ::testing::HasSubstr;

TEST(JobOutcomeTest, ParsesExitStatusAsSlurmWritesIt) {
  for (auto [text, code, signal] :
       {std::tuple{"0", 0, 0}, std::tuple{"1", 1, 0}, std::tuple{"1:0", 1, 0},
        std::tuple{"0:9", 0, 9}, std::tuple{"255:255", 255, 255}}) {
    absl::StatusOr<ExitStatus> s = ParseExitStatus(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status();
    EXPECT_EQ(s->code, code) << text;
    EXPECT_EQ(s->signal, signal) << text;
  }
  for (const char* bad : {"", "-1", "256", "1:", ":1", "1:0:0", "x", " 1", "1.0", "0001"}) {
    absl::StatusOr<ExitStatus> s = ParseExitStatus(bad);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseExitStatus("abc").status().message(), HasSubstr("CODE or CODE:SIGNAL"));
}

TEST(JobOutcomeTest, SlurmStates) {
  for (auto [state, outcome] :
       {std::pair{"COMPLETED", v1::JOB_OUTCOME_RAN}, std::pair{"completed", v1::JOB_OUTCOME_RAN},
        std::pair{"CANCELLED", v1::JOB_OUTCOME_CANCELLED},
        std::pair{"CANCELLED by 1000", v1::JOB_OUTCOME_CANCELLED},
        std::pair{"PREEMPTED", v1::JOB_OUTCOME_CANCELLED},
        std::pair{"FAILED", v1::JOB_OUTCOME_FAILED}, std::pair{"TIMEOUT", v1::JOB_OUTCOME_FAILED},
        std::pair{"NODE_FAIL", v1::JOB_OUTCOME_FAILED},
        std::pair{"BOOT_FAIL", v1::JOB_OUTCOME_FAILED},
        std::pair{"DEADLINE", v1::JOB_OUTCOME_FAILED},
        std::pair{"OUT_OF_MEMORY", v1::JOB_OUTCOME_HOST_OOM},
        std::pair{"RUNNING", v1::JOB_OUTCOME_UNSPECIFIED}}) {
    absl::StatusOr<v1::JobOutcome> o = OutcomeOfSlurmState(state);
    ASSERT_TRUE(o.ok()) << state << ": " << o.status();
    EXPECT_EQ(*o, outcome) << state;
  }
  absl::StatusOr<v1::JobOutcome> bad = OutcomeOfSlurmState("EXPLODED");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("\"EXPLODED\" is not a Slurm job state"));
  EXPECT_THAT(bad.status().message(), HasSubstr("OUT_OF_MEMORY"));
  EXPECT_FALSE(OutcomeOfSlurmState("").ok());
}

TEST(JobOutcomeTest, TheCudaOomLineDecidesUnlessTheJobEndedWell) {
  const ExitStatus ok{0, 0}, one{1, 0}, killed{0, 9};
  struct Case {
    bool oom;
    std::optional<ExitStatus> exit;
    std::optional<v1::JobOutcome> slurm;
    v1::JobOutcome want;
  };
  for (const Case& c : {
           // Slurm's jobcomp: a CUDA OOM exits 1, FAILED.
           Case{true, one, v1::JOB_OUTCOME_FAILED, v1::JOB_OUTCOME_CUDA_OOM},
           Case{false, one, v1::JOB_OUTCOME_FAILED, v1::JOB_OUTCOME_FAILED},
           // The other ranks hung until the time limit, a cancel, a kill.
           Case{true, std::nullopt, v1::JOB_OUTCOME_FAILED, v1::JOB_OUTCOME_CUDA_OOM},
           Case{true, killed, v1::JOB_OUTCOME_CANCELLED, v1::JOB_OUTCOME_CUDA_OOM},
           Case{true, std::nullopt, v1::JOB_OUTCOME_HOST_OOM, v1::JOB_OUTCOME_CUDA_OOM},
           Case{false, std::nullopt, v1::JOB_OUTCOME_HOST_OOM, v1::JOB_OUTCOME_HOST_OOM},
           Case{false, killed, v1::JOB_OUTCOME_CANCELLED, v1::JOB_OUTCOME_CANCELLED},
           // Completed: ran, even when it caught an OOM and went on.
           Case{true, ok, v1::JOB_OUTCOME_RAN, v1::JOB_OUTCOME_RAN},
           Case{true, one, v1::JOB_OUTCOME_RAN, v1::JOB_OUTCOME_RAN},
           // No state: the exit status.
           Case{true, ok, std::nullopt, v1::JOB_OUTCOME_RAN},
           Case{false, ok, std::nullopt, v1::JOB_OUTCOME_RAN},
           Case{false, killed, std::nullopt, v1::JOB_OUTCOME_FAILED},
           Case{true, killed, std::nullopt, v1::JOB_OUTCOME_CUDA_OOM},
           Case{false, one, std::nullopt, v1::JOB_OUTCOME_FAILED},
           // Only the log.
           Case{true, std::nullopt, std::nullopt, v1::JOB_OUTCOME_CUDA_OOM},
           Case{false, std::nullopt, std::nullopt, v1::JOB_OUTCOME_UNSPECIFIED},
           // Still running.
           Case{false, std::nullopt, v1::JOB_OUTCOME_UNSPECIFIED, v1::JOB_OUTCOME_UNSPECIFIED},
       }) {
    EXPECT_EQ(OutcomeOf(JobEnd{c.oom, c.exit, c.slurm}), c.want)
        << "oom " << c.oom << " exit " << (c.exit ? c.exit->code : -1) << " slurm "
        << (c.slurm ? v1::JobOutcome_Name(*c.slurm) : "none");
  }
}

}  // namespace
}  // namespace oomguard::feedback
