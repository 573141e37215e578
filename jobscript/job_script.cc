// Job script -> Megatron-LM launch (see job_script.h).
//
// Two stages. The lexer (job_script_lexer.h) cuts the script into simple
// commands of words, keeping every `$...` and backtick as a part that is
// either a variable reference or inert. The reader here then walks the
// commands in order: assignments go to the shell variables
// (shell_variables.h), which substitute them into the later commands with
// bash's splitting rules, and the commands that may launch are handed to
// the launch finder (launch_finder.h). Directives are read apart
// (directives.h). Nothing is ever executed: inert parts are carried as text
// for the notes.
#include "jobscript/job_script.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobscript/directives.h"
#include "jobscript/expanded_word.h"
#include "jobscript/job_script_lexer.h"
#include "jobscript/launch_finder.h"
#include "jobscript/sbatch_options.h"
#include "jobscript/script_notes.h"
#include "jobscript/shell_variables.h"

namespace oomguard {
namespace {

using job_script_internal::AddNote;
using job_script_internal::AsAssignment;
using job_script_internal::AssignedParts;
using job_script_internal::AssignmentTarget;
using job_script_internal::Basename;
using job_script_internal::Command;
using job_script_internal::Field;
using job_script_internal::IsDashC;
using job_script_internal::IsShell;
using job_script_internal::IsValidName;
using job_script_internal::LaunchFinder;
using job_script_internal::Lexer;
using job_script_internal::LexError;
using job_script_internal::LiteralBasename;
using job_script_internal::MayLaunch;
using job_script_internal::Part;
using job_script_internal::Piece;
using job_script_internal::PiecesBytes;
using job_script_internal::ReadDirectives;
using job_script_internal::ReadSbatchOptions;
using job_script_internal::SbatchOptions;
using job_script_internal::ShellScript;
using job_script_internal::ShellVariables;
using job_script_internal::SlurmAllocation;
using job_script_internal::Word;

// The one bound on a launch's words, as the error names it: more than
// kMaxCommandWords words or kMaxCommandBytes bytes. A launch past it is one
// oomguard cannot read (RESOURCE_EXHAUSTED), never a job without a launch.
absl::Status CommandTooLong(int line, size_t words, size_t bytes) {
  return absl::ResourceExhaustedError(
      words > kMaxCommandWords
          ? absl::StrCat("line ", line, ": the command has more than ", kMaxCommandWords,
                         " words, the most oomguard reads in one command")
          : absl::StrCat("line ", line, ": the command is ", bytes, " bytes, more than the ",
                         kMaxCommandBytes, " bytes oomguard reads in one command"));
}

bool IsLiteralWord(const Word& w, absl::string_view text) {
  return w.parts.size() == 1 && w.parts[0].kind == Part::Kind::kLiteral && !w.parts[0].quoted &&
         w.parts[0].text == text;
}

// Walks a script's commands, keeping its variables, until the launch.
class ScriptReader {
 public:
  // `sbatch`: what the script's #SBATCH lines allocate (null: none);
  // `environment`: the variables the script starts with, exported.
  ScriptReader(ScriptJob* job, const SbatchOptions* sbatch,
               const std::map<std::string, std::string>& environment, const Deadline& deadline)
      : job_(job),
        deadline_(deadline),
        variables_(&job->notes),
        allocation_(sbatch != nullptr ? job_script_internal::Allocate(*sbatch) : SlurmAllocation{}),
        launches_(job, &variables_, &allocation_) {
    for (const auto& [name, value] : environment) {
      if (IsValidName(name)) variables_.SetEnvironment(name, value);
    }
    if (sbatch == nullptr) return;
    for (const auto& [name, value] : job_script_internal::SlurmEnvironment(*sbatch, allocation_)) {
      variables_.SetEnvironment(name, value);
    }
    job->allocated = ScriptSize{allocation_.gpus, allocation_.gpus_per_node, allocation_.how};
    job->allocated_gpu_type = allocation_.gpu_type;
  }

  // Reads `script` (depth > 0: a `bash -c` string inside it), its lines
  // counted from `first_line`. RESOURCE_EXHAUSTED past the expansion work
  // (shell_variables.h) and DEADLINE_EXCEEDED past the deadline, also from a
  // `bash -c` script inside it: the reading stops there.
  absl::Status ReadScript(absl::string_view script, int depth, int first_line);

