// Calibration against measured runs (see calibration.h).
#include "tools/calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "jobspec/job_builder.h"

namespace oomguard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Features whose memory oomguard does not model, by a flag in the case.
struct Exclusion {
  const char* flag;
  const char* why;
};
constexpr Exclusion kExclusions[] = {
    {"--rerun-mode", "rerun state machine keeps extra copies for result validation"},
    // FSDP is modelled (estimator/fsdp_memory.h) and its three measured cases
    // are checked in tests/estimator/fsdp_memory_test.cc, outside this
    // summary, which keeps the DDP set it was fitted on.
    {"--use-megatron-fsdp", "FSDP is checked apart (fsdp_memory_test)"},
    {"--use-torch-fsdp2", "FSDP is checked apart (fsdp_memory_test)"},
    {"--cuda-graph-impl", "CUDA graph memory is an approximation"},
    {"--fine-grained-activation-offloading", "fine-grained activation offload is approximated"},
};

std::string ExclusionFor(const std::vector<std::string>& argv) {
  for (const Exclusion& e : kExclusions) {
    if (std::find(argv.begin(), argv.end(), e.flag) != argv.end()) return e.why;
  }
  return "";
}

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// One CSV record split on commas outside double quotes.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

double Number(const google::protobuf::Struct& s, const char* key) {
  auto it = s.fields().find(key);
  return it != s.fields().end() && it->second.has_number_value() ? it->second.number_value() : 0;
}

// The report of `c`, estimated as `oomguard estimate` would.
absl::StatusOr<v1::EstimateReport> EstimateCase(const CalibrationCase& c) {
  JobInputs source;
  source.megatron_args = c.argv;
  source.env = c.env;
  source.num_gpus = c.gpus;
  OOMGUARD_ASSIGN_OR_RETURN(v1::JobSpec job, BuildJob(source, nullptr));
  if (c.torch_adam) {
    job.mutable_runtime()->set_optimizer_implementation(v1::OPTIMIZER_IMPLEMENTATION_TORCH);
  }
  return Estimate(job);
}

}  // namespace

absl::StatusOr<std::vector<CalibrationCase>> LoadMegatronCiCases(const std::string& path) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> lines, ReadLines(path));
  std::vector<CalibrationCase> cases;
  for (const std::string& line : lines) {
    google::protobuf::Struct s;
    if (!google::protobuf::util::JsonStringToMessage(line, &s).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": malformed line"));
    }
    CalibrationCase c;
    c.name = s.fields().at("case").string_value();
    const std::string family = c.name.substr(0, c.name.find('/'));
    if (family != "gpt" && family != "moe" && family != "mixtral") continue;
    for (const auto& v : s.fields().at("argv").list_value().values())
      c.argv.push_back(v.string_value());
    for (const auto& [k, v] : s.fields().at("env").struct_value().fields())
      c.env[k] = v.string_value();
    const double gpus = Number(s, "gpus");
    c.gpus_known = gpus > 0;
    c.gpus = c.gpus_known ? static_cast<uint32_t>(gpus) : 8;
    c.measured_static = Number(s, "alloc_after_step");
    c.measured_peak = Number(s, "max_alloc");
    c.excluded = ExclusionFor(c.argv);
    cases.push_back(std::move(c));
  }
  return cases;
}

