// Notes of the job script reader (see script_notes.h).
#include "jobscript/script_notes.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace oomguard::job_script_internal {
namespace {

constexpr size_t kMaxShown = 80;

}  // namespace

void AddNote(std::vector<std::string>& notes, std::string note) {
  if (notes.size() < kMaxNotes) {
    notes.push_back(std::move(note));
  } else if (notes.size() == kMaxNotes) {
    notes.push_back("more notes left out");
  }
}

std::string Shown(absl::string_view text) {
  std::string out;
  for (const char c : text.substr(0, kMaxShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace oomguard::job_script_internal
