// The command line of `oomguard check` (its usage text is kCheckUsageText): the
// flags before `--`, and the Megatron-LM arguments after it.
#ifndef OOMGUARD_TOOLS_CHECK_FLAGS_H_
#define OOMGUARD_TOOLS_CHECK_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard {

inline constexpr char kCheckUsageText[] =
    "usage: oomguard check --server HOST:PORT [--deadline-ms 2000]\n"
    "           [--gpu NAME | --gpu-memory-gib G] [--gpus N] [--gpus-per-node "
    "K]\n"
    "           [--preset P] [--safety-margin F] [--peak-bound upper|point]\n"
    "           [--coverage 0.95] [--env NAME=VALUE ...] [--ignore-skip]\n"
    "           [--judge-unmodelled | --no-judge-unmodelled]\n"
    "           [--megatron-core-version X.Y] [--transformer-engine-version X.Y]\n"
    "           [--gpu-architecture hopper|blackwell|volta|turing]\n"
    "           [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--json]\n"
    "           (--script FILE | --job-file FILE | --rl-config FILE\n"
    "            | -- <Megatron-LM args, or slime's or Megatron-LM's RL args>)\n"
    "--rl-config: veRL's or NeMo-RL's YAML (an RL step, judged on its binding phase;\n"
    "           --gpus may be left out where it gives the world size; without --gpu\n"
    "           or --gpu-memory-gib, H100-SXM-80GB)\n"
    "exit: 0 fits, 3 fits with settings, 4 does not fit, 5 not judged,\n"
    "      2 usage or invalid job, 6 service unavailable or too slow\n";

// Largest --gpus / --gpus-per-node (and job-file gpus, gpus_per_node).
inline constexpr uint32_t kMaxGpuCount = 1u << 20;

struct CheckFlags {
  bool help = false;  // --help or -h: print kCheckUsageText, nothing else.
  std::string server;
  int64_t deadline_ms = 2000;
  std::string gpu;
  double gpu_memory_gib = 0;
  uint32_t gpus = 0;
  uint32_t gpus_per_node = 0;
  std::string preset;
  std::optional<double> safety_margin;
  // --peak-bound upper|point and --coverage F (Policy); unset = the
  // server's defaults.
  v1::PeakBound peak_bound = v1::PEAK_BOUND_UNSPECIFIED;
  std::optional<double> coverage;
  // --judge-unmodelled / --no-judge-unmodelled (Policy.judge_unmodelled):
  // judge a job with settings oomguard does not model as if they were
  // absent, or not (exit 5); unset = the server's default.
  std::optional<bool> judge_unmodelled;
  std::map<std::string, std::string> env;
  bool ignore_skip = false;
  bool json = false;
  std::string tls_ca, tls_cert, tls_key;
  std::string script_path, job_file_path;
  // --rl-config FILE: an RL framework's YAML (JobSource.rl).
  std::string rl_config_path;
  bool args_given = false;  // `--` was given: `args` is the job.
  std::vector<std::string> args;
};

// `args` excludes the program and subcommand names. InvalidArgument naming
// the flag and its value for a bad or missing flag, or a bad combination.
absl::StatusOr<CheckFlags> ParseCheckFlags(const std::vector<std::string>& args);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CHECK_FLAGS_H_
