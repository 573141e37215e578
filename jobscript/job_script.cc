// Job script -> Megatron-LM launch (see job_script.h).
//
// Two stages. The lexer (job_script_lexer.h) cuts the script into simple
// commands of words, keeping every `$...` and backtick as a part that is
// either a variable reference or inert. The reader here then walks the
// commands in order, records literal assignments, substitutes them into the
// later commands with bash's splitting rules, and looks for the launch.
// Nothing is ever executed: inert parts are carried as text for the notes.
#include "jobscript/job_script.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "jobscript/job_script_lexer.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

using job_script_internal::Command;
using job_script_internal::IsValidName;
using job_script_internal::Lexer;
using job_script_internal::LexError;
using job_script_internal::Part;
using job_script_internal::Parts;
using job_script_internal::VarRef;
using job_script_internal::Word;

// Bounds on what a hostile script can make the reader build.
constexpr size_t kMaxValueBytes = size_t{1} << 20;  // One variable's value.
constexpr size_t kMaxElements = size_t{1} << 16;    // Elements / fields.
constexpr size_t kMaxCommandWordsBytes = size_t{1} << 20;
constexpr int kMaxScriptDepth = 4;
// All the text expansions may copy, over the whole script.
constexpr size_t kMaxExpandedBytes = size_t{64} << 20;
constexpr size_t kMaxNotes = 40;
constexpr size_t kMaxShown = 80;

// The environment variables that change memory (ApplyEnvironment).
constexpr absl::string_view kMemoryEnv[] = {"PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER"};

// Text for a note or an error: escaped, bounded.
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

// ---------------------------------------------------------------------------
// Values and fields.

// A literal run of text, or something never evaluated (its source text and
// why it is not known).
struct Piece {
  std::string text;
  bool inert = false;
  std::string why;  // For inert pieces.
};

using Pieces = std::vector<Piece>;

// Inert text is only shown in notes: kept short.
constexpr size_t kMaxInertText = 256;
// Pieces in one value; past this it becomes one inert piece.
constexpr size_t kMaxPieces = 256;

void AppendPiece(Pieces& pieces, Piece piece) {
  if (!pieces.empty() && pieces.back().inert == piece.inert) {
    Piece& last = pieces.back();
    if (!piece.inert) {
      last.text += piece.text;
    } else if (last.text.size() < kMaxInertText) {
      last.text += piece.text.substr(0, kMaxInertText - last.text.size());
    }
    return;
  }
  if (pieces.size() >= kMaxPieces) {
    // Too many alternations of known and unknown text to keep apart.
    std::string text;
    for (const Piece& p : pieces) {
      if (text.size() >= kMaxInertText) break;
      text += p.text.substr(0, kMaxInertText - text.size());
    }
    pieces = {Piece{text, true, "a value mixing too many unknown parts to read"}};
    return;
  }
  pieces.push_back(std::move(piece));
}

size_t PiecesBytes(const Pieces& pieces) {
  size_t n = 0;
  for (const Piece& p : pieces) n += p.text.size();
  return n;
}

bool HasInert(const Pieces& pieces) {
  return std::any_of(pieces.begin(), pieces.end(), [](const Piece& p) { return p.inert; });
}

// The literal text, inert pieces left out.
std::string LiteralText(const Pieces& pieces) {
  std::string out;
  for (const Piece& p : pieces) {
    if (!p.inert) out += p.text;
  }
  return out;
}

// The text as written, inert pieces as their source.
std::string SourceText(const Pieces& pieces) {
  std::string out;
  for (const Piece& p : pieces) out += p.text;
  return out;
}

// The first reason a field is not known.
std::string WhyInert(const Pieces& pieces) {
  for (const Piece& p : pieces) {
    if (p.inert) return p.why;
  }
  return "";
}

// A shell variable: a scalar is an array of one element.
struct Variable {
  bool is_array = false;
  std::vector<Pieces> elements;
  bool exported = false;
  // False for `export NAME` of a name the script never assigned: its value
  // comes from outside.
  bool known = true;
};

// One word after expansion.
struct Field {
  Pieces pieces;
  bool inert() const { return HasInert(pieces); }
  std::string text() const { return LiteralText(pieces); }
};

