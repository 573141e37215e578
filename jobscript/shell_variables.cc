// Shell variables and their expansion (see shell_variables.h).
#include "jobscript/shell_variables.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "jobscript/script_notes.h"

namespace oomguard::job_script_internal {

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

Parts AssignedParts(const Word& word, size_t prefix_bytes) {
  Parts parts = word.parts;
  parts[0].text.erase(0, prefix_bytes);
  if (parts[0].text.empty()) parts.erase(parts.begin());
  return parts;
}

void ShellVariables::Note(std::string note) { AddNote(*notes_, std::move(note)); }

const ShellVariables::Variable* ShellVariables::Find(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() || !it->second.known ? nullptr : &it->second;
}

bool ShellVariables::Spend(const std::vector<Pieces>& elements, int line) {
  if (!status_.ok()) return false;
  for (const Pieces& e : elements) work_ += PiecesBytes(e) + kExpansionWorkPerElement;
  if (work_ <= kMaxExpansionWork) return true;
  status_ = absl::ResourceExhaustedError(absl::StrCat(
      "line ", line, ": the script's variable expansions pass ", kMaxExpansionWork >> 20,
      " MiB of work (the bytes they copy, ", kExpansionWorkPerElement,
      " per array element), the most oomguard reads in one script; it cannot read this one"));
  return false;
}

void ShellVariables::NoteUnknown(const std::string& name, int line) {
  if (std::find(noted_unknown_.begin(), noted_unknown_.end(), name) != noted_unknown_.end()) {
    return;
  }
  noted_unknown_.push_back(name);
  Note(absl::StrCat("line ", line, ": $", Shown(name),
                    " is not assigned in the script; its value is only known when "
                    "the job runs"));
}

void ShellVariables::ExpandVariable(const Part& part, bool split, std::vector<Field>& fields,
                                    Field& current, bool& has_content, int line) {
  const VarRef& ref = *part.var;
  const Variable* var = Find(ref.name);
  if (!status_.ok() || (var != nullptr && !Spend(var->elements, line))) return;
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
        for (const std::string& source : expanded[i].sources) AddSource(current, source);
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
  // Every field the value reaches holds (a part of) it: named as its source
  // (a field cut right at the value's first blank too, which is harmless).
  const std::string source = absl::StrCat("$", ref.name);
  auto end_field = [&] {
    AddSource(current, source);
    fields.push_back(std::move(current));
    current = Field{};
  };
  if (!elements.empty()) AddSource(current, source);
  for (size_t i = 0; i < elements.size(); ++i) {
    if (part.quoted || !split) {
      if (i > 0 && multi && split) {
        end_field();
      } else if (i > 0) {
        AppendPiece(current.pieces, Piece{" ", false, ""});
      }
      for (const Piece& p : elements[i]) AppendPiece(current.pieces, p);
      has_content = true;
      continue;
    }
    // Unquoted: split on blanks; element boundaries are field boundaries.
    if (i > 0 && has_content) {
      end_field();
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
            end_field();
            has_content = false;
          }
        } else {
          AppendPiece(current.pieces, Piece{std::string(1, c), false, ""});
          has_content = true;
        }
      }
    }
  }
  if (has_content) AddSource(current, source);
}

std::vector<Field> ShellVariables::Expand(const Parts& parts, bool split, int line) {
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

void ShellVariables::SetEnvironment(const std::string& name, const std::string& value) {
  Variable& var = vars_[name];
  var = Variable{};
  var.exported = true;
  var.elements.push_back(Pieces{Piece{value, false, ""}});
}

void ShellVariables::Assign(const Word& word, bool exported, int line) {
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

void ShellVariables::Export(const std::string& name) {
  auto [it, inserted] = vars_.try_emplace(name);
  if (inserted) it->second.known = false;
  it->second.exported = true;
}

void ShellVariables::Unset(const std::string& name) { vars_.erase(name); }

std::optional<std::string> ShellVariables::ExportedValue(const std::string& name) const {
  const Variable* var = Find(name);
  if (var == nullptr || !var->exported || var->elements.empty()) return std::nullopt;
  const Pieces& value = var->elements[0];
  if (HasInert(value)) return std::nullopt;
  return LiteralText(value);
}

}  // namespace oomguard::job_script_internal
