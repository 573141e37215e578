// The notes the job script reader leaves for people (ScriptJob::notes):
// bounded in number, and script text shown in them (or in errors) escaped
// and cut short. Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_SCRIPT_NOTES_H_
#define OOMGUARD_JOBSCRIPT_SCRIPT_NOTES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace oomguard::job_script_internal {

// Notes kept; one more says the rest were left out.
inline constexpr size_t kMaxNotes = 40;

// Appends `note` to `notes` while fewer than kMaxNotes are there.
void AddNote(std::vector<std::string>& notes, std::string note);

// Script text for a note or an error: control and non-ASCII bytes escaped,
// at most 80 characters of it.
std::string Shown(absl::string_view text);

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_SCRIPT_NOTES_H_