absl::StatusOr<std::vector<CalibrationCase>> LoadSweepCases(const std::string& path) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> lines, ReadLines(path));
  if (lines.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty"));
  const std::vector<std::string> header = SplitCsv(lines[0]);
  auto column = [&](const char* name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t id = column("config_id"), argv = column("argv"), st = column("static_alloc_mib"),
               peak = column("peak_alloc_mib"), step_peak = column("step_peak_alloc_mib"),
               device = column("device_used_mib");
  std::vector<CalibrationCase> cases;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = SplitCsv(lines[i]);
    if (f.size() < header.size()) continue;
    CalibrationCase c;
    c.name = absl::StrCat("sweep/", f[id]);
    c.argv = absl::StrSplit(f[argv], ' ', absl::SkipEmpty());
    // The sweep ran Megatron's local attention with masked_softmax_fusion
    // off (h100_single_gpu_sweep.md), which its argv column does not say.
    if (absl::StrContains(c.name, "local_unfused")) c.argv.push_back("--no-masked-softmax-fusion");
    // It built TransformerConfig directly, whose gradient_accumulation_fusion
    // defaults to off (model_parallel_config.py), and had neither Apex nor
    // TE for the fused kernel (h100_single_gpu_sweep.md): no fusion.
    c.argv.push_back("--no-gradient-accumulation-fusion");
    // It fed the model attention_mask=None (h100_single_gpu_sweep.md), as
    // Megatron-LM does with --no-create-attention-mask-in-dataloader.
    c.argv.push_back("--no-create-attention-mask-in-dataloader");
    c.gpus = 1;
    c.gpus_known = true;
    c.without_workspaces = true;
    // The sweep ran without Transformer Engine and Apex, so Megatron's
    // optimizer was torch's AdamW (h100_single_gpu_sweep.md).
    c.torch_adam = true;
    double mib = 0;
    if (absl::SimpleAtod(f[st], &mib)) c.measured_static = mib * kMiB;
    // torch.cuda.max_memory_allocated over the iteration: the larger of the
    // forward/backward peak and the optimizer step's.
    if (absl::SimpleAtod(f[peak], &mib)) c.measured_peak = mib * kMiB;
    if (step_peak < f.size() && absl::SimpleAtod(f[step_peak], &mib)) {
      c.measured_peak = std::max(c.measured_peak, mib * kMiB);
    }
    if (device < f.size() && absl::SimpleAtod(f[device], &mib)) c.measured_device = mib * kMiB;
    cases.push_back(std::move(c));
  }
  return cases;
}

