// `oomguard check` (see check_command.h): flags, the job envelope, the
// request, the gRPC call and the verdict lines.
#include "tools/check_command.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "jobscript/check_request.h"
#include "jobscript/job_script.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "tools/command_flags.h"

namespace oomguard {
namespace {

constexpr char kUsage[] =
    "usage: oomguard check --server HOST:PORT [--deadline-ms 2000]\n"
    "           [--gpu NAME | --gpu-memory-gib G] [--gpus N] [--gpus-per-node "
    "K]\n"
    "           [--preset P] [--safety-margin F] [--env NAME=VALUE ...] "
    "[--ignore-skip]\n"
    "           [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--json]\n"
    "           (--script FILE | --job-file FILE | -- <Megatron-LM args>)\n"
    "exit: 0 fits, 3 fits with settings, 4 does not fit, 5 not judged,\n"
    "      2 usage or invalid job, 6 service unavailable or too slow\n";

// The service refuses larger requests by default (--max_request_bytes).
constexpr size_t kMaxRequestBytes = size_t{1} << 20;
constexpr uint32_t kMaxCount = 1u << 20;

struct CheckFlags {
  std::string server;
  int64_t deadline_ms = 2000;
  std::string gpu;
  double gpu_memory_gib = 0;
  uint32_t gpus = 0;
  uint32_t gpus_per_node = 0;
  std::string preset;
  std::optional<double> safety_margin;
  std::map<std::string, std::string> env;
  bool ignore_skip = false;
  bool json = false;
  std::string tls_ca, tls_cert, tls_key;
  std::string script_path, job_file_path;
  bool args_given = false;
  std::vector<std::string> args;
};

// A value shown in a message: bounded, control bytes escaped.
std::string Shown(absl::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 120)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  if (text.size() > 120) out += "...";
  return out;
}

bool ParseCount(absl::string_view name, const std::string& v, uint32_t& out, std::string& err) {
  if (!absl::SimpleAtoi(v, &out) || out == 0 || out > kMaxCount) {
    err = absl::StrCat(name, ": expected a whole number in [1, ", kMaxCount, "], got \"", Shown(v),
                       "\"");
    return false;
  }
  return true;
}

bool ParseFlags(const std::vector<std::string>& args, CheckFlags& f, std::string& err) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "--") {
      f.args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      f.args_given = true;
      break;
    } else if (a == "--help" || a == "-h") {
      err = kUsage;
      return false;
    } else if (a == "--json") {
      f.json = true;
    } else if (a == "--ignore-skip") {
      f.ignore_skip = true;
    } else if (IsFlag(a, "--server")) {
      if (!TakeFlagValue(args, i, "--server", f.server, err)) return false;
    } else if (IsFlag(a, "--deadline-ms")) {
      if (!TakeFlagValue(args, i, "--deadline-ms", v, err)) return false;
      if (!absl::SimpleAtoi(v, &f.deadline_ms) || f.deadline_ms < 1 || f.deadline_ms > 600000) {
        err = absl::StrCat("--deadline-ms: expected milliseconds in [1, 600000], got \"", Shown(v),
                           "\"");
        return false;
      }
    } else if (IsFlag(a, "--gpu-memory-gib")) {
      if (!TakeFlagValue(args, i, "--gpu-memory-gib", v, err)) return false;
      if (!absl::SimpleAtod(v, &f.gpu_memory_gib) || !std::isfinite(f.gpu_memory_gib) ||
          f.gpu_memory_gib <= 0 || f.gpu_memory_gib > 1e6) {
        err = absl::StrCat("--gpu-memory-gib: expected a positive number of GiB, got \"", Shown(v),
                           "\"");
        return false;
      }
    } else if (IsFlag(a, "--gpus-per-node")) {
      if (!TakeFlagValue(args, i, "--gpus-per-node", v, err) ||
          !ParseCount("--gpus-per-node", v, f.gpus_per_node, err)) {
        return false;
      }
    } else if (IsFlag(a, "--gpus")) {
      if (!TakeFlagValue(args, i, "--gpus", v, err) || !ParseCount("--gpus", v, f.gpus, err)) {
        return false;
      }
    } else if (IsFlag(a, "--gpu")) {
      if (!TakeFlagValue(args, i, "--gpu", f.gpu, err)) return false;
      if (f.gpu.empty()) {
        err = "--gpu: expected a GPU name (see ListGpus), got \"\"";
        return false;
      }
    } else if (IsFlag(a, "--preset")) {
      if (!TakeFlagValue(args, i, "--preset", f.preset, err)) return false;
    } else if (IsFlag(a, "--safety-margin")) {
      if (!TakeFlagValue(args, i, "--safety-margin", v, err)) return false;
      double margin = 0;
      if (!absl::SimpleAtod(v, &margin) || !(margin >= 0 && margin < 1)) {
        err =
            absl::StrCat("--safety-margin: expected a fraction in [0, 1), got \"", Shown(v), "\"");
        return false;
      }
      f.safety_margin = margin;
    } else if (IsFlag(a, "--env")) {
      if (!TakeFlagValue(args, i, "--env", v, err)) return false;
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        err = absl::StrCat("--env: expected NAME=VALUE, got \"", Shown(v), "\"");
        return false;
      }
      f.env[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (IsFlag(a, "--tls-ca")) {
      if (!TakeFlagValue(args, i, "--tls-ca", f.tls_ca, err)) return false;
    } else if (IsFlag(a, "--tls-cert")) {
      if (!TakeFlagValue(args, i, "--tls-cert", f.tls_cert, err)) return false;
    } else if (IsFlag(a, "--tls-key")) {
      if (!TakeFlagValue(args, i, "--tls-key", f.tls_key, err)) return false;
    } else if (IsFlag(a, "--script")) {
      if (!TakeFlagValue(args, i, "--script", f.script_path, err)) return false;
    } else if (IsFlag(a, "--job-file")) {
      if (!TakeFlagValue(args, i, "--job-file", f.job_file_path, err)) return false;
    } else {
      err = absl::StrCat("unknown flag \"", Shown(a),
                         "\" (Megatron-LM arguments go after --; see --help)");
      return false;
    }
  }
  if (f.server.empty() || std::any_of(f.server.begin(), f.server.end(), [](char c) {
        return absl::ascii_isspace(static_cast<unsigned char>(c));
      })) {
    err = absl::StrCat("--server: expected HOST:PORT, got \"", Shown(f.server), "\"");
    return false;
  }
  const int sources =
      (f.script_path.empty() ? 0 : 1) + (f.job_file_path.empty() ? 0 : 1) + (f.args_given ? 1 : 0);
  if (sources != 1) {
    err =
        "give exactly one of --script FILE, --job-file FILE or -- <Megatron-LM "
        "args>";
    return false;
  }
  if (!f.gpu.empty() && f.gpu_memory_gib > 0) {
    err = "give either --gpu or --gpu-memory-gib, not both";
    return false;
  }
  if (f.tls_ca.empty() && (!f.tls_cert.empty() || !f.tls_key.empty())) {
    err = "--tls-cert/--tls-key need --tls-ca";
    return false;
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    err = "give both --tls-cert and --tls-key, or neither";
    return false;
  }
  return true;
}

