// #SBATCH options and their allocation (see sbatch_options.h).
#include "jobscript/sbatch_options.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "jobscript/script_notes.h"

namespace oomguard::job_script_internal {
namespace {

// Largest count read (as `oomguard check --gpus`).
constexpr uint64_t kMaxCount = uint64_t{1} << 20;

// One word of the #SBATCH lines.
struct SbatchWord {
  std::string text;
  int line = 0;
};

// sbatch's short options that take a value (sbatch/opt.c); `-k` takes
// one only attached.
bool ShortTakesValue(char c) { return absl::StrContains("aAbBcCdDeFGiJLmMnNopqStwx", c); }

bool IsDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

bool StartsWithDigit(absl::string_view s) {
  return !s.empty() && absl::ascii_isdigit(static_cast<unsigned char>(s[0]));
}

// Words of the #SBATCH lines, as sbatch's _get_argument cuts them; reading
// stops at the first command or at `hetjob`.
std::vector<SbatchWord> SbatchWords(absl::string_view script, std::vector<std::string>* notes) {
  std::vector<SbatchWord> words;
  int line = 0;
  for (absl::string_view text : absl::StrSplit(script, '\n')) {
    ++line;
    if (!absl::ConsumePrefix(&text, "#SBATCH")) {
      const absl::string_view rest = absl::StripLeadingAsciiWhitespace(text);
      if (!rest.empty() && rest[0] != '#') break;  // The first command.
      continue;
    }
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
      std::string word;
      bool quoted = false, escaped = false, comment = false;
      char quote = 0;
      for (;
           i < text.size() && (quoted || !absl::ascii_isspace(static_cast<unsigned char>(text[i])));
           ++i) {
        const char c = text[i];
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
          continue;
        } else if (quoted) {
          if (c == quote) {
            quoted = false;
            continue;
          }
        } else if (c == '"' || c == '\'') {
          quoted = true;
          quote = c;
          continue;
        } else if (c == '#') {
          comment = true;
          break;
        }
        word.push_back(c);
      }
      if (word == "hetjob" || word == "packjob") {
        AddNote(*notes, absl::StrCat("line ", line, ": #SBATCH ", word,
                                     ": only the first component of the heterogeneous job is "
                                     "read"));
        return words;
      }
      if (!word.empty()) words.push_back(SbatchWord{std::move(word), line});
      if (comment) break;
    }
  }
  return words;
}

absl::Status BadValue(int line, absl::string_view written, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line, ": #SBATCH ", Shown(written), ": expected ", expected));
}

void NotRead(int line, absl::string_view written, absl::string_view why,
             std::vector<std::string>* notes) {
  AddNote(*notes, absl::StrCat("line ", line, ": #SBATCH ", Shown(written), ": ", why,
                               "; the job's size is not read from it"));
}

// A whole number in [1, kMaxCount].
absl::Status ReadNumber(absl::string_view digits, int line, absl::string_view written,
                        uint32_t* out) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n) || n == 0 || n > kMaxCount) {
    return BadValue(line, written, absl::StrCat("a whole number in [1, ", kMaxCount, "]"));
  }
  *out = static_cast<uint32_t>(n);
  return absl::OkStatus();
}

// -N/--nodes (`range`), -n/--ntasks, --ntasks-per-node.
absl::Status ReadTaskCount(absl::string_view value, bool range, int line, SbatchCount* count,
                           std::vector<std::string>* notes) {
  if (IsDigits(value)) return ReadNumber(value, line, count->written, &count->value);
  const std::vector<absl::string_view> bounds = absl::StrSplit(value, '-');
  if (range && bounds.size() == 2 && IsDigits(bounds[0]) && IsDigits(bounds[1])) {
    uint32_t low = 0, high = 0;
    OOMGUARD_RETURN_IF_ERROR(ReadNumber(bounds[0], line, count->written, &low));
    OOMGUARD_RETURN_IF_ERROR(ReadNumber(bounds[1], line, count->written, &high));
    if (low == high) {
      count->value = low;
    } else {
      NotRead(line, count->written, "a node range, only known when Slurm allocates", notes);
    }
    return absl::OkStatus();
  }
  if (StartsWithDigit(value)) {
    NotRead(line, count->written, "a form oomguard does not read (it reads N or MIN-MAX)", notes);
    return absl::OkStatus();
  }
  return BadValue(line, count->written, range ? "a node count (N or MIN-MAX)" : "a task count");
}

// Adds one GPU entry's `type` and `count` to `total` (false when the count
// is not read), keeping the type when every entry names the same one.
bool AddGpus(absl::string_view type, absl::string_view count, bool first, int line,
             SbatchCount* total, std::vector<std::string>* notes) {
  uint32_t n = 0;
  if (!IsDigits(count) || !ReadNumber(count, line, total->written, &n).ok()) {
    NotRead(line, total->written, absl::StrCat("GPU count \"", Shown(count), "\" not read"), notes);
    total->value = 0;
    return false;
  }
  if (first) {
    total->type = std::string(type);
  } else if (total->type != type) {
    total->type.clear();
    AddNote(*notes, absl::StrCat("line ", line, ": #SBATCH ", Shown(total->written),
                                 ": several GPU types; the GPU type is not read from it"));
  }
  total->value = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{total->value} + n, kMaxCount));
  return true;
}

