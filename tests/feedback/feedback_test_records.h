// A CheckRecord the feedback tests share: a two-stage job with round
// estimates in GiB, so that every error is a fraction worked out by hand.
#ifndef OOMGUARD_TESTS_FEEDBACK_FEEDBACK_TEST_RECORDS_H_
#define OOMGUARD_TESTS_FEEDBACK_FEEDBACK_TEST_RECORDS_H_

#include <cstdint>
#include <initializer_list>

#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback::testing {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// 8 GPUs, 4 per pipeline stage; admitted (FITS) on 80 GiB usable.
// Stage 0: allocated 50 (upper 55), device 60 (upper 66) GiB.
// Stage 1: allocated 40 (upper 44), device 48 (upper 52) GiB.
inline v1::CheckRecord TwoStageRecord() {
  v1::CheckRecord r;
  r.set_check_id("0123456789abcdef0123456789abcdef");
  r.set_gpus_per_pipeline_stage(4);
  r.set_num_gpus(8);
  r.set_usable_bytes(80 * kGiB);
  r.set_verdict(v1::VERDICT_FITS);
  r.set_gpu_name("H100-SXM-80GB");
  auto stage = [&r](uint32_t pp, uint64_t a, uint64_t au, uint64_t d, uint64_t du) {
    v1::RankEstimate* e = r.add_estimate();
    e->set_pp_rank(pp);
    e->set_peak_allocated_bytes(a * kGiB);
    e->set_peak_allocated_upper_bytes(au * kGiB);
    e->set_peak_device_bytes(d * kGiB);
    e->set_peak_device_upper_bytes(du * kGiB);
  };
  stage(0, 50, 55, 60, 66);
  stage(1, 40, 44, 48, 52);
  return r;
}

inline v1::RankMeasurement Allocated(uint32_t rank, uint64_t gib) {
  v1::RankMeasurement m;
  m.set_rank(rank);
  m.set_max_allocated_bytes(gib * kGiB);
  return m;
}

inline v1::RankMeasurement DeviceUsed(const char* device, uint64_t gib) {
  v1::RankMeasurement m;
  m.set_device(device);
  m.set_device_used_bytes(gib * kGiB);
  return m;
}

// A Megatron-LM log's report of `ranks` with `outcome`.
inline v1::StoredReport Report(std::initializer_list<v1::RankMeasurement> ranks,
                               v1::JobOutcome outcome = v1::JOB_OUTCOME_UNSPECIFIED) {
  v1::StoredReport report;
  report.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  for (const v1::RankMeasurement& m : ranks) *report.add_ranks() = m;
  report.set_outcome(outcome);
  return report;
}

// Appends Report(ranks, outcome) to `record`.
inline void AddReport(v1::CheckRecord& record, std::initializer_list<v1::RankMeasurement> ranks,
                      v1::JobOutcome outcome = v1::JOB_OUTCOME_UNSPECIFIED) {
  *record.add_reports() = Report(ranks, outcome);
}

}  // namespace oomguard::feedback::testing

#endif  // OOMGUARD_TESTS_FEEDBACK_FEEDBACK_TEST_RECORDS_H_