absl::StatusOr<std::string> ReadBounded(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", Shown(path), "\""));
  }
  std::string text(kMaxJobFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxJobFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", Shown(path), "\" is larger than ", kMaxJobFileBytes, " bytes"));
  }
  return text;
}

bool IsHeaderName(absl::string_view v) {
  return !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '+' || c == ':';
  });
}

// The settings of FITS_WITH_SETTINGS as lines to paste: `export A=B C=D`
// when the setting is only assignments.
std::string SettingLine(const std::string& setting) {
  const std::vector<std::string> items = absl::StrSplit(setting, ' ', absl::SkipEmpty());
  const bool assignments =
      !items.empty() && std::all_of(items.begin(), items.end(), [](const std::string& s) {
        const size_t eq = s.find('=');
        return eq != std::string::npos && eq > 0 && s.find(',') == std::string::npos;
      });
  return assignments ? absl::StrCat("oomguard: add to the job script: export ", setting, "\n")
                     : absl::StrCat("oomguard: change the job: ", setting, "\n");
}

std::string GiB(uint64_t bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (uint64_t{1} << 30));
}

std::string FormatVerdict(const v1::CheckResponse& r) {
  std::string out = absl::StrCat("oomguard: ", r.summary(), "\n");
  switch (r.verdict()) {
    case v1::VERDICT_FITS:
      break;
    case v1::VERDICT_FITS_WITH_SETTINGS:
      for (const v1::Recommendation& rec : r.recommendations()) {
        if (rec.kind() == v1::Recommendation::KIND_ENVIRONMENT) out += SettingLine(rec.setting());
      }
      break;
    default: {
      int step = 0;
      for (const v1::Recommendation& rec : r.recommendations()) {
        if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) continue;
        absl::StrAppend(&out, "oomguard: step ", ++step, ": ", rec.setting(), " -> worst rank ",
                        GiB(rec.peak_device_bytes_after()),
                        rec.sufficient() ? " (fits)" : " (still over)", "\n");
      }
    }
  }
  for (const v1::Recommendation& rec : r.recommendations()) {
    if (rec.kind() != v1::Recommendation::KIND_INCOMPATIBILITY) continue;
    absl::StrAppend(&out, "oomguard: will not start as given: ", rec.reason(),
                    " (fix: ", rec.setting(), ")\n");
  }
  return out;
}