// --gpus, --gpus-per-node, --gpus-per-task: `[type:]count[,...]`.
absl::Status ReadGpuCount(absl::string_view value, int line, SbatchCount* count,
                          std::vector<std::string>* notes) {
  bool first = true;
  for (absl::string_view entry : absl::StrSplit(value, ',')) {
    const size_t colon = entry.rfind(':');
    const absl::string_view type =
        colon == absl::string_view::npos ? absl::string_view() : entry.substr(0, colon);
    const absl::string_view n = colon == absl::string_view::npos ? entry : entry.substr(colon + 1);
    if (!StartsWithDigit(n)) return BadValue(line, count->written, "[type:]count");
    if (!AddGpus(type, n, first, line, count, notes)) return absl::OkStatus();
    first = false;
  }
  return absl::OkStatus();
}

// --gres: the `gpu[:type][:count]` entries of `name[[:type]:count][,...]`.
void ReadGres(absl::string_view value, int line, SbatchCount* count,
              std::vector<std::string>* notes) {
  bool first = true;
  count->given = false;
  for (absl::string_view entry : absl::StrSplit(value, ',')) {
    if (!absl::ConsumePrefix(&entry, "gres/")) absl::ConsumePrefix(&entry, "gres:");
    std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
    if (parts[0] != "gpu" || parts.size() > 3) continue;
    count->given = true;
    absl::string_view type, n = "1";
    if (parts.size() == 3) {
      type = parts[1];
      n = parts[2];
    } else if (parts.size() == 2) {
      (StartsWithDigit(parts[1]) ? n : type) = parts[1];
    }
    if (!AddGpus(type, n, first, line, count, notes)) return;
    first = false;
  }
}

enum class Option { kNodes, kNtasks, kNtasksPerNode, kGpus, kGpusPerNode, kGpusPerTask, kGres };

SbatchCount* Target(Option option, SbatchOptions* o) {
  switch (option) {
    case Option::kNodes:
      return &o->nodes;
    case Option::kNtasks:
      return &o->ntasks;
    case Option::kNtasksPerNode:
      return &o->ntasks_per_node;
    case Option::kGpus:
      return &o->gpus;
    case Option::kGpusPerNode:
      return &o->gpus_per_node;
    case Option::kGpusPerTask:
      return &o->gpus_per_task;
    case Option::kGres:
      return &o->gres_gpus;
  }
  return nullptr;
}

absl::Status SetOption(Option option, std::string written, absl::string_view value, int line,
                       SbatchOptions* o, std::vector<std::string>* notes) {
  SbatchCount* count = Target(option, o);
  *count = SbatchCount{};
  count->given = true;
  count->written = std::move(written);
  count->raw = std::string(value);
  switch (option) {
    case Option::kNodes:
    case Option::kNtasks:
    case Option::kNtasksPerNode:
      return ReadTaskCount(value, option == Option::kNodes, line, count, notes);
    case Option::kGres:
      ReadGres(value, line, count, notes);
      return absl::OkStatus();
    default:
      return ReadGpuCount(value, line, count, notes);
  }
}

bool LongOption(absl::string_view name, Option* option) {
  static constexpr std::pair<absl::string_view, Option> kLong[] = {
      {"--nodes", Option::kNodes},
      {"--ntasks", Option::kNtasks},
      {"--ntasks-per-node", Option::kNtasksPerNode},
      {"--gpus", Option::kGpus},
      {"--gpus-per-node", Option::kGpusPerNode},
      {"--gpus-per-task", Option::kGpusPerTask},
      {"--gres", Option::kGres}};
  for (const auto& [n, o] : kLong) {
    if (n == name) {
      *option = o;
      return true;
    }
  }
  return false;
}

bool ShortOption(char c, Option* option) {
  if (c == 'N') *option = Option::kNodes;
  if (c == 'n') *option = Option::kNtasks;
  if (c == 'G') *option = Option::kGpus;
  return c == 'N' || c == 'n' || c == 'G';
}

}  // namespace

absl::Status ReadSbatchOptions(absl::string_view script, SbatchOptions* options,
                               std::vector<std::string>* notes) {
  const std::vector<SbatchWord> words = SbatchWords(script, notes);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i].text;
    const int line = words[i].line;
    if (absl::StartsWith(w, "--")) {
      const size_t eq = w.find('=');
      const std::string name = w.substr(0, eq);
      Option option;
      if (!LongOption(name, &option)) {
        // Another option's separate value.
        if (eq == std::string::npos && i + 1 < words.size() &&
            !absl::StartsWith(words[i + 1].text, "-")) {
          ++i;
        }
        continue;
      }
      if (eq != std::string::npos) {
        OOMGUARD_RETURN_IF_ERROR(SetOption(option, w, w.substr(eq + 1), line, options, notes));
      } else if (i + 1 < words.size()) {
        ++i;
        OOMGUARD_RETURN_IF_ERROR(SetOption(option, absl::StrCat(w, " ", words[i].text),
                                           words[i].text, line, options, notes));
      } else {
        return BadValue(line, w, "a value after it");
      }
      continue;
    }
    if (w.size() < 2 || w[0] != '-') continue;
    for (size_t j = 1; j < w.size(); ++j) {
      if (w[j] == 'k') break;  // Its value, if any, is the rest.
      if (!ShortTakesValue(w[j])) continue;
      Option option;
      const bool ours = ShortOption(w[j], &option);
      std::string value = w.substr(j + 1);
      std::string written = absl::StrCat("-", std::string(1, w[j]), value);
      if (value.empty()) {
        if (i + 1 >= words.size()) {
          if (ours) return BadValue(line, written, "a value after it");
          break;
        }
        value = words[++i].text;
        absl::StrAppend(&written, " ", value);
      }
      if (ours) OOMGUARD_RETURN_IF_ERROR(SetOption(option, written, value, line, options, notes));
      break;
    }
  }
  return absl::OkStatus();
}