  // Looks for the launch in already expanded fields (argv); `env` holds the
  // command's prefix assignments. Errors: as ReadScript's.
  absl::Status ReadFields(const std::vector<Field>& fields, std::map<std::string, std::string> env,
                          int line, int depth);

 private:
  void Note(std::string note) { AddNote(job_->notes, std::move(note)); }

  int LineAt(size_t pos) const {
    return static_cast<int>(std::upper_bound(newlines_.begin(), newlines_.end(), pos) -
                            newlines_.begin()) +
           first_line_;
  }

  // Reads one simple command: assignments, exports, or a possible launch.
  // Errors: as ReadScript's.
  absl::Status ReadCommand(const Command& command, int depth);

  ScriptJob* job_;
  const Deadline& deadline_;
  ShellVariables variables_;
  SlurmAllocation allocation_;
  LaunchFinder launches_;
  std::vector<size_t> newlines_;
  int first_line_ = 1;
};

absl::Status ScriptReader::ReadCommand(const Command& command, int depth) {
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
    for (size_t k = assignments_start; k < words.size(); ++k)
      variables_.Assign(words[k], false, line);
    return variables_.status();
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
        variables_.Assign(w, exported, line);
      } else if (exported && w.parts.size() == 1 && w.parts[0].kind == Part::Kind::kLiteral &&
                 IsValidName(w.parts[0].text)) {
        variables_.Export(w.parts[0].text);
      }
    }
    return variables_.status();
  }
  if (IsLiteralWord(name, "unset")) {
    for (size_t k = i + 1; k < words.size(); ++k) {
      if (words[k].parts.size() == 1) variables_.Unset(words[k].parts[0].text);
    }
    return absl::OkStatus();
  }
  if (IsLiteralWord(name, "set")) {
    for (size_t k = i + 1; k < words.size(); ++k) {
      if (IsLiteralWord(words[k], "-a") || (IsLiteralWord(words[k], "-o") && k + 1 < words.size() &&
                                            IsLiteralWord(words[k + 1], "allexport"))) {
        variables_.SetAllexport(true);
      } else if (IsLiteralWord(words[k], "+a")) {
        variables_.SetAllexport(false);
      }
    }
    return absl::OkStatus();
  }
  // Only commands that may be a launch are expanded (and their unknown
  // variables noted).
  std::optional<std::string> first;
  {
    std::vector<Field> head = variables_.Expand(name.parts, true, line);
    OOMGUARD_RETURN_IF_ERROR(variables_.status());
    if (head.empty()) return absl::OkStatus();
    first = LiteralBasename(head[0]);
  }
  if (!first || !MayLaunch(*first)) return absl::OkStatus();
  std::map<std::string, std::string> prefix_env;
  for (size_t k = assignments_start; k < i; ++k) {
    std::optional<AssignmentTarget> t = AsAssignment(words[k]);
    std::vector<Field> v = variables_.Expand(AssignedParts(words[k], t->prefix_bytes), false, line);
    if (!v.empty() && !v[0].inert()) prefix_env[t->name] = v[0].text();
  }
  std::vector<Field> fields;
  size_t bytes = 0;
  for (size_t k = i; k < words.size(); ++k) {
    for (Field& f : variables_.Expand(words[k].parts, true, line)) {
      bytes += PiecesBytes(f.pieces) + 1;
      if (fields.size() >= kMaxCommandWords || bytes > kMaxCommandBytes) {
        return CommandTooLong(line, fields.size() + 1, bytes);
      }
      fields.push_back(std::move(f));
    }
  }
  OOMGUARD_RETURN_IF_ERROR(variables_.status());
  return ReadFields(fields, std::move(prefix_env), line, depth);
}

