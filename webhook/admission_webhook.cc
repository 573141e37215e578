// AdmissionReview -> Check -> AdmissionReview (see admission_webhook.h).
#include "webhook/admission_webhook.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "admission/peak_wording.h"
#include "common/valid_utf8.h"
#include "estimator/unmodelled_settings.h"
#include "feedback/report_limits.h"
#include "jobscript/check_request.h"
#include "service/status_mapping.h"
#include "webhook/check_id_patch.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr char kApiVersion[] = "admission.k8s.io/v1";

struct TooDeep {};

absl::StatusOr<json> ParseBody(absl::string_view body) {
  // The API server writes a Pod's bytes that are not UTF-8 as U+FFFD; a body
  // that holds them raw is read by the same rule (common/valid_utf8.h).
  std::string valid;
  if (!IsValidUtf8(body)) body = valid = ValidUtf8(body);
  try {
    // Thrown from the callback to stop at once: a deep body is refused
    // before it is built.
    const json::parser_callback_t depth_guard = [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) throw TooDeep{};
      return true;
    };
    return json::parse(body.begin(), body.end(), depth_guard);
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(
        absl::StrCat("body: JSON nested deeper than ", kMaxJsonDepth, " levels"));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("body: not JSON: ", e.what()));
  }
}

// A string member of `object`, or "" when absent or not a string.
std::string StringField(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// One warning: no control characters, at most kMaxWarningBytes (cut at a
// UTF-8 character boundary).
std::string Warning(absl::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (s.size() > kMaxWarningBytes) {
    size_t cut = kMaxWarningBytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = absl::StrCat(s.substr(0, cut), "...");
  }
  return s;
}

// What goes into the response.
struct Answer {
  bool allowed = true;
  std::string message;  // status.message when denied.
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, std::string>> audit;
  // A JSONPatch's operations (mutating answers only); null for none.
  json patch;
};

std::string ReviewJson(const std::string& uid, const Answer& answer) {
  ordered_json response;
  response["uid"] = uid;
  response["allowed"] = answer.allowed;
  if (!answer.allowed) {
    response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", answer.message}};
  }
  if (!answer.warnings.empty()) response["warnings"] = answer.warnings;
  if (answer.patch.is_array() && !answer.patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] =
        absl::Base64Escape(answer.patch.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (!answer.audit.empty()) {
    ordered_json audit = ordered_json::object();
    for (const auto& [key, value] : answer.audit) audit[key] = value;
    response["auditAnnotations"] = std::move(audit);
  }
  ordered_json review;
  review["apiVersion"] = kApiVersion;
  review["kind"] = "AdmissionReview";
  review["response"] = std::move(response);
  // Invalid UTF-8 (only possible in echoed text) becomes U+FFFD.
  return review.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// "PyTorchJob ml/ds-v3": the object, for messages.
std::string Subject(const json& request, const json& object, absl::string_view kind) {
  std::string name = StringField(request, "name");
  const json* metadata = nullptr;
  if (object.is_object()) {
    if (auto it = object.find("metadata"); it != object.end()) metadata = &*it;
  }
  if (name.empty() && metadata != nullptr) name = StringField(*metadata, "name");
  if (name.empty() && metadata != nullptr) {
    name = StringField(*metadata, "generateName");
    if (!name.empty()) absl::StrAppend(&name, "*");
  }
  const std::string ns = StringField(request, "namespace");
  return absl::StrCat(kind, " ", ns, ns.empty() ? "" : "/", name.empty() ? "(unnamed)" : name);
}

void AddVerdict(const v1::CheckResponse& r, const WorkloadJob& job, absl::string_view subject,
                Answer* answer) {
  const std::string verdict(absl::StripPrefix(v1::Verdict_Name(r.verdict()), "VERDICT_"));
  answer->audit = {{"verdict", verdict},
                   {"worst-pp-rank", absl::StrCat(r.worst_pp_rank())},
                   {"peak-device-bytes", absl::StrCat(r.peak_device_bytes())},
                   {"usable-bytes", absl::StrCat(r.usable_bytes())},
                   {"gpu", r.gpu_name()},
                   {"num-gpus", absl::StrCat(job.launch.num_gpus)}};
  std::vector<const v1::Recommendation*> environment, ladder, incompatible;
  for (const v1::Recommendation& rec : r.recommendations()) {
    if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) {
      incompatible.push_back(&rec);
    } else {
      ladder.push_back(&rec);
      if (rec.kind() == v1::Recommendation::KIND_ENVIRONMENT) environment.push_back(&rec);
    }
  }
  switch (r.verdict()) {
    case v1::VERDICT_DOES_NOT_FIT: {
      answer->allowed = false;
      answer->message =
          absl::StrCat("oomguard: ", subject, " (", job.launch.num_gpus, " GPUs, ", r.gpu_name(),
                       ") would run out of GPU memory. ", r.summary(),
                       " To admit it anyway, annotate it ", kSkipAnnotation, ": \"true\".");
      for (size_t i = 0; i < ladder.size() && i < 3; ++i) {
        const v1::Recommendation& rec = *ladder[i];
        answer->warnings.push_back(
            Warning(absl::StrCat("oomguard: ", i == 0 ? "try " : "then ", rec.setting(),
                                 " -> peak ", StepOutcome(rec, r))));
      }
      break;
    }
    case v1::VERDICT_FITS_WITH_SETTINGS: {
      std::vector<std::string> settings;
      uint64_t after = r.compared_peak_bytes();
      for (const v1::Recommendation* rec : environment) {
        settings.push_back(rec->setting());
        after = rec->peak_device_bytes_after();
      }
      answer->warnings.push_back(Warning(absl::StrCat(
          "oomguard: fits on ", r.gpu_name(), " only with ", absl::StrJoin(settings, " and "),
          ": PP rank ", r.worst_pp_rank(), " peaks at ", LabelledPeak(r.compared_peak_bytes(), r),
          " without, ", LabelledPeak(after, r), " with, of ",
          FormatBytes(static_cast<double>(r.usable_bytes())), " usable")));
      break;
    }
    default:
      break;
  }
  for (const v1::Recommendation* rec : incompatible) {
    answer->warnings.push_back(Warning(absl::StrCat(
        "oomguard: as given it will not start: ", rec->reason(), " (fix: ", rec->setting(), ")")));
  }
}

// The job's handle, for finding its pods' measurements later: none for a
// dry run, or before the object has a name (generateName).
v1::JobHandle HandleOf(const json& object, WorkloadKind kind, const AdmissionOutcome& outcome) {
  v1::JobHandle handle;
  if (outcome.dry_run) return handle;
  std::string name = outcome.name;
  if (name.empty() && object.is_object()) {
    if (auto it = object.find("metadata"); it != object.end()) name = StringField(*it, "name");
  }
  if (name.empty() || outcome.namespace_name.empty()) return handle;
  handle.set_kubernetes_namespace(outcome.namespace_name);
  handle.set_kubernetes_workload(name);
  handle.set_kubernetes_kind(std::string(WorkloadKindName(kind)));
  // The API server has checked the names; a handle it would not take is
  // dropped, never the check.
  if (!feedback::ValidateJobHandle(handle).ok()) handle.Clear();
  return handle;
}

// Judges one object of a kind the webhook knows.
Answer Judge(const json& request, const json& object, WorkloadKind kind, const GpuCatalog& catalog,
             absl::Time deadline, CheckFunction check, AdmissionMode mode,
             AdmissionOutcome* outcome) {
  Answer answer;
  const std::string subject = Subject(request, object, WorkloadKindName(kind));
  auto cannot_judge = [&](const absl::Status& status) {
    outcome->code = status.code();
    outcome->reason = std::string(status.message());
    answer.warnings.push_back(
        Warning(absl::StrCat("oomguard could not check ", subject, ": ", status.message())));
    answer.audit = {{"error", Warning(status.message())}};
    return answer;
  };

  absl::StatusOr<WorkloadJob> job = ReadWorkload(object, kind, Deadline(deadline));
  if (!job.ok()) return cannot_judge(job.status());
  if (!job->judge) {
    outcome->reason = job->not_judged;
    answer.audit = {{"skipped", job->not_judged}};
    return answer;
  }
  absl::StatusOr<v1::CheckRequest> check_request = CheckRequestFor(*job, catalog);
  if (!check_request.ok()) return cannot_judge(check_request.status());
  v1::CheckResponse response;
  absl::Status status;
  try {
    status = check(*check_request, HandleOf(object, kind, *outcome), deadline, &response);
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("unexpected exception: ", e.what()));
  }
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    status = absl::DeadlineExceededError("the check did not finish in time");
  }
  const std::string unresolved = absl::StrJoin(job->unresolved, ", ");
  if (!status.ok()) {
    Answer failed = cannot_judge(status);
    if (service::IsJobNotModelled(status)) {
      // oomguard's own answer, naming what it does not model: not judged,
      // admitted (the operator chooses to judge such jobs with the server's
      // --judge_unmodelled).
      failed.warnings.front() =
          Warning(absl::StrCat("oomguard did not judge ", subject, ": ", status.message()));
      failed.audit = {{"not-judged", Warning(status.message())}};
    }
    if (!unresolved.empty()) {
      failed.warnings.push_back(Warning(absl::StrCat("oomguard: the launch leaves out ", unresolved,
                                                     " (known only at run time)")));
    }
    for (std::string& w : job->warnings) failed.warnings.push_back(Warning(w));
    return failed;
  }
  outcome->judged = true;
  outcome->verdict = response.verdict();
  outcome->peak_bytes = response.peak_device_bytes();
  outcome->check_id = response.check_id();
  AddVerdict(response, *job, subject, &answer);
  if (!response.check_id().empty()) answer.audit.emplace_back("check-id", response.check_id());
  if (!response.unmodelled_settings().empty()) {
    // Judged anyway (the server's --judge_unmodelled): the verdict is of the
    // job without these settings, and says so first.
    std::vector<std::string> settings;
    for (const v1::UnmodelledSetting& s : response.unmodelled_settings()) {
      settings.push_back(absl::StrCat(UnmodelledSettingName(s), " (", s.reason(), ")"));
    }
    answer.audit.emplace_back("judged-without", Warning(absl::StrJoin(settings, "; ")));
    answer.warnings.insert(
        answer.warnings.begin(),
        Warning(absl::StrCat(
            "oomguard: ", absl::StripPrefix(v1::Verdict_Name(response.verdict()), "VERDICT_"),
            ", judged without modelling ", absl::StrJoin(settings, "; "))));
  }
  if (!unresolved.empty()) {
    // Judged without flags that may change memory: a denial would be a guess.
    answer.audit.emplace_back("unresolved", Warning(unresolved));
    std::string note = absl::StrCat("judged without ", unresolved, " (known only at run time)");
    if (!answer.allowed) {
      note = absl::StrCat("as read, it would not fit on ", response.gpu_name(), " (PP rank ",
                          response.worst_pp_rank(), " peaks at ",
                          LabelledPeak(response.compared_peak_bytes(), response), " of ",
                          FormatBytes(static_cast<double>(response.usable_bytes())),
                          " usable); not enforced: ", note);
      answer.allowed = true;
      answer.message.clear();
    }
    answer.warnings.insert(answer.warnings.begin(), Warning(absl::StrCat("oomguard: ", note)));
  }
  for (std::string& w : job->warnings) answer.warnings.push_back(Warning(w));
  if (mode == AdmissionMode::kMutate && answer.allowed && !response.check_id().empty()) {
    answer.patch = CheckIdPatch(object, *job, response.check_id());
    outcome->patched = !answer.patch.empty();
  }
  return answer;
}

}  // namespace