// What to send, or why nothing is judged.
struct Plan {
  v1::CheckRequest request;
  bool gpu_from_scheduler = false;
  std::vector<std::string> notes;
  std::string not_judged;  // Non-empty: exit 5 with this reason.
  // Launch words only known at run time (ScriptJob::unresolved).
  std::vector<std::string> unresolved;
};

// `flag` (command line), `header` (scheduler) and `directive` (script):
// the first that is set, with a note when it overrides a different one.
template <typename T>
T Choose(absl::string_view what, const T& flag, const T& header, const T& directive,
         std::vector<std::string>& notes) {
  const T unset{};
  auto note = [&](const T& winner, absl::string_view from, const T& loser,
                  absl::string_view loser_from) {
    if (loser != unset && loser != winner) {
      notes.push_back(
          absl::StrCat(loser_from, " ", what, "=", loser, " ignored: ", from, " says ", winner));
    }
  };
  if (flag != unset) {
    note(flag, "the command line", header, "the scheduler's");
    note(flag, "the command line", directive, "#OOMGUARD");
    return flag;
  }
  if (header != unset) {
    note(header, "the scheduler's allocation", directive, "#OOMGUARD");
    return header;
  }
  return directive;
}

Plan MakePlan(const CheckFlags& f, const JobEnvelope* envelope, const ScriptJob& job) {
  Plan plan;
  static const JobEnvelope kNoEnvelope;
  const JobEnvelope& e = envelope != nullptr ? *envelope : kNoEnvelope;
  plan.notes = job.notes;
  plan.unresolved = job.unresolved;
  const std::string where =
      e.partition.empty() ? "" : absl::StrCat(" (partition ", e.partition, ")");
  if (!job.found) {
    plan.not_judged =
        "no Megatron-LM training launch (torchrun/python ... pretrain_gpt.py) "
        "found in the job";
    return plan;
  }
  if (job.skip && !f.ignore_skip) {
    plan.not_judged = "the job script says #OOMGUARD skip";
    return plan;
  }
  const uint32_t gpus = Choose<uint32_t>("gpus", f.gpus, e.gpus, job.num_gpus, plan.notes);
  const uint32_t per_node = Choose<uint32_t>("gpus-per-node", f.gpus_per_node, e.gpus_per_node,
                                             job.gpus_per_node, plan.notes);
  const std::string preset = Choose<std::string>("preset", f.preset, "", job.preset, plan.notes);
  if (gpus == 0) {
    plan.not_judged = absl::StrCat("the job's GPU count is unknown", where,
                                   ": request GPUs (--gpus, --gres=gpu:N) or add "
                                   "#OOMGUARD gpus=N");
    return plan;
  }
  std::string gpu_name;
  uint64_t gpu_memory_bytes = 0;
  if (f.gpu_memory_gib > 0) {
    if (!e.gpu.empty() || !job.gpu.empty()) {
      plan.notes.push_back(absl::StrCat("the GPU named by ",
                                        e.gpu.empty() ? "#OOMGUARD" : "the scheduler",
                                        " ignored: --gpu-memory-gib ", f.gpu_memory_gib, " given"));
    }
    gpu_memory_bytes =
        static_cast<uint64_t>(std::llround(f.gpu_memory_gib * static_cast<double>(1ull << 30)));
  } else {
    std::string gpu = Choose<std::string>("gpu", f.gpu, e.gpu, job.gpu, plan.notes);
    plan.gpu_from_scheduler = f.gpu.empty() && !e.gpu.empty();
    if (gpu.empty() && !e.default_gpu.empty()) {
      gpu = e.default_gpu;
      plan.gpu_from_scheduler = true;
    }
    if (gpu.empty()) {
      plan.not_judged = absl::StrCat("the GPU type is unknown", where,
                                     ": request a typed GPU (--gres=gpu:TYPE:N) or add "
                                     "#OOMGUARD gpu=NAME");
      return plan;
    }
    gpu_name = std::move(gpu);
  }
  // FSDP is refused by the estimator as Unimplemented; that is a job oomguard
  // cannot judge, not an invalid one.
  {
    v1::JobSpec scratch;
    const absl::Status s = ApplyMegatronArgs(
        job.megatron_args, preset.empty() ? ArgsMode::kFullCommandLine : ArgsMode::kOverrides,
        &scratch, nullptr);
    if (absl::IsUnimplemented(s)) {
      plan.not_judged = std::string(s.message());
      return plan;
    }
  }
  // The submission's environment, then the script's exports, then --env.
  std::map<std::string, std::string> env = e.env;
  for (const auto& [k, v] : job.env) env[k] = v;
  for (const auto& [k, v] : f.env) env[k] = v;
  const std::optional<double> margin =
      f.safety_margin.has_value() ? f.safety_margin : job.safety_margin;
  if (f.safety_margin && job.safety_margin && *f.safety_margin != *job.safety_margin) {
    plan.notes.push_back(absl::StrCat("#OOMGUARD safety-margin=", *job.safety_margin,
                                      " ignored: the command line says ", *f.safety_margin));
  }
  plan.request = BuildCheckRequest(LaunchCheck{.megatron_args = job.megatron_args,
                                               .preset = preset,
                                               .num_gpus = gpus,
                                               .gpus_per_node = per_node,
                                               .env = std::move(env),
                                               .gpu_name = std::move(gpu_name),
                                               .gpu_memory_bytes = gpu_memory_bytes,
                                               .safety_margin = margin});
  return plan;
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ErrLine(absl::string_view text) { return absl::StrCat("oomguard check: ", text, "\n"); }

}  // namespace