// ---------------------------------------------------------------------------
// The reader.

class ScriptReader {
 public:
  explicit ScriptReader(ScriptJob* job) : job_(job) {}

  // Reads `script` (depth > 0: a `bash -c` string inside it).
  absl::Status ReadScript(absl::string_view script, int depth, int first_line);

  // Looks for the launch in already expanded fields (argv); `env` holds the
  // command's prefix assignments.
  void ReadFields(std::vector<Field> fields, std::map<std::string, std::string> env, int line,
                  int depth);

 private:
  void Note(std::string note) {
    if (job_->notes.size() < kMaxNotes) {
      job_->notes.push_back(std::move(note));
    } else if (job_->notes.size() == kMaxNotes) {
      job_->notes.push_back("more notes left out");
    }
  }

  int LineAt(size_t pos) const {
    return static_cast<int>(std::upper_bound(newlines_.begin(), newlines_.end(), pos) -
                            newlines_.begin()) +
           first_line_;
  }

  const Variable* Find(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() || !it->second.known ? nullptr : &it->second;
  }

  // Counts `bytes` against the expansion budget; false once it is spent.
  bool Spend(size_t bytes, int line) {
    expanded_bytes_ += bytes;
    if (expanded_bytes_ <= kMaxExpandedBytes) return true;
    if (!budget_noted_) {
      budget_noted_ = true;
      Note(absl::StrCat("line ", line, ": variables expand to more than ", kMaxExpandedBytes,
                        " bytes; later expansions are not read"));
    }
    return false;
  }

  void ReadCommand(const Command& command, int depth);
  void Assign(const Word& word, bool exported, int line);
  std::vector<Field> Expand(const Parts& parts, bool split, int line);
  void ExpandVariable(const Part& part, bool split, std::vector<Field>& fields, Field& current,
                      bool& has_content, int line);
  void NoteUnknown(const std::string& name, int line);
  std::map<std::string, std::string> LaunchEnvironment() const;
  void TakeLaunch(const std::vector<Field>& fields, size_t script, int line,
                  const std::map<std::string, std::string>& env);

  ScriptJob* job_;
  std::vector<size_t> newlines_;
  int first_line_ = 1;
  std::map<std::string, Variable> vars_;
  size_t expanded_bytes_ = 0;
  bool budget_noted_ = false;
  bool allexport_ = false;
  std::vector<std::string> noted_unknown_;
  int other_launches_ = 0;
};

// The name of an assignment word (`NAME=` / `NAME+=` at its start, unquoted),
// and whether it appends; nullopt when it is not one.
struct AssignmentTarget {
  std::string name;
  bool append = false;
  size_t prefix_bytes = 0;  // Of the first part, up to and with `=`.
};
std::optional<AssignmentTarget> AsAssignment(const Word& word) {
  if (word.parts.empty()) return std::nullopt;
  const Part& first = word.parts[0];
  if (first.kind != Part::Kind::kLiteral || first.quoted) return std::nullopt;
  const size_t eq = first.text.find('=');
  if (eq == std::string::npos) return std::nullopt;
  AssignmentTarget t;
  absl::string_view name = absl::string_view(first.text).substr(0, eq);
  t.append = absl::ConsumeSuffix(&name, "+");
  if (!IsValidName(name)) return std::nullopt;
  t.name = std::string(name);
  t.prefix_bytes = eq + 1;
  return t;
}

// The parts of an assignment word after `NAME=`.
Parts AssignedParts(const Word& word, size_t prefix_bytes) {
  Parts parts = word.parts;
  parts[0].text.erase(0, prefix_bytes);
  if (parts[0].text.empty()) parts.erase(parts.begin());
  return parts;
}

bool IsLiteralWord(const Word& w, absl::string_view text) {
  return w.parts.size() == 1 && w.parts[0].kind == Part::Kind::kLiteral && !w.parts[0].quoted &&
         w.parts[0].text == text;
}

std::string Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// The basename of a field when it is entirely literal (a path whose
// directory came from an unknown variable still has a literal basename).
std::optional<std::string> LiteralBasename(const Field& f) {
  if (f.pieces.empty() || f.pieces.back().inert) return std::nullopt;
  const std::string& last = f.pieces.back().text;
  if (f.pieces.size() > 1 && last.find('/') == std::string::npos) return std::nullopt;
  return Basename(last);
}

