// The shell variables of a job script and their expansion, as bash does it
// but without running anything: `NAME=value`, `NAME+=value`, arrays
// `NAME=(a b c)` / `NAME+=(d)`, `export`, `unset`, `set -a`; `$NAME`,
// `${NAME}`, `${NAME[@]}`, `${NAME[*]}`, `${NAME[N]}` and `${NAME:-word}`
// (also `-`, `:=`, `=`, `:+`, `+`) substituted with bash's quoting and
// word-splitting rules. A variable not assigned literally in the script is
// unknown: its reference expands to an inert piece (expanded_word.h) and a
// note says so. Bounded: one value, the fields of one word, and the work of
// all the expansions of a script (kMaxExpansionWork): past it the reading
// stops with RESOURCE_EXHAUSTED naming the line, so that a few kilobytes of
// array-doubling lines cannot make the reader's time or memory grow past a
// fixed amount. Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_SHELL_VARIABLES_H_
#define OOMGUARD_JOBSCRIPT_SHELL_VARIABLES_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobscript/expanded_word.h"
#include "jobscript/job_script_lexer.h"

namespace oomguard::job_script_internal {

// Bounds on what a hostile script can make the reader build.
inline constexpr size_t kMaxValueBytes = size_t{1} << 20;  // One variable's value.
inline constexpr size_t kMaxElements = size_t{1} << 16;    // Elements / fields.

// The work all the expansions of one script may do, in bytes: each
// reference costs the bytes of the value it copies plus
// kExpansionWorkPerElement for each element (an empty element costs as much
// to copy as a short one). 16 MiB is far above what a launch needs (its
// words are at most 1 MiB) and keeps the reader under about a tenth of a
// second on any script; `A+=("${A[@]}")` repeated passes it after a few lines
// once the array holds its 65,536 elements.
inline constexpr size_t kMaxExpansionWork = size_t{16} << 20;
inline constexpr size_t kExpansionWorkPerElement = 64;

// The name of an assignment word (`NAME=` / `NAME+=` at its start,
// unquoted), and whether it appends.
struct AssignmentTarget {
  std::string name;
  bool append = false;
  size_t prefix_bytes = 0;  // Of the first part, up to and with `=`.
};

// The target of `word`; nullopt when it is not an assignment.
std::optional<AssignmentTarget> AsAssignment(const Word& word);

// The parts of an assignment word after `NAME=` (`prefix_bytes` from its
// AssignmentTarget).
Parts AssignedParts(const Word& word, size_t prefix_bytes);

// The variables a script has assigned so far, in the order it assigns them
// (control flow is not followed).
class ShellVariables {
 public:
  // Notes (unknown variables, bounds reached) go to `notes`.
  explicit ShellVariables(std::vector<std::string>* notes) : notes_(notes) {}

  // Applies the assignment `word` made on `line` (nothing when it is not
  // one); `exported` after `export` / `declare -x`.
  void Assign(const Word& word, bool exported, int line);

  // `export NAME` without a value: exported; a name the script never
  // assigned keeps its value from outside, unknown.
  void Export(const std::string& name);

  // A variable the job starts with, exported, its value known (the batch
  // step's SLURM_* variables); the script may assign it again.
  void SetEnvironment(const std::string& name, const std::string& value);

  // `unset NAME`.
  void Unset(const std::string& name);

  // `set -a` / `set +a`: whether later assignments are exported.
  void SetAllexport(bool on) { allexport_ = on; }

  // The fields `parts` (a word on `line`) expand to. `split`: unquoted
  // expansions are split into fields on blanks (false for an assignment's
  // value: one field).
  std::vector<Field> Expand(const Parts& parts, bool split, int line);

  // The literal value of `name` when the script exported it and its value
  // is known; nullopt otherwise.
  std::optional<std::string> ExportedValue(const std::string& name) const;

  // OK until the expansions pass kMaxExpansionWork; then RESOURCE_EXHAUSTED
  // naming the line, and every later expansion is empty: the reader stops.
  const absl::Status& status() const { return status_; }

 private:
  // A shell variable: a scalar is an array of one element.
  struct Variable {
    bool is_array = false;
    std::vector<Pieces> elements;
    bool exported = false;
    // False for `export NAME` of a name the script never assigned: its
    // value comes from outside.
    bool known = true;
  };

  void Note(std::string note);
  const Variable* Find(const std::string& name) const;
  // Counts copying `elements` against the expansion work; false once it is
  // spent (status() says where).
  bool Spend(const std::vector<Pieces>& elements, int line);
  void ExpandVariable(const Part& part, bool split, std::vector<Field>& fields, Field& current,
                      bool& has_content, int line);
  void NoteUnknown(const std::string& name, int line);

  std::vector<std::string>* notes_;
  std::map<std::string, Variable> vars_;
  size_t work_ = 0;
  absl::Status status_;
  bool allexport_ = false;
  std::vector<std::string> noted_unknown_;
};

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_SHELL_VARIABLES_H_
