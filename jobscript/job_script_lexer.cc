// The job script lexer (see job_script_lexer.h).
#include "jobscript/job_script_lexer.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace oomguard::job_script_internal {
namespace {

constexpr size_t kMaxElements = size_t{1} << 16;  // Array elements kept.
constexpr int kMaxNesting = 32;                   // ${A:-${B:-...}}.

}  // namespace

class Lexer::Impl {
 public:
  explicit Impl(absl::string_view text) : text_(text) {}

  // The next simple command; false at the end or on error (error() set).
  bool Next(Command* command) {
    *command = Command{};
    command_start_ = pos_;
    while (true) {
      SkipBlanks();
      if (pos_ >= text_.size()) return !command->words.empty();
      const char c = text_[pos_];
      if (c == '\n') {
        ++pos_;
        SkipHeredocs();
        if (!command->words.empty()) return true;
        continue;
      }
      if (c == '#') {  // A comment: only at the start of a word.
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '&' && Peek(1) == '>') {
        ++pos_;
        if (!Redirection()) return false;
        continue;
      }
      if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
        ++pos_;
        if (!command->words.empty()) return true;
        continue;
      }
      if (c == '<' || c == '>') {
        if (!Redirection()) return false;
        continue;
      }
      if (command->words.empty()) command->start = command_start_ = pos_;
      Word word;
      if (!ReadWord(&word, /*in_array=*/false)) return false;
      // `2>&1`: digits right before a redirection are its descriptor.
      if (pos_ < text_.size() && (text_[pos_] == '<' || text_[pos_] == '>') && IsDescriptor(word)) {
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '(' && IsArrayStart(word)) {
        ++pos_;
        if (!ReadArray(&word)) return false;
      }
      command->words.push_back(std::move(word));
    }
  }

  const LexError& error() const { return error_; }
  bool failed() const { return failed_; }

 private:
  char Peek(size_t ahead) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  bool Fail(size_t pos, std::string what) {
    failed_ = true;
    error_ = LexError{pos, command_start_, std::move(what)};
    return false;
  }

  // Blanks and backslash-newline continuations.
  void SkipBlanks() {
    while (pos_ < text_.size()) {
      if (IsBlank(text_[pos_])) {
        ++pos_;
      } else if (text_[pos_] == '\\' && Peek(1) == '\n') {
        pos_ += 2;
      } else if (text_[pos_] == '\\' && Peek(1) == '\r' && Peek(2) == '\n') {
        pos_ += 3;
      } else {
        break;
      }
    }
  }

  static bool IsDescriptor(const Word& w) {
    if (w.parts.size() != 1 || w.parts[0].kind != Part::Kind::kLiteral || w.parts[0].quoted ||
        w.parts[0].text.empty()) {
      return false;
    }
    const std::string& t = w.parts[0].text;
    return std::all_of(t.begin(), t.end(), [](char c) { return absl::ascii_isdigit(c); });
  }

  static bool IsArrayStart(const Word& w) {
    if (w.parts.size() != 1 || w.parts[0].kind != Part::Kind::kLiteral || w.parts[0].quoted) {
      return false;
    }
    absl::string_view t = w.parts[0].text;
    if (!absl::ConsumeSuffix(&t, "=")) return false;
    absl::ConsumeSuffix(&t, "+");
    return IsValidName(t);
  }

  // At `<` or `>` (or after the `&` of `&>`): the operator and its target.
  bool Redirection() {
    const size_t start = pos_;
    if (Peek(1) == '(' && text_[pos_] != '&') {  // <(...) >(...): never run.
      const size_t end = GroupEnd(pos_ + 1, '(', ')');
      if (end == absl::string_view::npos) {
        return Fail(start, "unterminated process substitution");
      }
      pos_ = end;
      return true;
    }
    bool heredoc = false;
    bool strip_tabs = false;
    if (text_.substr(pos_, 3) == "<<<") {
      pos_ += 3;
    } else if (text_.substr(pos_, 2) == "<<") {
      pos_ += 2;
      heredoc = true;
      if (Peek(0) == '-') {
        strip_tabs = true;
        ++pos_;
      }
    } else {
      ++pos_;
      const char c = Peek(0);
      if (c == '>' || c == '&' || c == '|' || (text_[start] == '<' && c == '>')) {
        ++pos_;
      }
    }
    SkipBlanks();
    if (pos_ >= text_.size() || text_[pos_] == '\n') return true;
    Word target;
    if (!ReadWord(&target, /*in_array=*/false)) return false;
    if (heredoc) {
      std::string delimiter;
      for (const Part& p : target.parts) delimiter += p.text;
      heredocs_.push_back({std::move(delimiter), strip_tabs});
    }
    return true;
  }

  // After a newline: skips the bodies of the heredocs opened on the line.
  void SkipHeredocs() {
    for (const auto& [delimiter, strip_tabs] : heredocs_) {
      while (pos_ < text_.size()) {
        size_t end = text_.find('\n', pos_);
        if (end == absl::string_view::npos) end = text_.size();
        absl::string_view line = text_.substr(pos_, end - pos_);
        pos_ = std::min(end + 1, text_.size());
        absl::ConsumeSuffix(&line, "\r");
        if (strip_tabs) {
          while (absl::ConsumePrefix(&line, "\t")) {
          }
        }
        if (line == delimiter) break;
      }
    }
    heredocs_.clear();
  }

  // A word: up to an unquoted blank, newline or operator (and `)` in an
  // array).
  bool ReadWord(Word* word, bool in_array) {
    Parts& parts = word->parts;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (IsBlank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
          c == '(' || c == ')') {
        if (!(c == '(' && in_array)) break;
      }
      if (c == '\\') {
        if (Peek(1) == '\n') {
          pos_ += 2;
        } else if (Peek(1) == '\r' && Peek(2) == '\n') {
          pos_ += 3;
        } else if (pos_ + 1 < text_.size()) {
          AppendLiteral(parts, absl::string_view(&text_[pos_ + 1], 1), true);
          pos_ += 2;
        } else {
          AppendLiteral(parts, "\\", false);
          ++pos_;
        }
      } else if (c == '\'') {
        const size_t close = text_.find('\'', pos_ + 1);
        if (close == absl::string_view::npos) {
          return Fail(pos_, "unterminated single quote");
        }
        AppendLiteral(parts, text_.substr(pos_ + 1, close - pos_ - 1), true);
        pos_ = close + 1;
      } else if (c == '"') {
        ++pos_;
        if (!ReadDoubleQuoted(parts)) return false;
      } else if (c == '$' && Peek(1) == '\'') {
        pos_ += 2;
        if (!ReadAnsiQuoted(parts)) return false;
      } else if (c == '$' && Peek(1) == '"') {
        pos_ += 2;
        if (!ReadDoubleQuoted(parts)) return false;
      } else if (c == '$') {
        if (!ReadDollar(parts, /*quoted=*/false, 0)) return false;
      } else if (c == '`') {
        if (!ReadBackticks(parts, false)) return false;
      } else {
        AppendLiteral(parts, absl::string_view(&text_[pos_], 1), false);
        ++pos_;
      }
    }
    return true;
  }

  static void AppendLiteral(Parts& parts, absl::string_view text, bool quoted) {
    if (!parts.empty() && parts.back().kind == Part::Kind::kLiteral &&
        parts.back().quoted == quoted) {
      parts.back().text.append(text.data(), text.size());
      return;
    }
    Part p;
    p.quoted = quoted;
    p.text = std::string(text);
    parts.push_back(std::move(p));
  }

  static void AppendInert(Parts& parts, absl::string_view source, absl::string_view why,
                          bool quoted) {
    Part p;
    p.kind = Part::Kind::kInert;
    p.quoted = quoted;
    p.text = std::string(source);
    p.why = std::string(why);
    parts.push_back(std::move(p));
  }

  // After the opening `"`: up to the closing one.
  bool ReadDoubleQuoted(Parts& parts) {
    const size_t open = pos_ - 1;
    // An empty "" still makes a word.
    AppendLiteral(parts, "", true);
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        const char n = Peek(1);
        if (n == '\n') {
          pos_ += 2;
        } else if (n == '$' || n == '`' || n == '"' || n == '\\') {
          AppendLiteral(parts, absl::string_view(&text_[pos_ + 1], 1), true);
          pos_ += 2;
        } else {
          AppendLiteral(parts, "\\", true);
          ++pos_;
        }
      } else if (c == '$') {
        if (!ReadDollar(parts, /*quoted=*/true, 0)) return false;
      } else if (c == '`') {
        if (!ReadBackticks(parts, true)) return false;
      } else {
        AppendLiteral(parts, absl::string_view(&text_[pos_], 1), true);
        ++pos_;
      }
    }
    return Fail(open, "unterminated double quote");
  }

  // After `$'`: ANSI-C quoting with the common escapes.
  bool ReadAnsiQuoted(Parts& parts) {
    const size_t open = pos_ - 2;
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\'') {
        ++pos_;
        AppendLiteral(parts, out, true);
        return true;
      }
      if (c == '\\' && pos_ + 1 < text_.size()) {
        const char n = text_[pos_ + 1];
        switch (n) {
          case 'n':
            out.push_back('\n');
            break;
          case 't':
            out.push_back('\t');
            break;
          case 'r':
            out.push_back('\r');
            break;
          default:
            out.push_back(n);
            break;
        }
        pos_ += 2;
      } else {
        out.push_back(c);
        ++pos_;
      }
    }
    return Fail(open, "unterminated $' quote");
  }

  // At a backtick: the command substitution, never run.
  bool ReadBackticks(Parts& parts, bool quoted) {
    const size_t open = pos_;
    size_t i = pos_ + 1;
    while (i < text_.size() && text_[i] != '`') {
      i += text_[i] == '\\' ? 2 : 1;
    }
    if (i >= text_.size()) return Fail(open, "unterminated backtick");
    pos_ = i + 1;
    AppendInert(parts, text_.substr(open, pos_ - open), "a command substitution, never run",
                quoted);
    return true;
  }

  // The end (one past the closer) of a `(`/`{` group opened at `open`,
  // skipping quoted text; npos when unterminated.
  size_t GroupEnd(size_t open, char opener, char closer) const {
    int depth = 0;
    size_t i = open;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '\\') {
        i += 2;
        continue;
      }
      if (c == '\'' && opener == '(') {
        const size_t close = text_.find('\'', i + 1);
        if (close == absl::string_view::npos) return absl::string_view::npos;
        i = close + 1;
        continue;
      }
      if (c == '"') {
        size_t j = i + 1;
        while (j < text_.size() && text_[j] != '"') j += text_[j] == '\\' ? 2 : 1;
        if (j >= text_.size()) return absl::string_view::npos;
        i = j + 1;
        continue;
      }
      if (c == opener) ++depth;
      if (c == closer && --depth == 0) return i + 1;
      ++i;
    }
    return absl::string_view::npos;
  }

  // At `$`: a variable reference, an inert substitution, or a literal `$`.
  bool ReadDollar(Parts& parts, bool quoted, int depth) {
    const size_t start = pos_;
    const char n = Peek(1);
    if (n == '(') {
      const size_t end = GroupEnd(pos_ + 1, '(', ')');
      if (end == absl::string_view::npos) {
        return Fail(start, "unterminated $( substitution");
      }
      pos_ = end;
      const bool arithmetic = text_[start + 2] == '(';
      AppendInert(parts, text_.substr(start, end - start),
                  arithmetic ? "arithmetic, never evaluated" : "a command substitution, never run",
                  quoted);
      return true;
    }
    if (n == '{') return ReadBraced(parts, quoted, depth);
    if (IsNameStart(n)) {
      size_t end = pos_ + 1;
      while (end < text_.size() && IsNameChar(text_[end])) ++end;
      auto var = std::make_shared<VarRef>();
      var->name = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      Part p;
      p.kind = Part::Kind::kVariable;
      p.quoted = quoted;
      p.text = std::string(text_.substr(start, end - start));
      p.var = std::move(var);
      parts.push_back(std::move(p));
      pos_ = end;
      return true;
    }
    if (absl::ascii_isdigit(static_cast<unsigned char>(n)) || absl::StrContains("@*#?-$!", n)) {
      pos_ += 2;
      AppendInert(parts, text_.substr(start, 2), "a shell parameter only known when the job runs",
                  quoted);
      return true;
    }
    AppendLiteral(parts, "$", quoted);
    ++pos_;
    return true;
  }

  // At `${`.
  bool ReadBraced(Parts& parts, bool quoted, int depth) {
    const size_t start = pos_;
    const size_t end = GroupEnd(pos_ + 1, '{', '}');
    if (end == absl::string_view::npos) {
      return Fail(start, "unterminated ${ substitution");
    }
    const absl::string_view source = text_.substr(start, end - start);
    auto unsupported = [&](absl::string_view why) {
      pos_ = end;
      AppendInert(parts, source, why, quoted);
      return true;
    };
    size_t i = pos_ + 2;
    size_t name_end = i;
    while (name_end < end - 1 && IsNameChar(text_[name_end])) ++name_end;
    if (name_end == i || !IsNameStart(text_[i])) {
      const bool parameter =
          text_[i + 1] == '}' && (absl::ascii_isdigit(static_cast<unsigned char>(text_[i])) ||
                                  absl::StrContains("@*#?-$!", text_[i]));
      return unsupported(parameter ? "a shell parameter only known when the job runs"
                                   : "an expansion oomguard does not evaluate");
    }
    auto var = std::make_shared<VarRef>();
    var->name = std::string(text_.substr(i, name_end - i));
    i = name_end;
    if (text_[i] == '[') {
      const size_t close = text_.find(']', i);
      if (close == absl::string_view::npos || close >= end) {
        return unsupported("an expansion oomguard does not evaluate");
      }
      const absl::string_view index = text_.substr(i + 1, close - i - 1);
      if (index == "@") {
        var->index = VarRef::Index::kAt;
      } else if (index == "*") {
        var->index = VarRef::Index::kStar;
      } else if (absl::SimpleAtoi(index, &var->number)) {
        var->index = VarRef::Index::kNumber;
      } else {
        return unsupported("an array index oomguard does not evaluate");
      }
      i = close + 1;
    }
    if (i < end - 1) {
      for (absl::string_view op : {":-", ":=", ":+", "-", "=", "+"}) {
        if (text_.substr(i, op.size()) == op) {
          var->op = std::string(op);
          break;
        }
      }
      if (var->op.empty() || depth >= kMaxNesting) {
        return unsupported("an expansion oomguard does not evaluate");
      }
      // The alternative word: lexed in place, up to the closing brace.
      pos_ = i + var->op.size();
      if (!ReadAlternative(var->alternative, quoted, end - 1, depth + 1)) {
        return false;
      }
    }
    pos_ = end;
    Part p;
    p.kind = Part::Kind::kVariable;
    p.quoted = quoted;
    p.text = std::string(source);
    p.var = std::move(var);
    parts.push_back(std::move(p));
    return true;
  }

  // The word of `${NAME:-word}` from pos_ to `close` (the brace).
  bool ReadAlternative(Parts& parts, bool quoted, size_t close, int depth) {
    while (pos_ < close) {
      const char c = text_[pos_];
      if (c == '\\' && pos_ + 1 < close) {
        AppendLiteral(parts, absl::string_view(&text_[pos_ + 1], 1), true);
        pos_ += 2;
      } else if (c == '\'' && !quoted) {
        const size_t q = text_.find('\'', pos_ + 1);
        if (q == absl::string_view::npos || q >= close) {
          return Fail(pos_, "unterminated single quote");
        }
        AppendLiteral(parts, text_.substr(pos_ + 1, q - pos_ - 1), true);
        pos_ = q + 1;
      } else if (c == '"') {
        ++pos_;
        if (!ReadDoubleQuoted(parts)) return false;
      } else if (c == '$') {
        if (!ReadDollar(parts, quoted, depth)) return false;
      } else if (c == '`') {
        if (!ReadBackticks(parts, quoted)) return false;
      } else {
        AppendLiteral(parts, absl::string_view(&text_[pos_], 1), quoted);
        ++pos_;
      }
    }
    return true;
  }

  // After `NAME=(`: the elements up to `)`.
  bool ReadArray(Word* word) {
    const size_t open = pos_ - 1;
    word->is_array = true;
    while (true) {
      SkipBlanks();
      if (pos_ >= text_.size()) return Fail(open, "unterminated array (");
      const char c = text_[pos_];
      if (c == ')') {
        ++pos_;
        return true;
      }
      if (c == '\n') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == ';' || c == '&' || c == '|' || c == '<' || c == '>') {
        ++pos_;  // Not valid bash inside an array; skipped.
        continue;
      }
      Word element;
      if (!ReadWord(&element, /*in_array=*/true)) return false;
      if (element.parts.empty()) {
        ++pos_;  // A stray `(`.
        continue;
      }
      if (word->elements.size() < kMaxElements) {
        word->elements.push_back(std::move(element));
      }
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
  size_t command_start_ = 0;
  std::vector<std::pair<std::string, bool>> heredocs_;
  bool failed_ = false;
  LexError error_;
};

Lexer::Lexer(absl::string_view text) : impl_(std::make_unique<Impl>(text)) {}
Lexer::~Lexer() = default;
bool Lexer::Next(Command* command) { return impl_->Next(command); }
bool Lexer::failed() const { return impl_->failed(); }
const LexError& Lexer::error() const { return impl_->error(); }

}  // namespace oomguard::job_script_internal
