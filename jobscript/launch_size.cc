// The world size of a launch (see launch_size.h).
#include "jobscript/launch_size.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "jobscript/launch_finder.h"
#include "jobscript/script_notes.h"

namespace oomguard::job_script_internal {
namespace {

constexpr uint64_t kMaxCount = uint64_t{1} << 20;

// An option's value as the launch gives it.
struct OptionValue {
  bool known = false;
  std::string text;     // When known.
  std::string written;  // "--nnodes 4", "-N$NODES": for notes.
  // The variables the value holds the value of ("$NODES"), empty when
  // literal: a note about a bad value names them instead of showing it.
  std::string sources = {};

  // How a note about a value it cannot use shows it.
  std::string ForNote() const {
    return sources.empty() ? written : absl::StrCat(sources, " (its value not shown)");
  }
};

// How one launcher's options are spelled.
struct LauncherSyntax {
  // The options read: spelling -> name.
  std::vector<std::pair<absl::string_view, absl::string_view>> read;
  // Short options (one letter after `-`) that take a value.
  absl::string_view short_with_value;
  // Long options that take no value.
  std::vector<absl::string_view> long_flags;
};

// A launcher's options, scanned up to its first other word.
struct ScannedOptions {
  std::map<std::string, OptionValue> values;  // By name.
  // A word only known at run time where an option may stand.
  std::optional<std::string> opaque;
};

// Whether `field` starts the launched command (a launcher, a shell, a
// wrapper or a Python script) rather than being an option's value.
bool IsCommandWord(const Field& field) {
  const std::optional<std::string> base = LiteralBasename(field);
  return base.has_value() && (MayLaunch(*base) || absl::EndsWith(*base, ".py"));
}

// The literal text at the start of `field` (empty when it starts unknown).
std::string LiteralHead(const Field& field) {
  return field.pieces.empty() || field.pieces[0].inert ? std::string() : field.pieces[0].text;
}

// The value of an option `written` whose value is `field` from byte `at`.
OptionValue ValueOf(const Field& field, size_t at, std::string written) {
  OptionValue v;
  v.known = !field.inert();
  if (v.known) v.text = field.text().substr(at);
  v.written = std::move(written);
  v.sources = absl::StrJoin(field.sources, ", ");
  return v;
}

std::optional<absl::string_view> ReadName(const LauncherSyntax& syntax,
                                          absl::string_view spelling) {
  for (const auto& [s, name] : syntax.read) {
    if (s == spelling) return name;
  }
  return std::nullopt;
}

// Scans fields[from, end) as `syntax`'s options, stopping at the first word
// that is not one; `to_end`: every word before `end` is an option or a value.
ScannedOptions ScanOptions(const std::vector<Field>& fields, size_t from, size_t end,
                           const LauncherSyntax& syntax, bool to_end) {
  ScannedOptions out;
  for (size_t k = from; k < end; ++k) {
    const Field& f = fields[k];
    const std::string head = LiteralHead(f);
    if (!absl::StartsWith(head, "-") || head == "-") {
      if (head.empty() && f.inert()) out.opaque = SourceText(f.pieces);
      return out;
    }
    const std::string source = SourceText(f.pieces);
    auto separate_value = [&](std::string written) -> std::optional<OptionValue> {
      if (k + 1 >= end || absl::StartsWith(LiteralHead(fields[k + 1]), "-") ||
          (!to_end && IsCommandWord(fields[k + 1]))) {
        return std::nullopt;
      }
      ++k;
      return ValueOf(fields[k], 0, absl::StrCat(written, " ", SourceText(fields[k].pieces)));
    };
    if (absl::StartsWith(head, "--")) {
      const size_t eq = head.find('=');
      const std::string spelling = head.substr(0, eq);
      const std::optional<absl::string_view> name = ReadName(syntax, spelling);
      std::optional<OptionValue> value;
      if (eq != std::string::npos) {
        value = ValueOf(f, eq + 1, source);
      } else if (std::find(syntax.long_flags.begin(), syntax.long_flags.end(), spelling) ==
                 syntax.long_flags.end()) {
        value = separate_value(source);
      }
      if (name && value) out.values[std::string(*name)] = *std::move(value);
      continue;
    }
    for (size_t j = 1; j < head.size(); ++j) {
      if (!absl::StrContains(syntax.short_with_value, head[j])) continue;
      const std::string spelling = head.substr(0, 1) + head[j];
      const std::optional<absl::string_view> name = ReadName(syntax, spelling);
      std::optional<OptionValue> value = j + 1 < head.size() || f.pieces.size() > 1
                                             ? ValueOf(f, j + 1, source)
                                             : separate_value(source);
      if (name && value) out.values[std::string(*name)] = *std::move(value);
      break;
    }
  }
  return out;
}

// A whole number in [1, kMaxCount] (nullopt otherwise).
std::optional<uint32_t> Count(absl::string_view text) {
  uint64_t n = 0;
  if (text.empty() || !absl::SimpleAtoi(text, &n) || n == 0 || n > kMaxCount ||
      !std::all_of(text.begin(), text.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

class SizeReader {
 public:
  SizeReader(const SlurmAllocation& allocation, int line, std::vector<std::string>* notes)
      : allocation_(allocation), line_(line), notes_(notes) {}

  ScriptSize Torchrun(const std::vector<Field>& fields, size_t from, size_t end);
  ScriptSize Srun(const std::vector<Field>& fields, size_t from, size_t end);
  ScriptSize Mpirun(const std::vector<Field>& fields, size_t from, size_t end);

 private:
  // Notes that the size is not read, and why.
  ScriptSize NotRead(absl::string_view launcher, absl::string_view what, absl::string_view why) {
    AddNote(*notes_, absl::StrCat("line ", line_, ": ", launcher, " ", Shown(what), ": ", why,
                                  "; the launch's world size is not read"));
    return ScriptSize{};
  }
  // The known count `value`, or nullopt after a note.
  std::optional<uint32_t> Known(absl::string_view launcher, const OptionValue& value) {
    if (!value.known) {
      NotRead(launcher, value.written, "only known when the job runs");
      return std::nullopt;
    }
    std::optional<uint32_t> n = Count(value.text);
    if (!n) NotRead(launcher, value.ForNote(), "not a whole number in [1, 1048576]");
    return n;
  }

  const SlurmAllocation& allocation_;
  int line_;
  std::vector<std::string>* notes_;
};

ScriptSize SizeOf(uint64_t nodes, uint64_t per_node, std::string how) {
  if (nodes * per_node > kMaxCount) return ScriptSize{};
  return ScriptSize{static_cast<uint32_t>(nodes * per_node), static_cast<uint32_t>(per_node),
                    std::move(how)};
}

ScriptSize SizeReader::Torchrun(const std::vector<Field>& fields, size_t from, size_t end) {
  static const LauncherSyntax kTorchrun = {
      {{"--nnodes", "nnodes"}, {"--nproc-per-node", "nproc"}, {"--nproc_per_node", "nproc"}},
      "rt",
      {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--module",
       "--use-env", "--use_env"}};
  const ScannedOptions options = ScanOptions(fields, from, end, kTorchrun, true);
  if (options.opaque) {
    return NotRead("torchrun", *options.opaque, "only known when the job runs, may set its size");
  }
  OptionValue nnodes{true, "1", "--nnodes=1 (its default)"};
  OptionValue nproc{true, "1", "--nproc-per-node=1 (its default)"};
  if (auto it = options.values.find("nnodes"); it != options.values.end()) nnodes = it->second;
  if (auto it = options.values.find("nproc"); it != options.values.end()) nproc = it->second;
  if (!nnodes.known) return NotRead("torchrun", nnodes.written, "only known when the job runs");
  // MIN:MAX: elastic unless MIN == MAX.
  const std::vector<absl::string_view> range = absl::StrSplit(nnodes.text, ':');
  if (range.size() == 2 && Count(range[0]) && Count(range[1])) {
    if (range[0] != range[1]) {
      return NotRead("torchrun", nnodes.ForNote(),
                     "an elastic node range, only known when the job runs");
    }
    nnodes.text = std::string(range[0]);
  }
  const std::optional<uint32_t> nodes = Known("torchrun", nnodes);
  if (!nodes) return ScriptSize{};
  std::optional<uint32_t> per_node;
  std::string nproc_how = nproc.written;
  if (nproc.known && (nproc.text == "gpu" || nproc.text == "auto")) {
    if (allocation_.gpus_per_node == 0) {
      return NotRead("torchrun", nproc.written, "the node's GPUs, not stated by #SBATCH");
    }
    per_node = allocation_.gpus_per_node;
    absl::StrAppend(&nproc_how, " (", allocation_.gpus_per_node, " GPUs a node)");
  } else {
    per_node = Known("torchrun", nproc);
  }
  if (!per_node) return ScriptSize{};
  return SizeOf(*nodes, *per_node, absl::StrCat("torchrun ", nnodes.written, " x ", nproc_how));
}

ScriptSize SizeReader::Srun(const std::vector<Field>& fields, size_t from, size_t end) {
  static const LauncherSyntax kSrun = {
      {{"-N", "nodes"},
       {"--nodes", "nodes"},
       {"-n", "ntasks"},
       {"--ntasks", "ntasks"},
       {"--ntasks-per-node", "per_node"}},
      "AbBcCdDegiJLmMnNopqrStTwWx",
      {"--exclusive", "--overlap", "--pty", "--label", "--unbuffered", "--verbose", "--quiet",
       "--no-kill", "--kill-on-bad-exit", "--overcommit", "--oversubscribe", "--contiguous",
       "--multi-prog", "--spread-job", "--use-min-nodes", "--whole", "--disable-status"}};
  const ScannedOptions options = ScanOptions(fields, from, end, kSrun, false);
  if (options.opaque) {
    return NotRead("srun", *options.opaque, "only known when the job runs, may set its size");
  }
  auto value = [&](absl::string_view name) -> std::optional<OptionValue> {
    auto it = options.values.find(std::string(name));
    if (it == options.values.end()) return std::nullopt;
    return it->second;
  };
  std::optional<uint32_t> tasks, nodes, per_node;
  std::string nodes_how = "the allocation's nodes", per_node_how = "#SBATCH --ntasks-per-node";
  if (std::optional<OptionValue> v = value("ntasks")) {
    tasks = Known("srun", *v);
    if (!tasks) return ScriptSize{};
    // Tasks a node, when it is stated.
    std::optional<uint32_t> stated;
    if (std::optional<OptionValue> p = value("per_node"); p && p->known) stated = Count(p->text);
    return ScriptSize{*tasks, stated.value_or(0), absl::StrCat("srun ", v->written)};
  }
  if (std::optional<OptionValue> v = value("nodes")) {
    nodes = Known("srun", *v);
    if (!nodes) return ScriptSize{};
    nodes_how = absl::StrCat("srun ", v->written);
  } else if (allocation_.nodes > 0) {
    nodes = allocation_.nodes;
  }
  if (std::optional<OptionValue> v = value("per_node")) {
    per_node = Known("srun", *v);
    if (!per_node) return ScriptSize{};
    per_node_how = absl::StrCat("srun ", v->written);
  } else if (allocation_.ntasks_per_node > 0) {
    per_node = allocation_.ntasks_per_node;
  } else if (!value("nodes") && allocation_.ntasks > 0) {
    const uint32_t per = allocation_.nodes > 0 && allocation_.ntasks % allocation_.nodes == 0
                             ? allocation_.ntasks / allocation_.nodes
                             : 0;
    return ScriptSize{allocation_.ntasks, per,
                      absl::StrCat("srun with the allocation's ", allocation_.ntasks, " tasks")};
  } else {
    per_node = 1;
    per_node_how = "one task a node (srun's default)";
  }
  if (!nodes) {
    AddNote(*notes_, absl::StrCat("line ", line_,
                                  ": srun without a node count (srun -N or #SBATCH --nodes); the "
                                  "launch's world size is not read"));
    return ScriptSize{};
  }
  return SizeOf(*nodes, *per_node, absl::StrCat(nodes_how, " x ", per_node_how));
}

ScriptSize SizeReader::Mpirun(const std::vector<Field>& fields, size_t from, size_t end) {
  for (size_t k = from; k < end && !IsCommandWord(fields[k]); ++k) {
    const std::string head = LiteralHead(fields[k]);
    if (head.empty() && fields[k].inert()) {
      return NotRead("mpirun", SourceText(fields[k].pieces),
                     "only known when the job runs, may set its size");
    }
    if ((head == "-np" || head == "-n" || head == "--np" || head == "--n" || head == "-c") &&
        k + 1 < end) {
      const OptionValue v =
          ValueOf(fields[k + 1], 0, absl::StrCat(head, " ", SourceText(fields[k + 1].pieces)));
      const std::optional<uint32_t> n = Known("mpirun", v);
      if (!n) return ScriptSize{};
      return ScriptSize{*n, 0, absl::StrCat("mpirun ", v.written)};
    }
  }
  return ScriptSize{};
}

bool IsTorchRunModule(const std::vector<Field>& fields, size_t k, size_t end) {
  return k + 1 < end && !fields[k].inert() && fields[k].text() == "-m" && !fields[k + 1].inert() &&
         (fields[k + 1].text() == "torch.distributed.run" ||
          fields[k + 1].text() == "torch.distributed.launch");
}

}  // namespace

ScriptSize LaunchSize(const std::vector<Field>& fields, size_t launcher, size_t script,
                      const SlurmAllocation& allocation, int line,
                      std::vector<std::string>* notes) {
  SizeReader reader(allocation, line, notes);
  // torchrun decides wherever it is (under srun it starts the agents).
  for (size_t k = launcher; k < script; ++k) {
    if (LiteralBasename(fields[k]) == "torchrun") return reader.Torchrun(fields, k + 1, script);
    if (IsTorchRunModule(fields, k, script)) return reader.Torchrun(fields, k + 2, script);
  }
  const std::optional<std::string> base = LiteralBasename(fields[launcher]);
  if (base == "srun") return reader.Srun(fields, launcher + 1, script);
  if (base == "mpirun" || base == "mpiexec") return reader.Mpirun(fields, launcher + 1, script);
  return ScriptSize{};
}

}  // namespace oomguard::job_script_internal