bool IsPython(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "python")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

bool IsLauncher(absl::string_view name) {
  return name == "torchrun" || name == "srun" || name == "mpirun" || name == "mpiexec" ||
         IsPython(name);
}

bool IsShell(absl::string_view name) { return name == "bash" || name == "sh"; }

// `-c`, `-lc`, `-ec`, `-xec`...: a shell option cluster that takes a script.
bool IsDashC(absl::string_view word) {
  if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
  return word.find('c') != absl::string_view::npos &&
         std::all_of(word.begin() + 1, word.end(),
                     [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); });
}

enum class ScriptKind { kNone, kGpt, kOtherMegatron };

// What a script basename (with .py) is.
ScriptKind ClassifyScript(absl::string_view base) {
  if (!absl::EndsWith(base, ".py")) return ScriptKind::kNone;
  if (absl::StartsWith(base, "pretrain_gpt") || absl::StartsWith(base, "pretrain_llama")) {
    return ScriptKind::kGpt;
  }
  if (absl::StartsWith(base, "pretrain_")) return ScriptKind::kOtherMegatron;
  return ScriptKind::kNone;
}

// Whether the Megatron-LM flag `flag` ("--name") takes a value: it does when
// it is refused without one.
bool FlagTakesValue(const std::string& flag) {
  v1::JobSpec scratch;
  const std::vector<std::string> alone = {flag};
  return absl::IsInvalidArgument(ApplyMegatronArgs(alone, ArgsMode::kOverrides, &scratch, nullptr));
}

void ScriptReader::NoteUnknown(const std::string& name, int line) {
  if (std::find(noted_unknown_.begin(), noted_unknown_.end(), name) != noted_unknown_.end()) {
    return;
  }
  noted_unknown_.push_back(name);
  Note(absl::StrCat("line ", line, ": $", Shown(name),
                    " is not assigned in the script; its value is only known when "
                    "the job runs"));
}

