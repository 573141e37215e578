// Values shown in `oomguard check` messages (see shown_value.h).
#include "tools/shown_value.h"

#include "absl/strings/str_cat.h"

namespace oomguard {

std::string ShownValue(absl::string_view text, size_t max_bytes) {
  std::string out;
  for (const char c : text.substr(0, max_bytes)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace oomguard
