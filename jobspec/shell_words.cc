#include "jobspec/shell_words.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

constexpr size_t kMaxArgumentLineBytes = size_t{1} << 20;

bool IsWordSeparator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The word separators, the quotes and the backslash: what ends a run of
// plain characters.
constexpr absl::string_view kSpecialCharacters = " \t\n\r'\"\\";

// Length of a line break starting at `pos` ("\n" or "\r\n"), else 0.
size_t LineBreakLength(absl::string_view line, size_t pos) {
  if (pos < line.size() && line[pos] == '\n') return 1;
  if (line.substr(pos, 2) == "\r\n") return 2;
  return 0;
}

// Reads a double-quoted string whose opening quote is at `open` into `word`;
// returns the position after the closing quote.
absl::StatusOr<size_t> ReadDoubleQuoted(absl::string_view line, size_t open, std::string* word) {
  size_t pos = open + 1;
  while (pos < line.size()) {
    const char c = line[pos];
    if (c == '"') return pos + 1;
    if (c == '\\' && pos + 1 < line.size()) {
      if (const size_t n = LineBreakLength(line, pos + 1); n > 0) {
        pos += 1 + n;
        continue;
      }
      const char next = line[pos + 1];
      if (next == '"' || next == '\\' || next == '$' || next == '`') {
        word->push_back(next);
        pos += 2;
        continue;
      }
    }
    word->push_back(c);
    ++pos;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unterminated double quote opened at byte ", open));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitArgumentLine(std::string_view std_line) {
  // This absl build has its own string_view type.
  const absl::string_view line(std_line.data(), std_line.size());
  if (line.size() > kMaxArgumentLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument line longer than ", kMaxArgumentLineBytes, " bytes"));
  }
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // Also true for an empty quoted word ('').
  size_t pos = 0;
  while (pos < line.size()) {
    const char c = line[pos];
    if (IsWordSeparator(c)) {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
      ++pos;
    } else if (c == '\'') {
      const size_t close = line.find('\'', pos + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("unterminated single quote opened at byte ", pos));
      }
      word.append(line.data() + pos + 1, close - pos - 1);
      in_word = true;
      pos = close + 1;
    } else if (c == '"') {
      OOMGUARD_ASSIGN_OR_RETURN(pos, ReadDoubleQuoted(line, pos, &word));
      in_word = true;
    } else if (c == '\\') {
      if (const size_t n = LineBreakLength(line, pos + 1); n > 0) {
        pos += 1 + n;  // Continuation: removed, joins the lines.
      } else if (pos + 1 < line.size()) {
        word.push_back(line[pos + 1]);
        in_word = true;
        pos += 2;
      } else {
        word.push_back('\\');  // A trailing backslash stays literal.
        in_word = true;
        ++pos;
      }
    } else {
      // A run of plain characters, appended at once.
      size_t end = line.find_first_of(kSpecialCharacters, pos + 1);
      if (end == absl::string_view::npos) end = line.size();
      word.append(line.data() + pos, end - pos);
      in_word = true;
      pos = end;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string JoinShellWords(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
             absl::string_view("_-.,:/=+@%").find(c) != absl::string_view::npos;
    });
    if (plain) {
      line += word;
      continue;
    }
    line += '\'';
    for (const char c : word) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace oomguard
