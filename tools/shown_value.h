// A value the user gave (a flag, a file name, a job-file line, a server's
// message), as `oomguard check` shows it in a message: bounded and with
// control and non-ASCII bytes escaped, so that no job text can forge lines.
#ifndef OOMGUARD_TOOLS_SHOWN_VALUE_H_
#define OOMGUARD_TOOLS_SHOWN_VALUE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace oomguard {

// The first `max_bytes` bytes of `text` ("..." after when longer), each
// byte outside 0x20..0x7e written as \xHH. 120 suits a value; a message
// that must be whole (the service's reason for not judging a job, which
// names every flag it does not model) takes more.
std::string ShownValue(absl::string_view text, size_t max_bytes = 120);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_SHOWN_VALUE_H_
