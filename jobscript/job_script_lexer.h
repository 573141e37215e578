// The lexer of job_script.cc: cuts a bash script into simple commands of
// words the way bash does (quotes, escapes, backslash-newline continuations,
// comments, heredocs, redirections, operators, `NAME=(...)` arrays), keeping
// every `$...` as a variable reference or an inert part (command and process
// substitutions, arithmetic, backticks, expansions not evaluated). Nothing
// is expanded or executed here. Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_JOB_SCRIPT_LEXER_H_
#define OOMGUARD_JOBSCRIPT_JOB_SCRIPT_LEXER_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace oomguard::job_script_internal {

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
inline bool IsNameStart(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_';
}
inline bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}
inline bool IsValidName(absl::string_view s) {
  if (s.empty() || !IsNameStart(s[0])) return false;
  return std::all_of(s.begin(), s.end(), IsNameChar);
}

// A word is a list of parts: literal text, a variable reference, or
// something never evaluated.
struct Part;
using Parts = std::vector<Part>;

struct VarRef {
  std::string name;
  enum class Index { kNone, kAt, kStar, kNumber } index = Index::kNone;
  size_t number = 0;
  std::string op;     // "", ":-", "-", ":=", "=", ":+", "+".
  Parts alternative;  // The word after `op`.
};

struct Part {
  enum class Kind { kLiteral, kVariable, kInert } kind = Kind::kLiteral;
  bool quoted = false;
  std::string text;  // Literal text; or the source text of the reference.
  std::string why;   // kInert: why it is not evaluated.
  std::shared_ptr<VarRef> var;
};

struct Word {
  Parts parts;
  // `NAME=(...)` / `NAME+=(...)`: parts hold "NAME=" and these the elements.
  bool is_array = false;
  std::vector<Word> elements;
};

struct Command {
  std::vector<Word> words;
  size_t start = 0;  // Byte offset of the first word.
};

// An error with the byte offset it is about and the command it is in.
struct LexError {
  size_t pos = 0;
  size_t command_start = 0;
  std::string what;
};

// Reads `text` (which must outlive it) one simple command at a time.
class Lexer {
 public:
  explicit Lexer(absl::string_view text);
  ~Lexer();

  // The next simple command; false at the end, or on error (then failed()
  // and error() say where).
  bool Next(Command* command);
  bool failed() const;
  const LexError& error() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_JOB_SCRIPT_LEXER_H_
