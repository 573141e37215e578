// A record's measurements against its estimate (see measured_error.h).
#include "feedback/measured_error.h"

#include <optional>

namespace oomguard::feedback {
namespace {

uint64_t EstimateOf(const v1::RankEstimate& e, Measure m) {
  return m == Measure::kAllocated ? e.peak_allocated_bytes() : e.peak_device_bytes();
}

uint64_t UpperOf(const v1::RankEstimate& e, Measure m) {
  return m == Measure::kAllocated ? e.peak_allocated_upper_bytes() : e.peak_device_upper_bytes();
}

// The measurement's value of `m`, when measured.
std::optional<uint64_t> MeasuredOf(const v1::RankMeasurement& r, Measure m) {
  if (m == Measure::kAllocated) {
    if (r.has_max_allocated_bytes()) return r.max_allocated_bytes();
  } else if (r.has_device_used_bytes()) {
    return r.device_used_bytes();
  }
  return std::nullopt;
}

const v1::RankEstimate* StageOf(const v1::CheckRecord& record, uint32_t rank) {
  if (record.gpus_per_pipeline_stage() == 0) return nullptr;
  const uint32_t stage = rank / record.gpus_per_pipeline_stage();
  for (const v1::RankEstimate& e : record.estimate()) {
    if (e.pp_rank() == stage) return &e;
  }
  return nullptr;
}

// The stage with the largest upper bound of `m`; the first of equals.
const v1::RankEstimate* LargestStage(const v1::CheckRecord& record, Measure m) {
  const v1::RankEstimate* largest = nullptr;
  for (const v1::RankEstimate& e : record.estimate()) {
    if (largest == nullptr || UpperOf(e, m) > UpperOf(*largest, m)) largest = &e;
  }
  return largest;
}

void AddError(const v1::RankEstimate& stage, Measure m, uint64_t measured,
              std::vector<MeasuredError>& out) {
  if (measured == 0) return;
  MeasuredError e;
  e.measure = m;
  e.pp_rank = stage.pp_rank();
  e.measured_bytes = measured;
  e.estimate_bytes = EstimateOf(stage, m);
  e.upper_bytes = UpperOf(stage, m);
  e.error = (static_cast<double>(e.estimate_bytes) - static_cast<double>(measured)) /
            static_cast<double>(measured);
  e.under_bound = measured <= e.upper_bytes;
  out.push_back(e);
}

constexpr Measure kMeasures[] = {Measure::kAllocated, Measure::kDevice};

}  // namespace

absl::string_view MeasureName(Measure measure) {
  return measure == Measure::kAllocated ? "allocated" : "device";
}

std::vector<MeasuredError> MeasuredErrors(const v1::CheckRecord& record,
                                          const v1::StoredReport& report) {
  std::vector<MeasuredError> out;
  uint64_t unranked_max[2] = {0, 0};
  for (const v1::RankMeasurement& r : report.ranks()) {
    for (const Measure m : kMeasures) {
      const std::optional<uint64_t> measured = MeasuredOf(r, m);
      if (!measured.has_value()) continue;
      if (!r.has_rank()) {
        uint64_t& largest = unranked_max[static_cast<int>(m)];
        if (*measured > largest) largest = *measured;
        continue;
      }
      if (const v1::RankEstimate* stage = StageOf(record, r.rank())) {
        AddError(*stage, m, *measured, out);
      }
    }
  }
  for (const Measure m : kMeasures) {
    const uint64_t measured = unranked_max[static_cast<int>(m)];
    if (measured == 0) continue;
    if (const v1::RankEstimate* stage = LargestStage(record, m)) {
      AddError(*stage, m, measured, out);
    }
  }
  return out;
}

std::vector<MeasuredError> RecordErrors(const v1::CheckRecord& record) {
  std::vector<MeasuredError> out;
  for (const v1::StoredReport& report : record.reports()) {
    std::vector<MeasuredError> errors = MeasuredErrors(record, report);
    out.insert(out.end(), errors.begin(), errors.end());
  }
  return out;
}

bool Admitted(const v1::CheckRecord& record) {
  return record.verdict() == v1::VERDICT_FITS || record.verdict() == v1::VERDICT_FITS_WITH_SETTINGS;
}

bool DiedOfCudaOom(const v1::CheckRecord& record) {
  if (record.outcome() == v1::JOB_OUTCOME_CUDA_OOM) return true;
  for (const v1::StoredReport& report : record.reports()) {
    if (report.outcome() == v1::JOB_OUTCOME_CUDA_OOM) return true;
  }
  return false;
}

}  // namespace oomguard::feedback
