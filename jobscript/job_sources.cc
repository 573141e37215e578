// The precedence rule between a job's sources (see job_sources.h).
#include "jobscript/job_sources.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oomguard {
namespace {

// One source of a value: the value (nullopt = it does not say), how the
// source reads when it wins ("the command line") and when it loses ("the
// command line's"), and which source it is.
template <typename T>
struct Source {
  std::optional<T> value;
  std::string as_winner;
  std::string as_loser;
  JobValueSource source;
};

std::optional<uint32_t> Count(uint32_t n) {
  return n > 0 ? std::optional<uint32_t>(n) : std::nullopt;
}

std::optional<std::string> Name(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// The first source that says the value (nullopt when none does), with a
// note for every later one that says something different.
template <typename T>
std::optional<Source<T>> Choose(absl::string_view what, const std::vector<Source<T>>& sources,
                                std::vector<std::string>& notes) {
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].value.has_value()) continue;
    for (size_t k = i + 1; k < sources.size(); ++k) {
      if (sources[k].value.has_value() && *sources[k].value != *sources[i].value) {
        notes.push_back(absl::StrCat(sources[k].as_loser, " ", what, "=", *sources[k].value,
                                     " ignored: ", sources[i].as_winner, " says ",
                                     *sources[i].value));
      }
    }
    return sources[i];
  }
  return std::nullopt;
}

// The size the job states for itself: the launch's world size, else (only
// without a scheduler descriptor, which already holds it) what it requests.
ScriptSize OwnSize(const JobSources& s) {
  const bool request = !s.scheduler.has_value();
  ScriptSize size = s.launch;
  if (size.gpus == 0) return request ? s.request : ScriptSize{};
  if (size.gpus_per_node == 0 && request) size.gpus_per_node = s.request.gpus_per_node;
  return size;
}

// The caller's, the scheduler's and the directives' value of one field, in
// that order, then `more`.
template <typename T, typename Get>
std::vector<Source<T>> Stated(const JobSources& s, Get get, std::vector<Source<T>> more = {}) {
  std::vector<Source<T>> sources = {
      {get(s.caller), s.caller_name, absl::StrCat(s.caller_name, "'s"), JobValueSource::kCaller}};
  if (s.scheduler.has_value()) {
    sources.push_back({get(*s.scheduler), "the scheduler's allocation", "the scheduler's",
                       JobValueSource::kScheduler});
  }
  sources.push_back({get(s.directives), "#OOMGUARD", "#OOMGUARD", JobValueSource::kDirective});
  for (Source<T>& source : more) sources.push_back(std::move(source));
  return sources;
}

template <typename T>
T ValueOr(const std::optional<Source<T>>& chosen, T otherwise) {
  return chosen.has_value() ? *chosen->value : otherwise;
}

}  // namespace

JobSources ScriptSources(const ScriptJob& job) {
  JobSources sources;
  sources.directives = StatedValues{.gpus = job.num_gpus,
                                    .gpus_per_node = job.gpus_per_node,
                                    .gpu = job.gpu,
                                    .preset = job.preset,
                                    .safety_margin = job.safety_margin,
                                    .env = {}};
  sources.launch = job.launch_size;
  sources.request = job.allocated;
  sources.request_gpu = job.allocated_gpu_type;
  sources.script_env = job.env;
  return sources;
}

ChosenLaunch ChooseLaunch(const JobSources& s, std::vector<std::string> megatron_args,
                          std::vector<std::string> megatron_arg_sources) {
  ChosenLaunch chosen;
  std::vector<std::string>& notes = chosen.notes;
  LaunchCheck& launch = chosen.launch;
  launch.megatron_args = std::move(megatron_args);
  launch.megatron_arg_sources = std::move(megatron_arg_sources);

  // The sizes: the job's own last, named by how it was counted.
  const ScriptSize own = OwnSize(s);
  const JobValueSource own_source =
      own.gpus > 0 && s.launch.gpus > 0 ? JobValueSource::kLaunch : JobValueSource::kRequest;
  const std::string how = absl::StrCat(" (", own.how, ")");
  const auto gpus =
      Choose<uint32_t>("gpus",
                       Stated<uint32_t>(s, [](const StatedValues& v) { return Count(v.gpus); },
                                        {{Count(own.gpus), absl::StrCat("the job script", how),
                                          absl::StrCat("the job script's", how), own_source}}),
                       notes);
  launch.num_gpus = ValueOr<uint32_t>(gpus, 0);
  chosen.gpus_from = gpus.has_value() ? gpus->source : JobValueSource::kNone;
  launch.gpus_per_node = ValueOr<uint32_t>(
      Choose<uint32_t>(
          "gpus-per-node",
          Stated<uint32_t>(s, [](const StatedValues& v) { return Count(v.gpus_per_node); },
                           {{Count(own.gpus_per_node), absl::StrCat("the job script", how),
                             absl::StrCat("the job script's", how), own_source}}),
          notes),
      0);
  launch.preset = ValueOr<std::string>(
      Choose<std::string>(
          "preset", Stated<std::string>(s, [](const StatedValues& v) { return Name(v.preset); }),
          notes),
      "");

  // The GPU: the caller's memory, else the first name, else the default.
  const std::string request_gpu = s.scheduler.has_value() ? "" : s.request_gpu;
  if (s.caller_gpu_memory_bytes > 0) {
    const std::string& scheduler_gpu = s.scheduler.has_value() ? s.scheduler->gpu : "";
    if (!scheduler_gpu.empty() || !s.directives.gpu.empty() || !request_gpu.empty()) {
      notes.push_back(absl::StrCat("the GPU named by ",
                                   !scheduler_gpu.empty()      ? "the scheduler"
                                   : !s.directives.gpu.empty() ? "#OOMGUARD"
                                                               : s.request_name,
                                   " ignored: ", s.caller_name, " gives the GPU's memory"));
    }
    launch.gpu_memory_bytes = s.caller_gpu_memory_bytes;
    chosen.gpu_from = JobValueSource::kCaller;
  } else {
    const auto gpu = Choose<std::string>(
        "gpu",
        Stated<std::string>(s, [](const StatedValues& v) { return Name(v.gpu); },
                            {{Name(request_gpu), absl::StrCat(s.request_name, "'s GPU request"),
                              absl::StrCat(s.request_name, "'s"), JobValueSource::kRequest}}),
        notes);
    if (gpu.has_value()) {
      launch.gpu_name = *gpu->value;
      chosen.gpu_from = gpu->source;
    } else if (!s.default_gpu.empty()) {
      launch.gpu_name = s.default_gpu;
      chosen.gpu_from = JobValueSource::kDefault;
    }
  }

  // The environment, layered; the safety margin.
  launch.env = s.start_env;
  if (s.scheduler.has_value()) {
    for (const auto& [name, value] : s.scheduler->env) launch.env[name] = value;
  }
  for (const auto& [name, value] : s.script_env) launch.env[name] = value;
  for (const auto& [name, value] : s.caller.env) launch.env[name] = value;
  const auto margin = Choose<double>(
      "safety-margin", Stated<double>(s, [](const StatedValues& v) { return v.safety_margin; }),
      notes);
  if (margin.has_value()) launch.safety_margin = *margin->value;
  return chosen;
}

}  // namespace oomguard