void ScriptReader::ExpandVariable(const Part& part, bool split, std::vector<Field>& fields,
                                  Field& current, bool& has_content, int line) {
  const VarRef& ref = *part.var;
  const Variable* var = Find(ref.name);
  if (var != nullptr) {
    size_t bytes = 0;
    for (const Pieces& e : var->elements) bytes += PiecesBytes(e);
    if (!Spend(bytes, line)) {
      AppendPiece(current.pieces, Piece{part.text, true, "past the expansion budget"});
      has_content = true;
      return;
    }
  }
  // The elements the reference stands for.
  std::vector<Pieces> elements;
  bool multi = false;  // "${A[@]}": one field per element.
  if (var != nullptr) {
    switch (ref.index) {
      case VarRef::Index::kNone:
        elements.push_back(var->elements.empty() ? Pieces{} : var->elements[0]);
        break;
      case VarRef::Index::kNumber:
        elements.push_back(ref.number < var->elements.size() ? var->elements[ref.number]
                                                             : Pieces{});
        break;
      case VarRef::Index::kAt:
        elements = var->elements;
        multi = true;
        break;
      case VarRef::Index::kStar: {
        Pieces joined;
        for (size_t i = 0; i < var->elements.size(); ++i) {
          if (i > 0) AppendPiece(joined, Piece{" ", false, ""});
          for (const Piece& p : var->elements[i]) AppendPiece(joined, p);
        }
        elements.push_back(std::move(joined));
        multi = !part.quoted;
        break;
      }
    }
  }
  // ${NAME:-word} and friends. An unknown variable is taken as unset.
  if (!ref.op.empty()) {
    bool set = var != nullptr;
    if (set && ref.op[0] == ':') {
      set = std::any_of(elements.begin(), elements.end(),
                        [](const Pieces& e) { return PiecesBytes(e) > 0 || HasInert(e); });
    }
    if (var == nullptr) {
      Note(absl::StrCat("line ", line, ": ", Shown(part.text), ": assumed $", Shown(ref.name),
                        " unset"));
    }
    const bool use_alternative = (ref.op.back() == '+') ? set : !set;
    if (ref.op.back() == '+' && !set) return;
    if (use_alternative) {
      if (ref.op.back() == '=' && var == nullptr) {
        std::vector<Field> value = Expand(ref.alternative, false, line);
        Variable& v = vars_[ref.name];
        v.elements = {value.empty() ? Pieces{} : value[0].pieces};
        v.exported = v.exported || allexport_;
        v.known = true;
      }
      Parts alt = ref.alternative;
      for (Part& p : alt) p.quoted = p.quoted || part.quoted;
      std::vector<Field> expanded = Expand(alt, split && !part.quoted, line);
      for (size_t i = 0; i < expanded.size(); ++i) {
        if (i > 0) {
          fields.push_back(std::move(current));
          current = Field{};
        }
        for (Piece& p : expanded[i].pieces) AppendPiece(current.pieces, std::move(p));
        has_content = true;
      }
      if (!expanded.empty() || part.quoted) has_content = true;
      return;
    }
  } else if (var == nullptr) {
    NoteUnknown(ref.name, line);
    AppendPiece(
        current.pieces,
        Piece{part.text, true, absl::StrCat("$", ref.name, " is not assigned in the script")});
    has_content = true;
    return;
  }
  for (size_t i = 0; i < elements.size(); ++i) {
    if (part.quoted || !split) {
      if (i > 0 && multi && split) {
        fields.push_back(std::move(current));
        current = Field{};
      } else if (i > 0) {
        AppendPiece(current.pieces, Piece{" ", false, ""});
      }
      for (const Piece& p : elements[i]) AppendPiece(current.pieces, p);
      has_content = true;
      continue;
    }
    // Unquoted: split on blanks; element boundaries are field boundaries.
    if (i > 0 && has_content) {
      fields.push_back(std::move(current));
      current = Field{};
      has_content = false;
    }
    for (const Piece& p : elements[i]) {
      if (fields.size() >= kMaxElements) break;
      if (p.inert) {
        AppendPiece(current.pieces, p);
        has_content = true;
        continue;
      }
      for (const char c : p.text) {
        if (c == ' ' || c == '\t' || c == '\n') {
          if (has_content) {
            fields.push_back(std::move(current));
            current = Field{};
            has_content = false;
          }
        } else {
          AppendPiece(current.pieces, Piece{std::string(1, c), false, ""});
          has_content = true;
        }
      }
    }
  }
}

std::vector<Field> ScriptReader::Expand(const Parts& parts, bool split, int line) {
  std::vector<Field> fields;
  Field current;
  bool has_content = false;
  for (const Part& part : parts) {
    if (fields.size() >= kMaxElements || PiecesBytes(current.pieces) > kMaxValueBytes) {
      Note(absl::StrCat("line ", line, ": a word expands past ", kMaxValueBytes, " bytes or ",
                        kMaxElements, " words; the rest is left out"));
      break;
    }
    switch (part.kind) {
      case Part::Kind::kLiteral:
        AppendPiece(current.pieces, Piece{part.text, false, ""});
        has_content = true;
        break;
      case Part::Kind::kInert:
        AppendPiece(current.pieces, Piece{part.text, true, part.why});
        has_content = true;
        break;
      case Part::Kind::kVariable:
        ExpandVariable(part, split, fields, current, has_content, line);
        break;
    }
  }
  if (has_content || !split) fields.push_back(std::move(current));
  return fields;
}

