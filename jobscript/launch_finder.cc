// Finding the Megatron-LM launch (see launch_finder.h).
#include "jobscript/launch_finder.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "jobscript/launch_size.h"
#include "jobscript/script_notes.h"
#include "jobspec/megatron_flags.h"

namespace oomguard::job_script_internal {
namespace {

// The environment variables that change memory (ApplyEnvironment).
constexpr absl::string_view kMemoryEnv[] = {
    "PYTORCH_CUDA_ALLOC_CONF",           "NCCL_GRAPH_REGISTER",
    "OOMGUARD_MEGATRON_CORE_VERSION",    "OOMGUARD_TRANSFORMER_ENGINE_VERSION",
    "OOMGUARD_OPTIMIZER_IMPLEMENTATION", "OOMGUARD_GPU_ARCHITECTURE"};

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

enum class ScriptKind { kNone, kModelled, kOtherMegatron };

// What a script basename (with .py) is. pretrain_hybrid.py reads the same
// arguments as pretrain_gpt.py (parse_and_validate_args with the same
// tokenizer default) and builds a HybridModel from --spec and
// --hybrid-layer-pattern; pretrain_mamba.py runs pretrain_hybrid.py
// (Megatron-LM d98e8a64dd).
ScriptKind ClassifyScript(absl::string_view base) {
  if (!absl::EndsWith(base, ".py")) return ScriptKind::kNone;
  for (const absl::string_view modelled :
       {"pretrain_gpt", "pretrain_llama", "pretrain_hybrid", "pretrain_mamba"}) {
    if (absl::StartsWith(base, modelled)) return ScriptKind::kModelled;
  }
  if (absl::StartsWith(base, "pretrain_")) return ScriptKind::kOtherMegatron;
  return ScriptKind::kNone;
}

// Whether the Megatron-LM flag `flag` ("--name") takes exactly one value (the
// flag table's arity; an unknown flag's values are skipped with it anyway).
bool FlagTakesValue(const std::string& flag) {
  const MegatronFlag* known = FindMegatronFlag(flag);
  return known != nullptr && !known->unimplemented && known->arity == FlagArity::kOne;
}

}  // namespace

std::string Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

std::optional<std::string> LiteralBasename(const Field& f) {
  if (f.pieces.empty() || f.pieces.back().inert) return std::nullopt;
  const std::string& last = f.pieces.back().text;
  if (f.pieces.size() > 1 && last.find('/') == std::string::npos) return std::nullopt;
  return Basename(last);
}

bool IsShell(absl::string_view name) { return name == "bash" || name == "sh"; }

bool IsDashC(absl::string_view word) {
  if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
  return word.find('c') != absl::string_view::npos &&
         std::all_of(word.begin() + 1, word.end(),
                     [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); });
}

bool MayLaunch(absl::string_view name) {
  static constexpr absl::string_view kWrappers[] = {"exec", "nohup", "env", "command", "numactl"};
  return IsLauncher(name) || IsShell(name) ||
         std::find(std::begin(kWrappers), std::end(kWrappers), name) != std::end(kWrappers);
}

void LaunchFinder::Note(std::string note) { AddNote(job_->notes, std::move(note)); }

std::optional<ShellScript> LaunchFinder::Find(const std::vector<Field>& fields,
                                              std::map<std::string, std::string> env, int line,
                                              int depth) {
  // Wrappers and their environment assignments.
  size_t j = 0;
  while (j < fields.size()) {
    const std::optional<std::string> base = LiteralBasename(fields[j]);
    if (!base) return std::nullopt;
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
  if (j >= fields.size()) return std::nullopt;
  const std::optional<std::string> launcher = LiteralBasename(fields[j]);
  if (!launcher) return std::nullopt;
  const bool shell = IsShell(*launcher);
  if (!IsLauncher(*launcher) && !shell) return std::nullopt;
  for (size_t k = j + (shell ? 0 : 1); k < fields.size(); ++k) {
    const std::optional<std::string> base = LiteralBasename(fields[k]);
    if (!base) continue;
    // `srun bash -c "<script>"`: a script in a word.
    if (IsShell(*base) && k + 2 < fields.size() && IsDashC(fields[k + 1].text())) {
      if (depth >= kMaxScriptDepth || fields[k + 2].inert()) {
        Note(absl::StrCat("line ", line, ": the ", *base,
                          " -c script is not known before the job runs; not read"));
        return std::nullopt;
      }
      return ShellScript{*base, fields[k + 2].text()};
    }
    if (shell) return std::nullopt;
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
        Note(absl::StrCat(
            "line ", line, ": ", Shown(script_name),
            " is not a Megatron-LM model oomguard models (pretrain_gpt*.py, "
            "pretrain_llama*.py, pretrain_hybrid*.py, pretrain_mamba*.py); not judged"));
        return std::nullopt;
      case ScriptKind::kModelled:
        // What the script exported, unless the command sets it itself.
        for (const absl::string_view name : kMemoryEnv) {
          std::optional<std::string> value = variables_->ExportedValue(std::string(name));
          if (value.has_value()) env.emplace(name, *std::move(value));
        }
        TakeLaunch(fields, j, script_at, line, env);
        return std::nullopt;
    }
  }
  return std::nullopt;
}

void LaunchFinder::TakeLaunch(const std::vector<Field>& fields, size_t launcher, size_t script,
                              int line, const std::map<std::string, std::string>& env) {
  if (job_->found) {
    if (other_launches_++ == 0) {
      Note(absl::StrCat("line ", line, ": another Megatron-LM launch; only the first (line ",
                        job_->launch_line, ") is judged"));
    }
    return;
  }
  job_->found = true;
  job_->launch_line = line;
  job_->launch_size = LaunchSize(fields, launcher, script, *allocation_, line, &job_->notes);
  for (absl::string_view name : kMemoryEnv) {
    auto it = env.find(std::string(name));
    if (it != env.end()) job_->env[it->first] = it->second;
  }
  std::vector<std::string>& args = job_->megatron_args;
  std::vector<std::string>& sources = job_->megatron_arg_sources;
  bool previous_kept = false;  // The previous field made it into args.
  for (size_t k = script + 1; k < fields.size(); ++k) {
    const Field& f = fields[k];
    if (!f.inert()) {
      args.push_back(f.text());
      sources.push_back(absl::StrJoin(f.sources, ", "));
      previous_kept = true;
      continue;
    }
    std::string dropped = SourceText(f.pieces);
    if (previous_kept && !args.empty() && absl::StartsWith(args.back(), "--") &&
        !absl::StrContains(args.back(), '=') && !absl::StartsWith(dropped, "-") &&
        FlagTakesValue(args.back())) {
      dropped = absl::StrCat(args.back(), " ", dropped);
      args.pop_back();
      sources.pop_back();
    }
    Note(absl::StrCat("line ", line, ": dropped ", Shown(dropped), ": ", WhyInert(f.pieces)));
    if (job_->unresolved.size() < kMaxNotes) job_->unresolved.push_back(Shown(dropped));
    previous_kept = false;
  }
}

}  // namespace oomguard::job_script_internal