absl::StatusOr<JobEnvelope> ParseJobEnvelope(absl::string_view text) {
  if (text.size() > kMaxJobFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("job file is ", text.size(), " bytes, more than ", kMaxJobFileBytes));
  }
  JobEnvelope e;
  size_t pos = text.find('\n');
  if (pos == absl::string_view::npos || text.substr(0, pos) != "oomguard-job 1") {
    return absl::InvalidArgumentError(
        absl::StrCat("job file: the first line must be \"oomguard-job 1\", got \"",
                     Shown(text.substr(0, std::min(pos, text.size()))), "\""));
  }
  ++pos;
  std::map<std::string, bool> seen;
  int line = 1;
  while (true) {
    ++line;
    const size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("job file line ", line, ": the header must end with an empty line"));
    }
    const absl::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) break;
    const size_t eq = item.find('=');
    const absl::string_view key = item.substr(0, eq);
    const absl::string_view value =
        eq == absl::string_view::npos ? absl::string_view() : item.substr(eq + 1);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("job file line ", line, ": \"", Shown(item), "\": ", why));
    };
    if (eq == absl::string_view::npos) return bad("expected key=value");
    if (seen[std::string(key)]) return bad("key given twice");
    seen[std::string(key)] = true;
    if (key == "gpus" || key == "gpus_per_node") {
      uint32_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n == 0 || n > kMaxCount) {
        return bad("expected a whole number in [1, 1048576]");
      }
      (key == "gpus" ? e.gpus : e.gpus_per_node) = n;
    } else if (key == "env.PYTORCH_CUDA_ALLOC_CONF" || key == "env.NCCL_GRAPH_REGISTER") {
      if (value.size() > 256 || !std::all_of(value.begin(), value.end(), [](char c) {
            return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                   absl::StrContains("._+:,=-", c);
          })) {
        return bad("expected 0-256 of [A-Za-z0-9._+:,=-]");
      }
      e.env[std::string(key.substr(4))] = std::string(value);
    } else if (key == "gpu" || key == "default_gpu" || key == "partition") {
      if (!IsHeaderName(value)) return bad("expected 1-128 of [A-Za-z0-9._+:-]");
      (key == "gpu"           ? e.gpu
       : key == "default_gpu" ? e.default_gpu
                              : e.partition) = std::string(value);
    } else {
      return bad(
          "unknown key; known: gpus, gpus_per_node, gpu, default_gpu, "
          "partition");
    }
  }
  e.script = std::string(text.substr(pos));
  return e;
}