void ScriptReader::Assign(const Word& word, bool exported, int line) {
  std::optional<AssignmentTarget> target = AsAssignment(word);
  if (!target) return;
  // The value first: it may refer to the variable's old value.
  std::vector<Pieces> elements;
  if (word.is_array) {
    for (const Word& element : word.elements) {
      for (Field& f : Expand(element.parts, true, line)) {
        if (elements.size() >= kMaxElements) break;
        elements.push_back(std::move(f.pieces));
      }
    }
  } else {
    std::vector<Field> value = Expand(AssignedParts(word, target->prefix_bytes), false, line);
    elements.push_back(value.empty() ? Pieces{} : std::move(value[0].pieces));
  }
  Variable& var = vars_[target->name];
  var.exported = var.exported || exported || allexport_;
  // Appending to a value from outside the script: taken as empty.
  if (!target->append || !var.known) var.elements.clear();
  var.known = true;
  if (word.is_array) {
    var.is_array = true;
    for (Pieces& e : elements) {
      if (var.elements.size() >= kMaxElements) break;
      var.elements.push_back(std::move(e));
    }
    return;
  }
  if (!target->append) var.is_array = false;
  if (var.elements.empty()) var.elements.emplace_back();
  for (Piece& p : elements[0]) AppendPiece(var.elements[0], std::move(p));
  if (PiecesBytes(var.elements[0]) > kMaxValueBytes) {
    Note(absl::StrCat("line ", line, ": $", target->name, " is longer than ", kMaxValueBytes,
                      " bytes; not used"));
    var.elements = {
        Pieces{Piece{absl::StrCat("$", target->name), true, "a value too long to read"}}};
  }
}

std::map<std::string, std::string> ScriptReader::LaunchEnvironment() const {
  std::map<std::string, std::string> env;
  for (absl::string_view name : kMemoryEnv) {
    const Variable* var = Find(std::string(name));
    if (var == nullptr || !var->exported || var->elements.empty()) continue;
    const Pieces& value = var->elements[0];
    if (!HasInert(value)) env[std::string(name)] = LiteralText(value);
  }
  return env;
}

void ScriptReader::ReadCommand(const Command& command, int depth) {
  const std::vector<Word>& words = command.words;
  const int line = LineAt(command.start);
  size_t i = 0;
  // Reserved words that precede a command on the same line.
  while (i < words.size() && (IsLiteralWord(words[i], "then") || IsLiteralWord(words[i], "do") ||
                              IsLiteralWord(words[i], "else") || IsLiteralWord(words[i], "elif") ||
                              IsLiteralWord(words[i], "if") || IsLiteralWord(words[i], "while") ||
                              IsLiteralWord(words[i], "until") || IsLiteralWord(words[i], "{") ||
                              IsLiteralWord(words[i], "}") || IsLiteralWord(words[i], "!") ||
                              IsLiteralWord(words[i], "fi") || IsLiteralWord(words[i], "done") ||
                              IsLiteralWord(words[i], "time"))) {
    ++i;
  }
  // Prefix assignments: alone they set shell variables; before a command
  // they are that command's environment.
  const size_t assignments_start = i;
  while (i < words.size() && AsAssignment(words[i])) ++i;
  if (i == words.size()) {
    for (size_t k = assignments_start; k < words.size(); ++k) Assign(words[k], false, line);
    return;
  }
  const Word& name = words[i];
  if (IsLiteralWord(name, "export") || IsLiteralWord(name, "declare") ||
      IsLiteralWord(name, "typeset") || IsLiteralWord(name, "local") ||
      IsLiteralWord(name, "readonly")) {
    bool exported = IsLiteralWord(name, "export");
    for (size_t k = i + 1; k < words.size(); ++k) {
      const Word& w = words[k];
      if (!w.parts.empty() && w.parts[0].kind == Part::Kind::kLiteral && !w.parts[0].quoted &&
          absl::StartsWith(w.parts[0].text, "-")) {
        if (absl::StrContains(w.parts[0].text, 'x')) exported = true;
        continue;
      }
      if (AsAssignment(w)) {
        Assign(w, exported, line);
      } else if (exported && w.parts.size() == 1 && w.parts[0].kind == Part::Kind::kLiteral &&
                 IsValidName(w.parts[0].text)) {
        auto [it, inserted] = vars_.try_emplace(w.parts[0].text);
        if (inserted) it->second.known = false;
        it->second.exported = true;
      }
    }
    return;
  }
  if (IsLiteralWord(name, "unset")) {
    for (size_t k = i + 1; k < words.size(); ++k) {
      if (words[k].parts.size() == 1) vars_.erase(words[k].parts[0].text);
    }
    return;
  }
  if (IsLiteralWord(name, "set")) {
    for (size_t k = i + 1; k < words.size(); ++k) {
      if (IsLiteralWord(words[k], "-a") || IsLiteralWord(words[k], "-o")) {
        allexport_ = allexport_ || IsLiteralWord(words[k], "-a") ||
                     (k + 1 < words.size() && IsLiteralWord(words[k + 1], "allexport"));
      } else if (IsLiteralWord(words[k], "+a")) {
        allexport_ = false;
      }
    }
    return;
  }
  // Only commands that may be a launch are expanded (and their unknown
  // variables noted).
  std::optional<std::string> first;
  {
    std::vector<Field> head = Expand(name.parts, true, line);
    if (head.empty()) return;
    first = LiteralBasename(head[0]);
  }
  static constexpr absl::string_view kWrappers[] = {"exec", "nohup", "env", "command", "numactl"};
  if (!first ||
      !(IsLauncher(*first) || IsShell(*first) ||
        std::find(std::begin(kWrappers), std::end(kWrappers), *first) != std::end(kWrappers))) {
    return;
  }
  std::map<std::string, std::string> prefix_env;
  for (size_t k = assignments_start; k < i; ++k) {
    std::optional<AssignmentTarget> t = AsAssignment(words[k]);
    std::vector<Field> v = Expand(AssignedParts(words[k], t->prefix_bytes), false, line);
    if (!v.empty() && !v[0].inert()) prefix_env[t->name] = v[0].text();
  }
  std::vector<Field> fields;
  size_t bytes = 0;
  for (size_t k = i; k < words.size(); ++k) {
    for (Field& f : Expand(words[k].parts, true, line)) {
      bytes += PiecesBytes(f.pieces);
      if (fields.size() >= kMaxElements || bytes > kMaxCommandWordsBytes) {
        Note(absl::StrCat("line ", line, ": the command is longer than ", kMaxCommandWordsBytes,
                          " bytes; not read"));
        return;
      }
      fields.push_back(std::move(f));
    }
  }
  ReadFields(std::move(fields), std::move(prefix_env), line, depth);
}

