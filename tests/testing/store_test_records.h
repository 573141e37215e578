// Records and reports for the store's tests and bench: a check record as the server
// writes one (a small GPT job, two pipeline stages), and reports of N ranks.
#ifndef OOMGUARD_TESTS_TESTING_STORE_TEST_RECORDS_H_
#define OOMGUARD_TESTS_TESTING_STORE_TEST_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::testing {

// The check id of number `n`: 32 lowercase hex digits.
inline std::string TestCheckId(uint64_t n) { return absl::StrFormat("%032x", n); }

inline google::protobuf::Timestamp TestTimestamp(absl::Time time) {
  google::protobuf::Timestamp timestamp;
  const int64_t micros = absl::ToUnixMicros(time);
  timestamp.set_seconds(micros / 1'000'000);
  timestamp.set_nanos(static_cast<int32_t>(micros % 1'000'000) * 1000);
  return timestamp;
}

inline v1::CheckRecord TestCheckRecord(uint64_t n, absl::Time checked_at,
                                       const std::string& cluster = "alpha") {
  v1::CheckRecord record;
  record.set_check_id(TestCheckId(n));
  *record.mutable_checked_at() = TestTimestamp(checked_at);
  record.set_oomguard_version("0.1.0");
  record.set_cluster(cluster);
  v1::JobSpec& job = *record.mutable_job_spec();
  job.mutable_model()->set_num_layers(24);
  job.mutable_model()->set_hidden_size(2048);
  job.mutable_model()->set_num_attention_heads(16);
  job.mutable_model()->set_vocab_size(50304);
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_parallelism()->set_tensor_model_parallel_size(2);
  job.mutable_parallelism()->set_pipeline_model_parallel_size(2);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_global_batch_size(64);
  job.mutable_training()->set_seq_length(4096);
  record.set_gpu_name("H100-SXM-80GB");
  record.set_usable_bytes(uint64_t{79} << 30);
  record.set_verdict(v1::VERDICT_FITS);
  for (uint32_t stage = 0; stage < 2; ++stage) {
    v1::RankEstimate& estimate = *record.add_estimate();
    estimate.set_pp_rank(stage);
    estimate.set_peak_allocated_bytes((uint64_t{30} + stage) << 30);
    estimate.set_peak_allocated_upper_bytes((uint64_t{33} + stage) << 30);
    estimate.set_peak_device_bytes((uint64_t{34} + stage) << 30);
    estimate.set_peak_device_upper_bytes((uint64_t{37} + stage) << 30);
  }
  record.set_gpus_per_pipeline_stage(4);
  record.set_num_gpus(8);
  record.set_family("dense");
  return record;
}

// A Megatron-log report of `ranks` ranks, rank r measuring (20 GiB + r MiB).
inline v1::StoredReport TestReport(int ranks, v1::JobOutcome outcome, absl::Time received_at,
                                   const std::string& reporter = "slurm-controller") {
  v1::StoredReport report;
  *report.mutable_received_at() = TestTimestamp(received_at);
  report.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  report.set_reporter(reporter);
  for (int r = 0; r < ranks; ++r) {
    v1::RankMeasurement& rank = *report.add_ranks();
    rank.set_rank(static_cast<uint32_t>(r));
    rank.set_max_allocated_bytes((uint64_t{20} << 30) + (uint64_t(r) << 20));
    rank.set_max_reserved_bytes((uint64_t{22} << 30) + (uint64_t(r) << 20));
  }
  report.set_outcome(outcome);
  return report;
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_STORE_TEST_RECORDS_H_
