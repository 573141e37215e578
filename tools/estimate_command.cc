#include "tools/estimate_command.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "estimator/estimator.h"
#include "jobspec/job_builder.h"
#include "tools/command_flags.h"
#include "tools/report_format.h"

namespace oomguard {
namespace {

constexpr char kUsage[] =
    "usage: oomguard estimate --gpus N [--gpu-memory-gib G] [--json] [--tree]\n"
    "                         [--preset NAME | --hf-config FILE] [--env NAME=VALUE ...]\n"
    "                         [--] <Megatron-LM pretrain_gpt.py arguments>\n";

struct EstimateFlags {
  JobSource source;
  bool gpus_given = false;
  double gpu_memory_gib = 0;
  bool json = false;
  bool tree = false;
  std::string hf_config_path;
};

bool ParseFlags(const std::vector<std::string>& args, EstimateFlags& f, std::string& err) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "--") {
      f.source.megatron_args.insert(f.source.megatron_args.end(), args.begin() + i + 1, args.end());
      break;
    } else if (IsFlag(a, "--gpus")) {
      if (!TakeFlagValue(args, i, "--gpus", v, err)) return false;
      if (!absl::SimpleAtoi(v, &f.source.num_gpus) || f.source.num_gpus == 0) {
        err = absl::StrCat("--gpus: expected a positive integer, got \"", v, "\"");
        return false;
      }
      f.gpus_given = true;
    } else if (IsFlag(a, "--gpu-memory-gib")) {
      if (!TakeFlagValue(args, i, "--gpu-memory-gib", v, err)) return false;
      if (!absl::SimpleAtod(v, &f.gpu_memory_gib) || !std::isfinite(f.gpu_memory_gib) ||
          f.gpu_memory_gib <= 0 || f.gpu_memory_gib > 1e6) {
        err = absl::StrCat("--gpu-memory-gib: expected a positive number of GiB, got \"", v, "\"");
        return false;
      }
    } else if (a == "--json") {
      f.json = true;
    } else if (a == "--tree") {
      f.tree = true;
    } else if (IsFlag(a, "--preset")) {
      if (!TakeFlagValue(args, i, "--preset", f.source.preset, err)) return false;
    } else if (IsFlag(a, "--hf-config")) {
      if (!TakeFlagValue(args, i, "--hf-config", f.hf_config_path, err)) return false;
    } else if (IsFlag(a, "--env")) {
      if (!TakeFlagValue(args, i, "--env", v, err)) return false;
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        err = absl::StrCat("--env: expected NAME=VALUE, got \"", v, "\"");
        return false;
      }
      f.source.env[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--help" || a == "-h") {
      err = kUsage;
      return false;
    } else {
      f.source.megatron_args.push_back(a);
    }
  }
  if (!f.gpus_given) {
    err = "--gpus: required (the job's total GPU count)";
    return false;
  }
  return true;
}

bool ReadFile(const std::string& path, std::string& text, std::string& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = absl::StrCat("--hf-config: cannot read \"", path, "\"");
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

}  // namespace

int RunEstimate(const std::vector<std::string>& args, std::string& out, std::string& err) {
  EstimateFlags f;
  if (!ParseFlags(args, f, err)) {
    if (err == kUsage) {
      out = err;
      err.clear();
      return 0;
    }
    return 2;
  }
  if (!f.hf_config_path.empty() && !ReadFile(f.hf_config_path, f.source.hf_config_json, err)) {
    return 2;
  }
  std::vector<std::string> notes;
  absl::StatusOr<v1::JobSpec> job = BuildJob(f.source, &notes);
  if (!job.ok()) {
    err = std::string(job.status().message());
    return 2;
  }
  EstimateOptions options;
  options.module_tree = f.tree;
  absl::StatusOr<v1::EstimateReport> report = Estimate(*job, options);
  if (!report.ok()) {
    err = std::string(report.status().message());
    return 2;
  }
  for (std::string& n : notes) report->add_notes(std::move(n));
  const uint64_t capacity = static_cast<uint64_t>(f.gpu_memory_gib * 1024 * 1024 * 1024);
  if (f.json) {
    out = FormatJson(*report, capacity);
  } else {
    out = FormatTable(*report, capacity);
    if (f.tree) out += "\n" + FormatTree(*report);
  }
  return 0;
}

}  // namespace oomguard