void ScriptReader::ReadFields(std::vector<Field> fields, std::map<std::string, std::string> env,
                              int line, int depth) {
  // Wrappers and their environment assignments.
  size_t j = 0;
  while (j < fields.size()) {
    const std::optional<std::string> base = LiteralBasename(fields[j]);
    if (!base) return;
    if (*base == "exec" || *base == "nohup" || *base == "command" || *base == "time") {
      ++j;
    } else if (*base == "env") {
      ++j;
      while (j < fields.size()) {
        const std::string t = fields[j].text();
        const size_t eq = t.find('=');
        if (absl::StartsWith(t, "-")) {
          ++j;
        } else if (eq != std::string::npos && IsValidName(t.substr(0, eq))) {
          if (!fields[j].inert()) env[t.substr(0, eq)] = t.substr(eq + 1);
          ++j;
        } else {
          break;
        }
      }
    } else if (*base == "numactl") {
      ++j;
      while (j < fields.size() && absl::StartsWith(fields[j].text(), "-")) ++j;
    } else {
      break;
    }
  }
  if (j >= fields.size()) return;
  const std::optional<std::string> launcher = LiteralBasename(fields[j]);
  if (!launcher) return;
  const bool shell = IsShell(*launcher);
  if (!IsLauncher(*launcher) && !shell) return;
  for (size_t k = j + (shell ? 0 : 1); k < fields.size(); ++k) {
    const std::optional<std::string> base = LiteralBasename(fields[k]);
    if (!base) continue;
    // `srun bash -c "<script>"`: a script in a word.
    if (IsShell(*base) && k + 2 < fields.size() && IsDashC(fields[k + 1].text())) {
      if (depth >= kMaxScriptDepth || fields[k + 2].inert()) {
        Note(absl::StrCat("line ", line, ": the ", *base,
                          " -c script is not known before the job runs; not read"));
        return;
      }
      const std::string inner = fields[k + 2].text();
      absl::Status s = ReadScript(inner, depth + 1, line);
      if (!s.ok()) Note(absl::StrCat("line ", line, ": ", *base, " -c script: ", s.message()));
      return;
    }
    if (shell) return;
    std::string script_name = *base;
    size_t script_at = k;
    if (*base == "-m" && k + 1 < fields.size() && !fields[k + 1].inert()) {
      const std::string module = fields[k + 1].text();
      const size_t dot = module.rfind('.');
      script_name = absl::StrCat(dot == std::string::npos ? module : module.substr(dot + 1), ".py");
      script_at = k + 1;
      if (ClassifyScript(script_name) == ScriptKind::kNone) {
        ++k;  // -m torch.distributed.run: the launcher's module.
        continue;
      }
    }
    switch (ClassifyScript(script_name)) {
      case ScriptKind::kNone:
        continue;
      case ScriptKind::kOtherMegatron:
        Note(absl::StrCat("line ", line, ": ", Shown(script_name),
                          " is not a GPT-style Megatron-LM model (oomguard models "
                          "pretrain_gpt*.py and pretrain_llama*.py); not judged"));
        return;
      case ScriptKind::kGpt:
        for (auto& [k2, v] : LaunchEnvironment()) env.emplace(k2, v);
        TakeLaunch(fields, script_at, line, env);
        return;
    }
  }
}

