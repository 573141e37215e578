#include "store/record_outcome.h"

namespace oomguard::store {
namespace {

// Higher: more telling.
int Rank(v1::JobOutcome outcome) {
  switch (outcome) {
    case v1::JOB_OUTCOME_CUDA_OOM:
      return 5;
    case v1::JOB_OUTCOME_HOST_OOM:
      return 4;
    case v1::JOB_OUTCOME_FAILED:
      return 3;
    case v1::JOB_OUTCOME_CANCELLED:
      return 2;
    case v1::JOB_OUTCOME_RAN:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

v1::JobOutcome MoreTellingOutcome(v1::JobOutcome a, v1::JobOutcome b) {
  return Rank(b) > Rank(a) ? b : a;
}

void SetRecordOutcome(v1::CheckRecord* record) {
  v1::JobOutcome outcome = v1::JOB_OUTCOME_UNSPECIFIED;
  for (const v1::StoredReport& report : record->reports()) {
    outcome = MoreTellingOutcome(outcome, report.outcome());
  }
  record->set_outcome(outcome);
}

}  // namespace oomguard::store