absl::StatusOr<std::string> ResolveGpuName(absl::string_view name, const GpuCatalog& catalog) {
  std::string key = absl::StrReplaceAll(absl::StripAsciiWhitespace(name), {{" ", "-"}});
  if (absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(key); gpu.ok()) return gpu->name();
  // GPU feature discovery writes NVML's product name: "NVIDIA-H100-80GB-HBM3".
  for (absl::string_view vendor : {"NVIDIA-", "Tesla-"}) {
    if (absl::StartsWithIgnoreCase(key, vendor)) key = key.substr(vendor.size());
  }
  if (absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(key); gpu.ok()) return gpu->name();
  static constexpr std::pair<const char*, const char*> kProducts[] = {
      {"H100-80GB-HBM3", "H100-SXM-80GB"},
  };
  for (const auto& [product, catalog_name] : kProducts) {
    if (absl::EqualsIgnoreCase(key, product)) {
      if (absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(catalog_name); gpu.ok()) {
        return gpu->name();
      }
    }
  }
  return catalog.Find(std::string(name)).status();
}

absl::StatusOr<v1::CheckRequest> CheckRequestFor(const WorkloadJob& job,
                                                 const GpuCatalog& catalog) {
  absl::StatusOr<std::string> gpu = ResolveGpuName(job.gpu, catalog);
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(job.gpu_source, " = \"", job.gpu, "\": ", gpu.status().message(),
                     " (set annotation ", kGpuAnnotation, " to one of them)"));
  }
  LaunchCheck launch = job.launch;
  launch.gpu_name = *std::move(gpu);
  v1::CheckRequest request = BuildCheckRequest(launch);
  // The review answers with the verdict and the summary, never the per-rank
  // report.
  request.set_omit_report(true);
  return request;
}

