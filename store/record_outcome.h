// A check record's outcome (CheckRecord.outcome): the most telling one its
// reports gave. A CUDA OOM outranks everything (the outcome the admission
// exists to prevent), then the other failures, then a cancel, then "ran"; a
// report that does not say (measurements only) changes nothing.
#ifndef OOMGUARD_STORE_RECORD_OUTCOME_H_
#define OOMGUARD_STORE_RECORD_OUTCOME_H_

#include "oomguard/v1/feedback.pb.h"

namespace oomguard::store {

// The more telling of `a` and `b`.
v1::JobOutcome MoreTellingOutcome(v1::JobOutcome a, v1::JobOutcome b);

// Sets record->outcome() from record->reports().
void SetRecordOutcome(v1::CheckRecord* record);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_RECORD_OUTCOME_H_