CaseResult EvaluateCase(const CalibrationCase& c) {
  CaseResult r;
  r.c = c;
  const absl::StatusOr<v1::EstimateReport> report = EstimateCase(c);
  if (!report.ok()) {
    r.error = std::string(report.status().message());
    return r;
  }
  // Measurements are from the last rank.
  const v1::RankReport& last = report->ranks(report->ranks_size() - 1);
  double persistent = 0, workspaces = 0;
  for (const v1::Overhead& o : last.overheads()) {
    const bool workspace =
        o.name() == "library_workspaces" || o.name() == "grouped_gemm_workspaces";
    if (workspace) workspaces += static_cast<double>(o.bytes());
    if (workspace || o.name() == "pipeline_p2p_buffers" || o.name() == "global_memory_buffer") {
      persistent += static_cast<double>(o.bytes());
    }
  }
  // Measured after the optimizer step, before the next zero_grad.
  r.est_static =
      static_cast<double>(last.static_bytes() + last.optimizer_step_bytes()) + persistent;
  r.est_peak = static_cast<double>(last.peak_allocated_bytes());
  r.est_peak_upper = static_cast<double>(last.peak_allocated_upper_bytes());
  // The device measurement sees the workspaces.
  r.est_device = static_cast<double>(last.peak_device_bytes());
  r.est_device_upper = static_cast<double>(last.peak_device_upper_bytes());
  if (c.without_workspaces) {
    r.est_static -= workspaces;
    r.est_peak -= workspaces;
    r.est_peak_upper -= workspaces;
  }
  return r;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

CalibrationSummary Summarise(const std::vector<CaseResult>& results) {
  CalibrationSummary s;
  std::vector<double> st, pk, dev;
  int covered = 0, device_covered = 0;
  double width = 0, device_width = 0;
  for (const CaseResult& r : results) {
    ++s.cases;
    if (!r.error.empty()) {
      if (r.c.excluded.empty()) ++s.failed;
      continue;
    }
    if (!r.c.gpus_known || !r.c.excluded.empty()) continue;
    ++s.targeted;
    if (r.c.measured_static > 0) st.push_back(std::abs(r.static_err()));
    if (r.c.measured_peak > 4 * kGiB) {
      pk.push_back(std::abs(r.peak_err()));
      s.worst_underestimate = std::min(s.worst_underestimate, r.peak_err());
      if (r.peak_upper_width() >= 0) ++covered;
      width += r.peak_upper_width();
    }
    if (r.c.measured_device > 4 * kGiB) {
      dev.push_back(std::abs(r.est_device / r.c.measured_device - 1));
      if (r.device_upper_width() >= 0) ++device_covered;
      device_width += r.device_upper_width();
    }
  }
  s.static_median = Median(st);
  s.static_worst = st.empty() ? 0 : *std::max_element(st.begin(), st.end());
  s.peak_median = Median(pk);
  s.peak_worst = pk.empty() ? 0 : *std::max_element(pk.begin(), pk.end());
  s.peak_cases = static_cast<int>(pk.size());
  if (!pk.empty()) {
    s.upper_coverage = static_cast<double>(covered) / pk.size();
    s.upper_mean_width = width / pk.size();
  }
  s.device_cases = static_cast<int>(dev.size());
  s.device_median = Median(dev);
  if (!dev.empty()) {
    s.device_coverage = static_cast<double>(device_covered) / dev.size();
    s.device_mean_width = device_width / dev.size();
  }
  return s;
}

std::string FormatCalibration(const std::vector<CaseResult>& results) {
  std::string out = absl::StrFormat("%-92s %9s %9s %7s %9s %9s %7s %9s  %s\n", "case", "static",
                                    "est", "err%", "peak", "est", "err%", "upper", "scope");
  for (const CaseResult& r : results) {
    std::string scope = r.c.excluded.empty()
                            ? (r.c.gpus_known ? "target" : "gpus unknown (8 assumed)")
                            : absl::StrCat("excluded: ", r.c.excluded);
    if (!r.error.empty()) {
      absl::StrAppendFormat(&out, "%-92s error: %s (%s)\n", r.c.name, r.error, scope);
      continue;
    }
    absl::StrAppendFormat(&out, "%-92s %9.3f %9.3f %+7.1f %9.3f %9.3f %+7.1f %9.3f  %s\n", r.c.name,
                          r.c.measured_static / kGiB, r.est_static / kGiB, 100 * r.static_err(),
                          r.c.measured_peak / kGiB, r.est_peak / kGiB, 100 * r.peak_err(),
                          r.est_peak_upper / kGiB, scope);
  }
  const CalibrationSummary s = Summarise(results);
  absl::StrAppendFormat(&out,
                        "\n%d cases, %d in the targets, %d failed to estimate (GiB; err = "
                        "estimate/measured - 1)\n"
                        "static |err|: median %.1f%%, worst %.1f%%\n"
                        "peak |err| (%d cases above 4 GiB): median %.1f%%, worst %.1f%%; worst "
                        "underestimate %.1f%%\n"
                        "upper bound at %.0f%%: covers %.1f%% of those peaks, mean %.1f%% above "
                        "them\n"
                        "device (%d cases measuring GPU memory used): point |err| median %.1f%%; "
                        "upper bound covers %.1f%%, mean %.1f%% above\n",
                        s.cases, s.targeted, s.failed, 100 * s.static_median, 100 * s.static_worst,
                        s.peak_cases, 100 * s.peak_median, 100 * s.peak_worst,
                        100 * s.worst_underestimate, 100 * kDefaultUpperBoundCoverage,
                        100 * s.upper_coverage, 100 * s.upper_mean_width, s.device_cases,
                        100 * s.device_median, 100 * s.device_coverage, 100 * s.device_mean_width);
  return out;
}

}  // namespace oomguard