AdmissionAnswer ReviewAdmission(absl::string_view body, const GpuCatalog& catalog,
                                absl::Time deadline, CheckFunction check, AdmissionMode mode) {
  AdmissionAnswer result;
  AdmissionOutcome& outcome = result.outcome;
  auto refuse = [&](const std::string& message) {
    result.http_status = 400;
    result.body = absl::StrCat(message, "\n");
    outcome.code = absl::StatusCode::kInvalidArgument;
    outcome.reason = message;
    return result;
  };
  absl::StatusOr<json> review = ParseBody(body);
  if (!review.ok()) return refuse(std::string(review.status().message()));
  if (!review->is_object()) return refuse("body: expected an AdmissionReview object");
  if (const std::string v = StringField(*review, "apiVersion"); v != kApiVersion) {
    return refuse(absl::StrCat("apiVersion = \"", v, "\": expected \"", kApiVersion, "\""));
  }
  if (const std::string k = StringField(*review, "kind"); k != "AdmissionReview") {
    return refuse(absl::StrCat("kind = \"", k, "\": expected \"AdmissionReview\""));
  }
  const auto request_it = review->find("request");
  if (request_it == review->end() || !request_it->is_object()) {
    return refuse("request: missing or not an object");
  }
  const json& request = *request_it;
  outcome.uid = StringField(request, "uid");
  if (outcome.uid.empty()) return refuse("request.uid: missing or not a string");

  outcome.operation = StringField(request, "operation");
  outcome.namespace_name = StringField(request, "namespace");
  outcome.name = StringField(request, "name");
  const auto dry_run = request.find("dryRun");
  outcome.dry_run = dry_run != request.end() && dry_run->is_boolean() && dry_run->get<bool>();
  const auto kind_it = request.find("kind");
  const json no_kind = json::object();
  const json& kind = kind_it != request.end() && kind_it->is_object() ? *kind_it : no_kind;
  outcome.kind = StringField(kind, "kind");

  Answer answer;
  const std::optional<WorkloadKind> workload =
      WorkloadKindOf(StringField(kind, "group"), outcome.kind);
  const auto object = request.find("object");
  if (!workload.has_value()) {
    outcome.reason = absl::StrCat("kind ", outcome.kind, " is not judged");
    answer.audit = {{"skipped", outcome.reason}};
  } else if (outcome.operation != "CREATE") {
    outcome.reason = absl::StrCat("operation ", outcome.operation, " is not judged");
    answer.audit = {{"skipped", outcome.reason}};
  } else if (object == request.end() || !object->is_object()) {
    outcome.code = absl::StatusCode::kInvalidArgument;
    outcome.reason = "request.object: missing or not an object";
    answer.warnings.push_back(
        absl::StrCat("oomguard could not check this object: ", outcome.reason));
  } else {
    answer = Judge(request, *object, *workload, catalog, deadline, check, mode, &outcome);
  }
  outcome.allowed = answer.allowed;
  result.body = ReviewJson(outcome.uid, answer);
  return result;
}

}  // namespace oomguard::webhook
