// The id of a check a server with a store answered
// (CheckResponse.check_id): 128 random bits from the kernel (getrandom(2)),
// as 32 lowercase hex digits (feedback/report_limits.h, ValidateCheckId).
// Not guessable: the id is the capability to read the check's record
// (GetCheck) and the name a report gives it.
#ifndef OOMGUARD_SERVICE_CHECK_ID_H_
#define OOMGUARD_SERVICE_CHECK_ID_H_

#include <string>

namespace oomguard::service {

// A new check id. Thread-safe.
std::string NewCheckId();

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_CHECK_ID_H_
