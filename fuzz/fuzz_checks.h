// What every fuzz target checks beyond "no crash": a failed expectation
// prints what broke and aborts (libFuzzer then saves the input), and an
// estimate that succeeds must satisfy the report invariants
// (estimator/report_invariants.h).
#ifndef OOMGUARD_FUZZ_FUZZ_CHECKS_H_
#define OOMGUARD_FUZZ_FUZZ_CHECKS_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "estimator/estimator.h"
#include "estimator/job_defaults.h"
#include "estimator/report_invariants.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard::fuzz {

// Aborts with `what` when `ok` is false.
inline void Expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz expectation failed: %s\n", what.c_str());
  std::abort();
}

// Aborts when `status` is an error of a code a parser or the estimator must
// never return for bad input (only InvalidArgument, Unimplemented and
// NotFound are answers; Internal, Unknown and the rest are bugs).
inline void ExpectAnswerCode(const absl::Status& status, const std::string& where) {
  const absl::StatusCode code = status.code();
  Expect(code == absl::StatusCode::kOk || code == absl::StatusCode::kInvalidArgument ||
             code == absl::StatusCode::kUnimplemented || code == absl::StatusCode::kNotFound,
         where + ": unexpected status " + status.ToString());
}

// Aborts when `report` breaks an invariant.
inline void ExpectInvariants(const v1::EstimateReport& report, const std::string& where) {
  const absl::Status status = CheckReportInvariants(report);
  Expect(status.ok(), where + ": " + status.ToString());
}

// Aborts when a successful Check's `response` to `request` breaks an
// invariant: its report's, or with omit_report, a report of nothing but
// notes.
inline void ExpectCheckInvariants(const v1::CheckRequest& request,
                                  const v1::CheckResponse& response, const std::string& where) {
  if (!request.omit_report()) {
    ExpectInvariants(response.report(), where);
    return;
  }
  Expect(response.report().ranks().empty() && response.report().rank_trees().empty(),
         where + ": omit_report, yet the response has a per-rank report");
}

// Estimates `job` (with the module tree when `module_tree`) and checks the
// report's invariants; the report when the job is valid.
inline absl::StatusOr<v1::EstimateReport> EstimateChecked(const v1::JobSpec& job,
                                                          bool module_tree = false) {
  absl::StatusOr<v1::EstimateReport> report =
      Estimate(job, EstimateOptions{.module_tree = module_tree});
  ExpectAnswerCode(report.status(), "Estimate");
  if (report.ok()) ExpectInvariants(*report, "Estimate");
  return report;
}

// The smallest world size that divides into `job`'s parallelism (TP x CP x
// PP and PP x EP x ETP), times `dp`; 0 when it would not fit 32 bits.
inline uint32_t WorldSizeFor(const v1::JobSpec& job, uint32_t dp) {
  const v1::ParallelismSpec& p = job.parallelism();
  // The sizes as validation reads them (estimator/job_defaults.h), 0 as 1.
  auto at_least_one = [](uint32_t v) -> uint64_t { return v > 0 ? v : 1; };
  const uint64_t tp = at_least_one(TensorParallelSize(p));
  const uint64_t pp = at_least_one(PipelineParallelSize(p));
  const uint64_t cp = at_least_one(ContextParallelSize(p));
  const uint64_t ep = at_least_one(ExpertParallelSize(p));
  const uint64_t etp = at_least_one(ExpertTensorParallelSize(p));
  const uint64_t dense = tp * cp * pp, expert = pp * ep * etp;
  if (dense > (uint64_t{1} << 32) || expert > (uint64_t{1} << 32)) return 0;
  uint64_t a = dense, b = expert;
  while (b != 0) {
    const uint64_t t = a % b;
    a = b;
    b = t;
  }
  const uint64_t world = dense / a * expert * (dp == 0 ? 1 : dp);
  return world > 0xffffffffu ? 0 : static_cast<uint32_t>(world);
}

}  // namespace oomguard::fuzz

#endif  // OOMGUARD_FUZZ_FUZZ_CHECKS_H_
