// Early returns on a non-OK absl::Status, the one way every layer writes
// them (as in Abseil's and gRPC's internal RETURN_IF_ERROR/ASSIGN_OR_RETURN).
#ifndef OOMGUARD_COMMON_STATUS_MACROS_H_
#define OOMGUARD_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define OOMGUARD_RETURN_IF_ERROR(expr)                                      \
  do {                                                                      \
    if (::absl::Status oomguard_status_ = (expr); !oomguard_status_.ok()) { \
      return oomguard_status_;                                              \
    }                                                                       \
  } while (false)

#define OOMGUARD_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define OOMGUARD_STATUS_MACROS_CONCAT_(a, b) OOMGUARD_STATUS_MACROS_CONCAT_INNER_(a, b)

// `OOMGUARD_ASSIGN_OR_RETURN(lhs, expr)`: evaluates `expr` (an
// absl::StatusOr<T>); returns its status when it is not OK, else moves the
// value into `lhs` (a declaration such as `auto x` or an existing variable).
#define OOMGUARD_ASSIGN_OR_RETURN(lhs, expr)                                                    \
  OOMGUARD_ASSIGN_OR_RETURN_IMPL_(OOMGUARD_STATUS_MACROS_CONCAT_(oomguard_statusor_, __LINE__), \
                                  lhs, expr)

#define OOMGUARD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = *std::move(statusor)

#endif  // OOMGUARD_COMMON_STATUS_MACROS_H_