void ScriptReader::TakeLaunch(const std::vector<Field>& fields, size_t script, int line,
                              const std::map<std::string, std::string>& env) {
  if (job_->found) {
    if (other_launches_++ == 0) {
      Note(absl::StrCat("line ", line, ": another Megatron-LM launch; only the first (line ",
                        job_->launch_line, ") is judged"));
    }
    return;
  }
  job_->found = true;
  job_->launch_line = line;
  for (absl::string_view name : kMemoryEnv) {
    auto it = env.find(std::string(name));
    if (it != env.end()) job_->env[it->first] = it->second;
  }
  std::vector<std::string>& args = job_->megatron_args;
  bool previous_kept = false;  // The previous field made it into args.
  for (size_t k = script + 1; k < fields.size(); ++k) {
    const Field& f = fields[k];
    if (!f.inert()) {
      args.push_back(f.text());
      previous_kept = true;
      continue;
    }
    std::string dropped = SourceText(f.pieces);
    if (previous_kept && !args.empty() && absl::StartsWith(args.back(), "--") &&
        !absl::StrContains(args.back(), '=') && !absl::StartsWith(dropped, "-") &&
        FlagTakesValue(args.back())) {
      dropped = absl::StrCat(args.back(), " ", dropped);
      args.pop_back();
    }
    Note(absl::StrCat("line ", line, ": dropped ", Shown(dropped), ": ", WhyInert(f.pieces)));
    if (job_->unresolved.size() < kMaxNotes) job_->unresolved.push_back(Shown(dropped));
    previous_kept = false;
  }
}

absl::Status ScriptReader::ReadScript(absl::string_view script, int depth, int first_line) {
  const std::vector<size_t> saved_newlines = std::move(newlines_);
  const int saved_first_line = std::exchange(first_line_, first_line);
  newlines_.clear();
  for (size_t i = 0; i < script.size(); ++i) {
    if (script[i] == '\n') newlines_.push_back(i);
  }
  Lexer lexer(script);
  Command command;
  absl::Status status;
  while (lexer.Next(&command)) ReadCommand(command, depth);
  if (lexer.failed()) {
    const LexError& e = lexer.error();
    const int line = LineAt(e.pos);
    const absl::string_view rest = script.substr(e.command_start);
    if (job_->found) {
      Note(absl::StrCat("line ", line, ": ", e.what, "; the rest of the script was not read"));
    } else if (absl::StrContains(rest, "pretrain_")) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "line ", line, ": ", e.what, " in the command starting at line ", LineAt(e.command_start),
          ", before or on the Megatron-LM launch (bash stops there)"));
    } else {
      Note(absl::StrCat("line ", line, ": ", e.what, "; the rest of the script was not read"));
    }
  }
  newlines_ = saved_newlines;
  first_line_ = saved_first_line;
  return status;
}

// ---------------------------------------------------------------------------
// Directives.

absl::Status DirectiveError(int line, absl::string_view item, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line, ": #OOMGUARD ", Shown(item), ": ", why));
}

bool IsNameValue(absl::string_view v) {
  return !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '+';
  });
}