int RunCheck(const std::vector<std::string>& args, std::string& out, std::string& err) {
  CheckFlags f;
  std::string flag_error;
  if (!ParseFlags(args, f, flag_error)) {
    if (flag_error == kUsage) {
      out = kUsage;
      return 0;
    }
    err = ErrLine(flag_error) + kUsage;
    return kCheckUsage;
  }
  // The job.
  std::optional<JobEnvelope> envelope;
  absl::StatusOr<ScriptJob> job;
  if (f.args_given) {
    ScriptJob j;
    j.found = true;
    j.megatron_args = f.args;
    job = std::move(j);
  } else {
    const bool is_job_file = !f.job_file_path.empty();
    absl::StatusOr<std::string> text = is_job_file ? ReadBounded("--job-file", f.job_file_path)
                                                   : ReadBounded("--script", f.script_path);
    if (!text.ok()) {
      err = ErrLine(text.status().message());
      return kCheckUsage;
    }
    if (is_job_file) {
      absl::StatusOr<JobEnvelope> e = ParseJobEnvelope(*text);
      if (!e.ok()) {
        err = ErrLine(e.status().message());
        return kCheckUsage;
      }
      envelope = *std::move(e);
      job = ParseJobScript(envelope->script);
    } else {
      job = ParseJobScript(*text);
    }
  }
  if (!job.ok()) {
    err = ErrLine(absl::StrCat("invalid job script: ", job.status().message()));
    return kCheckUsage;
  }
  Plan plan = MakePlan(f, envelope ? &*envelope : nullptr, *job);
  for (const std::string& n : plan.notes) err += ErrLine(absl::StrCat("note: ", n));
  if (!plan.not_judged.empty()) {
    out = absl::StrCat("oomguard: not judged: ", plan.not_judged, "\n");
    return kCheckNotJudged;
  }
  if (const size_t bytes = plan.request.ByteSizeLong(); bytes > kMaxRequestBytes) {
    err += ErrLine(absl::StrCat("invalid job: the check request is ", bytes,
                                " bytes, more than the service takes (", kMaxRequestBytes, ")"));
    return kCheckUsage;
  }
  // The call.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (f.tls_ca.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    for (auto [flag, path, pem] : {std::tuple{"--tls-ca", &f.tls_ca, &ssl.pem_root_certs},
                                   std::tuple{"--tls-cert", &f.tls_cert, &ssl.pem_cert_chain},
                                   std::tuple{"--tls-key", &f.tls_key, &ssl.pem_private_key}}) {
      absl::StatusOr<std::string> text = ReadPem(flag, *path);
      if (!text.ok()) {
        err += ErrLine(text.status().message());
        return kCheckUsage;
      }
      *pem = *std::move(text);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  std::unique_ptr<v1::Oomguard::Stub> stub =
      v1::Oomguard::NewStub(grpc::CreateChannel(f.server, credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(f.deadline_ms));
  v1::CheckResponse response;
  const grpc::Status status = stub->Check(&context, plan.request, &response);
  if (!status.ok()) {
    const std::string message = Shown(status.error_message());
    switch (status.error_code()) {
      case grpc::StatusCode::UNIMPLEMENTED:  // A job oomguard does not model.
        out = absl::StrCat("oomguard: not judged: ", message, "\n");
        return kCheckNotJudged;
      case grpc::StatusCode::INVALID_ARGUMENT:
        if (plan.gpu_from_scheduler && absl::StartsWith(status.error_message(), "gpu_name")) {
          out = absl::StrCat("oomguard: not judged: the service does not know the GPU \"",
                             Shown(plan.request.gpu_name()), "\" the scheduler allocates (",
                             message, ")\n");
          return kCheckNotJudged;
        }
        if (!plan.unresolved.empty()) {
          // The job may be invalid only because words were left out.
          out = absl::StrCat(
              "oomguard: not judged: without what the script leaves to run "
              "time (",
              absl::StrJoin(plan.unresolved, ", "), ") the job is incomplete: ", message, "\n");
          return kCheckNotJudged;
        }
        [[fallthrough]];
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
      case grpc::StatusCode::OUT_OF_RANGE:
        err += ErrLine(absl::StrCat("invalid job: ", message));
        return kCheckUsage;
      default:
        err += ErrLine(absl::StrCat(
            "service ", Shown(f.server), " unavailable: ",
            absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())), ": ",
            message));
        return kCheckUnavailable;
    }
  }
  if (f.json) {
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    options.preserve_proto_field_names = true;
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(response, &json, options).ok()) {
      err += ErrLine("cannot print the response as JSON");
      return kCheckUnavailable;
    }
    out = json + "\n";
  } else {
    out = FormatVerdict(response);
  }
  switch (response.verdict()) {
    case v1::VERDICT_FITS:
      return kCheckFits;
    case v1::VERDICT_FITS_WITH_SETTINGS:
      return kCheckFitsWithSettings;
    case v1::VERDICT_DOES_NOT_FIT:
      return kCheckDoesNotFit;
    default:
      err += ErrLine("the service returned no verdict");
      return kCheckUnavailable;
  }
}

}  // namespace oomguard
