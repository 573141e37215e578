// `oomguard calibrate --store URL [--cluster NAME]`: a cluster's own
// calibration table, from what its jobs reported (the checks a server with
// --store kept): each measured peak against its stage's estimate, as
// `oomguard calibrate` prints the repository's measured cases
// (calibration.h), then the summary: per measure the point estimate's error
// and the upper bound's coverage, the admitted jobs that died of a CUDA OOM,
// and the widening the cluster's errors teach (feedback/bound_widening.h).
#ifndef OOMGUARD_TOOLS_STORE_CALIBRATION_H_
#define OOMGUARD_TOOLS_STORE_CALIBRATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/check_store.h"

namespace oomguard {

// The table and summary of `cluster`'s records in `store` (every cluster's
// when empty). The store's read errors as they are.
absl::StatusOr<std::string> FormatStoreCalibration(store::CheckStore& store,
                                                   absl::string_view cluster);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_STORE_CALIBRATION_H_