absl::Status ScriptReader::ReadFields(const std::vector<Field>& fields,
                                      std::map<std::string, std::string> env, int line, int depth) {
  const std::optional<ShellScript> inner = launches_.Find(fields, std::move(env), line, depth);
  if (!inner.has_value()) return absl::OkStatus();
  absl::Status s = ReadScript(inner->script, depth + 1, line);
  if (IsUnreadableScript(s)) return s;  // Stops the whole reading.
  if (!s.ok()) Note(absl::StrCat("line ", line, ": ", inner->shell, " -c script: ", s.message()));
  return absl::OkStatus();
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
  while (status.ok() && lexer.Next(&command)) {
    if (deadline_.Passed()) {
      status = deadline_.Check(
          absl::StrCat("reading the job script (line ", LineAt(command.start), ")"));
    } else {
      status = ReadCommand(command, depth);
    }
  }
  if (status.ok() && lexer.failed()) {
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

// The launch's size against the allocation's: a note when they differ.
void NoteSizeDisagreement(ScriptJob& job) {
  const ScriptSize& launch = job.launch_size;
  const ScriptSize& allocated = job.allocated;
  if (launch.gpus == 0 || allocated.gpus == 0) return;
  const bool per_node_differs = launch.gpus_per_node != 0 && allocated.gpus_per_node != 0 &&
                                launch.gpus_per_node != allocated.gpus_per_node;
  if (launch.gpus == allocated.gpus && !per_node_differs) return;
  std::string note =
      absl::StrCat("the launch starts ", launch.gpus, " ranks (", launch.how,
                   ") but #SBATCH allocates ", allocated.gpus, " GPUs (", allocated.how, ")");
  if (per_node_differs) {
    absl::StrAppend(&note, "; ", launch.gpus_per_node, " against ", allocated.gpus_per_node,
                    " a node");
  }
  absl::StrAppend(&note, "; the launch's is the world size Megatron-LM sees");
  AddNote(job.notes, std::move(note));
}

// ParseJobScript, the script starting with `environment` exported.
absl::StatusOr<ScriptJob> ReadJobScript(absl::string_view script,
                                        const std::map<std::string, std::string>& environment,
                                        const Deadline& deadline) {
  if (script.size() > kMaxJobScriptBytes) {
    return absl::InvalidArgumentError(absl::StrCat("job script is ", script.size(),
                                                   " bytes, more than the limit of ",
                                                   kMaxJobScriptBytes, " bytes"));
  }
  ScriptJob job;
  OOMGUARD_RETURN_IF_ERROR(ReadDirectives(script, &job));
  SbatchOptions sbatch;
  OOMGUARD_RETURN_IF_ERROR(ReadSbatchOptions(script, &sbatch, &job.notes));
  ScriptReader reader(&job, &sbatch, environment, deadline);
  OOMGUARD_RETURN_IF_ERROR(reader.ReadScript(script, 0, 1));
  NoteSizeDisagreement(job);
  return job;
}

}  // namespace

bool IsUnreadableScript(const absl::Status& status) {
  return absl::IsResourceExhausted(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsUnavailable(status);
}

absl::StatusOr<ScriptJob> ParseJobScript(absl::string_view script, const Deadline& deadline) {
  return ReadJobScript(script, {}, deadline);
}

absl::StatusOr<ScriptJob> ParseCommandWords(absl::Span<const std::string> words,
                                            const std::map<std::string, std::string>& environment,
                                            const Deadline& deadline,
                                            absl::Span<const std::string> word_sources) {
  size_t bytes = 0;
  for (const std::string& w : words) bytes += w.size() + 1;
  if (words.size() > kMaxCommandWords || bytes > kMaxCommandBytes) {
    return CommandTooLong(1, words.size(), bytes);
  }
  // `bash -c SCRIPT ...` (directly or after env/exec): the script decides.
  for (size_t k = 0; k + 2 < words.size() && k < 4; ++k) {
    if (IsShell(Basename(words[k])) && IsDashC(words[k + 1])) {
      return ReadJobScript(words[k + 2], environment, deadline);
    }
  }
  std::vector<Field> fields;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    Field f;
    if (i < word_sources.size() && !word_sources[i].empty()) f.sources.push_back(word_sources[i]);
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
  ScriptReader reader(&job, nullptr, environment, deadline);
  OOMGUARD_RETURN_IF_ERROR(reader.ReadFields(fields, {}, 1, 0));
  return job;
}

}  // namespace oomguard
