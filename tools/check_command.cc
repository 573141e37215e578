// `oomguard check` (see check_command.h): reads the flags and the job, makes
// the request, calls the service and prints its answer.
#include "tools/check_command.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/deadline.h"
#include "common/status_macros.h"
#include "jobscript/job_script.h"
#include "oomguard/v1/admission.pb.h"
#include "tools/check_flags.h"
#include "tools/check_plan.h"
#include "tools/check_rpc.h"
#include "tools/job_envelope.h"
#include "tools/verdict_format.h"

namespace oomguard {
namespace {

// The service refuses larger requests by default (--max_request_bytes).
constexpr size_t kMaxRequestBytes = size_t{1} << 20;

// The job as the flags give it: the arguments after `--`, the --script, or
// the --job-file's envelope (then `envelope` is set) and its script.
struct CheckJob {
  std::optional<JobEnvelope> envelope;
  ScriptJob script;
};

// The script's reading stops at the deadline of the whole check.
absl::StatusOr<CheckJob> ReadCheckJob(const CheckFlags& f) {
  const Deadline deadline(absl::Now() + absl::Milliseconds(f.deadline_ms));
  CheckJob job;
  if (f.args_given) {
    job.script.found = true;
    job.script.megatron_args = f.args;
    return job;
  }
  absl::StatusOr<ScriptJob> script;
  if (!f.job_file_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string text, ReadJobFile("--job-file", f.job_file_path));
    OOMGUARD_ASSIGN_OR_RETURN(job.envelope, ParseJobEnvelope(text));
    script = ParseJobScript(job.envelope->script, deadline);
  } else {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string text, ReadJobFile("--script", f.script_path));
    script = ParseJobScript(text, deadline);
  }
  if (IsUnreadableScript(script.status())) {
    return absl::Status(script.status().code(),
                        absl::StrCat("cannot read the job script: ", script.status().message()));
  }
  if (!script.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid job script: ", script.status().message()));
  }
  job.script = *std::move(script);
  return job;
}

int ExitCodeOf(v1::Verdict verdict) {
  switch (verdict) {
    case v1::VERDICT_FITS:
      return kCheckFits;
    case v1::VERDICT_FITS_WITH_SETTINGS:
      return kCheckFitsWithSettings;
    case v1::VERDICT_DOES_NOT_FIT:
      return kCheckDoesNotFit;
    default:
      return kCheckUnavailable;
  }
}

std::string ErrLine(absl::string_view text) { return absl::StrCat("oomguard check: ", text, "\n"); }

}  // namespace

int RunCheckCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  absl::StatusOr<CheckFlags> flags = ParseCheckFlags(args);
  if (!flags.ok()) {
    err = ErrLine(flags.status().message()) + kCheckUsageText;
    return kCheckUsage;
  }
  const CheckFlags& f = *flags;
  if (f.help) {
    out = kCheckUsageText;
    return kCheckFits;
  }
  CheckPlan plan;
  if (!f.rl_config_path.empty()) {
    absl::StatusOr<std::string> config = ReadJobFile("--rl-config", f.rl_config_path);
    if (!config.ok()) {
      err = ErrLine(config.status().message());
      return kCheckUsage;
    }
    plan = MakeRlCheckPlan(f, *std::move(config));
  } else {
    absl::StatusOr<CheckJob> job = ReadCheckJob(f);
    if (!job.ok()) {
      err = ErrLine(job.status().message());
      // A script oomguard cannot read is not an invalid job: the hook's
      // policy decides, as when the service does not answer.
      return IsUnreadableScript(job.status()) ? kCheckUnavailable : kCheckUsage;
    }
    plan = MakeCheckPlan(f, job->envelope ? &*job->envelope : nullptr, job->script);
  }
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
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = MakeChannelCredentials(f);
  if (!credentials.ok()) {
    err += ErrLine(credentials.status().message());
    return kCheckUsage;
  }
  v1::CheckResponse response;
  if (const grpc::Status status = CallCheck(f, *credentials, plan.request, &response);
      !status.ok()) {
    const CheckFailure failure = ClassifyCheckFailure(status, plan, f.server);
    out = failure.out;
    if (!failure.error.empty()) err += ErrLine(failure.error);
    return failure.exit_code;
  }
  if (f.json) {
    absl::StatusOr<std::string> json = FormatCheckResponseJson(response);
    if (!json.ok()) {
      err += ErrLine(json.status().message());
      return kCheckUnavailable;
    }
    out = *std::move(json);
  } else {
    out = FormatVerdict(response);
  }
  const int code = ExitCodeOf(response.verdict());
  if (code == kCheckUnavailable) err += ErrLine("the service returned no verdict");
  // The id the job carries so that what it used comes back (the Slurm hook
  // puts it in the job's admin_comment and environment).
  if (!response.check_id().empty()) {
    err += ErrLine(absl::StrCat(kCheckIdLinePrefix, response.check_id()));
  }
  return code;
}

}  // namespace oomguard