SlurmAllocation Allocate(const SbatchOptions& o) {
  SlurmAllocation a;
  a.ntasks_per_node = o.ntasks_per_node.value;
  std::string nodes_how;
  if (o.nodes.given) {
    a.nodes = o.nodes.value;
    nodes_how = o.nodes.written;
  } else if (o.ntasks.value > 0 && o.ntasks_per_node.value > 0) {
    a.nodes = (o.ntasks.value + o.ntasks_per_node.value - 1) / o.ntasks_per_node.value;
    nodes_how =
        absl::StrCat(a.nodes, " nodes (", o.ntasks.written, " / ", o.ntasks_per_node.written, ")");
  } else if (!o.ntasks.given && !o.gpus.given && !o.gpus_per_task.given) {
    a.nodes = 1;
    nodes_how = "1 node";
  }
  std::string tasks_how;
  if (o.ntasks.given) {
    a.ntasks = o.ntasks.value;
    tasks_how = o.ntasks.written;
  } else if (a.nodes > 0 && a.ntasks_per_node > 0 &&
             uint64_t{a.nodes} * a.ntasks_per_node <= kMaxCount) {
    a.ntasks = a.nodes * a.ntasks_per_node;
    tasks_how = absl::StrCat(nodes_how, " x ", o.ntasks_per_node.written);
  }
  const SbatchCount& per_node = o.gpus_per_node.given ? o.gpus_per_node : o.gres_gpus;
  for (const SbatchCount* c : {&o.gpus, &per_node, &o.gpus_per_task}) {
    if (c->given && !c->type.empty()) {
      a.gpu_type = c->type;
      break;
    }
  }
  uint64_t gpus = 0;
  if (o.gpus.given) {
    gpus = o.gpus.value;
    a.how = o.gpus.written;
    a.gpus_per_node = per_node.given ? per_node.value : (a.nodes == 1 ? o.gpus.value : 0);
  } else if (per_node.given) {
    a.gpus_per_node = per_node.value;
    gpus = uint64_t{a.nodes} * per_node.value;
    a.how = absl::StrCat(nodes_how, " x ", per_node.written);
  } else if (o.gpus_per_task.given) {
    gpus = uint64_t{a.ntasks} * o.gpus_per_task.value;
    if (a.ntasks_per_node > 0 && uint64_t{a.ntasks_per_node} * o.gpus_per_task.value <= kMaxCount) {
      a.gpus_per_node = a.ntasks_per_node * o.gpus_per_task.value;
    }
    a.how = absl::StrCat(tasks_how.empty() ? "no task count" : tasks_how, " x ",
                         o.gpus_per_task.written);
  }
  a.gpus = gpus <= kMaxCount ? static_cast<uint32_t>(gpus) : 0;
  return a;
}

std::vector<std::pair<std::string, std::string>> SlurmEnvironment(const SbatchOptions& o,
                                                                  const SlurmAllocation& a) {
  std::vector<std::pair<std::string, std::string>> env;
  if (a.nodes > 0) {
    env.emplace_back("SLURM_JOB_NUM_NODES", absl::StrCat(a.nodes));
    env.emplace_back("SLURM_NNODES", absl::StrCat(a.nodes));
  }
  if (a.ntasks > 0) {
    env.emplace_back("SLURM_NTASKS", absl::StrCat(a.ntasks));
    env.emplace_back("SLURM_NPROCS", absl::StrCat(a.ntasks));
  }
  if (a.ntasks_per_node > 0) {
    env.emplace_back("SLURM_NTASKS_PER_NODE", absl::StrCat(a.ntasks_per_node));
  }
  if (a.gpus_per_node > 0) env.emplace_back("SLURM_GPUS_ON_NODE", absl::StrCat(a.gpus_per_node));
  if (o.gpus.given) env.emplace_back("SLURM_GPUS", o.gpus.raw);
  if (o.gpus_per_node.given) env.emplace_back("SLURM_GPUS_PER_NODE", o.gpus_per_node.raw);
  if (o.gpus_per_task.given) env.emplace_back("SLURM_GPUS_PER_TASK", o.gpus_per_task.raw);
  return env;
}

}  // namespace oomguard::job_script_internal