absl::Status ApplyDirective(absl::string_view item, int line, ScriptJob* job) {
  const size_t eq = item.find('=');
  const absl::string_view key = item.substr(0, eq);
  const absl::string_view value =
      eq == absl::string_view::npos ? absl::string_view() : item.substr(eq + 1);
  if (key == "skip") {
    if (eq == absl::string_view::npos || value == "true" || value == "yes" || value == "1") {
      job->skip = true;
    } else if (value == "false" || value == "no" || value == "0") {
      job->skip = false;
    } else {
      return DirectiveError(line, item, "expected skip, skip=true or skip=false");
    }
    return absl::OkStatus();
  }
  if (key != "preset" && key != "gpu" && key != "gpus" && key != "gpus-per-node" &&
      key != "safety-margin") {
    return DirectiveError(line, item,
                          "unknown key; known: preset, gpu, gpus, gpus-per-node, "
                          "safety-margin, skip");
  }
  if (eq == absl::string_view::npos) return DirectiveError(line, item, "expected key=value");
  if (key == "preset" || key == "gpu") {
    if (!IsNameValue(value)) {
      return DirectiveError(line, item, "expected a name of letters, digits and -_.+");
    }
    (key == "preset" ? job->preset : job->gpu) = std::string(value);
  } else if (key == "gpus" || key == "gpus-per-node") {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(value, &n) || n == 0 || n > (1u << 20)) {
      return DirectiveError(line, item, "expected a whole number in [1, 1048576]");
    }
    (key == "gpus" ? job->num_gpus : job->gpus_per_node) = n;
  } else {
    double margin = 0;
    if (!absl::SimpleAtod(value, &margin) || !std::isfinite(margin) || margin < 0 || margin >= 1) {
      return DirectiveError(line, item, "expected a fraction in [0, 1)");
    }
    job->safety_margin = margin;
  }
  return absl::OkStatus();
}

absl::Status ReadDirectives(absl::string_view script, ScriptJob* job) {
  int line = 0;
  for (absl::string_view text : absl::StrSplit(script, '\n')) {
    ++line;
    text = absl::StripLeadingAsciiWhitespace(text);
    if (!absl::ConsumePrefix(&text, "#OOMGUARD")) continue;
    if (!text.empty() && !absl::ascii_isspace(static_cast<unsigned char>(text[0]))) continue;
    for (absl::string_view item :
         absl::StrSplit(text, absl::ByAnyChar(" \t\r"), absl::SkipEmpty())) {
      if (absl::Status s = ApplyDirective(item, line, job); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ScriptJob> ParseJobScript(absl::string_view script) {
  if (script.size() > kMaxJobScriptBytes) {
    return absl::InvalidArgumentError(absl::StrCat("job script is ", script.size(),
                                                   " bytes, more than the limit of ",
                                                   kMaxJobScriptBytes, " bytes"));
  }
  ScriptJob job;
  if (absl::Status s = ReadDirectives(script, &job); !s.ok()) return s;
  ScriptReader reader(&job);
  if (absl::Status s = reader.ReadScript(script, 0, 1); !s.ok()) return s;
  return job;
}

absl::StatusOr<ScriptJob> ParseCommandWords(absl::Span<const std::string> words) {
  size_t bytes = 0;
  for (const std::string& w : words) bytes += w.size() + 1;
  if (bytes > kMaxCommandWordsBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "command is ", bytes, " bytes, more than the limit of ", kMaxCommandWordsBytes, " bytes"));
  }
  // `bash -c SCRIPT ...` (directly or after env/exec): the script decides.
  for (size_t k = 0; k + 2 < words.size() && k < 4; ++k) {
    if (IsShell(Basename(words[k])) && IsDashC(words[k + 1])) {
      return ParseJobScript(words[k + 2]);
    }
  }
  std::vector<Field> fields;
  for (const std::string& w : words) {
    Field f;
    // An unresolved Kubernetes $(NAME) reference.
    const size_t ref = w.find("$(");
    if (ref != std::string::npos && w.find(')', ref) != std::string::npos) {
      f.pieces.push_back(Piece{w, true, "a $(NAME) reference Kubernetes did not resolve"});
    } else {
      f.pieces.push_back(Piece{w, false, ""});
    }
    fields.push_back(std::move(f));
  }
  ScriptJob job;
  ScriptReader reader(&job);
  reader.ReadFields(std::move(fields), {}, 1, 0);
  return job;
}

}  // namespace oomguard
