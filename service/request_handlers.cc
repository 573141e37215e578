// The service's requests, transport-free (see request_handlers.h).
#include "service/request_handlers.h"

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "admission/admission.h"
#include "admission/rl_admission.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "estimator/rl_step.h"
#include "feedback/report_limits.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/time_util.h"
#include "jobspec/presets.h"
#include "planner/alternatives.h"
#include "planner/gpu_performance.h"
#include "service/check_id.h"
#include "service/check_record.h"
#include "service/request_log.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "service/wire_message.h"

namespace oomguard::service {
namespace {

// Whether a request's PeakBound (`field`) compares the upper bound;
// UNSPECIFIED takes `default_bound`.
absl::StatusOr<bool> ComparesUpperBound(v1::PeakBound bound, v1::PeakBound default_bound,
                                        absl::string_view field) {
  switch (bound) {
    case v1::PEAK_BOUND_UNSPECIFIED:
      return default_bound != v1::PEAK_BOUND_POINT;
    case v1::PEAK_BOUND_UPPER:
      return true;
    case v1::PEAK_BOUND_POINT:
      return false;
    default:
      return WithBadField(absl::InvalidArgumentError(absl::StrCat(
                              field, " = ", bound,
                              ": not a PeakBound (PEAK_BOUND_UPPER = 1, PEAK_BOUND_POINT = 2)")),
                          field);
  }
}

// A request's upper-bound coverage (`field`), validated.
absl::StatusOr<double> Coverage(double coverage, absl::string_view field) {
  if (absl::Status bad = ValidateUpperBoundCoverage(coverage, field); !bad.ok()) {
    return WithBadField(std::move(bad), field);
  }
  return coverage;
}

template <typename Report>
void AddNotes(const std::vector<std::string>& notes, Report* report) {
  for (const std::string& note : notes) report->add_notes(note);
}

// What a check's answer without its report holds of it: its notes.
void KeepReportNotes(v1::CheckResponse& response) {
  v1::EstimateReport notes;
  *notes.mutable_notes() = std::move(*response.mutable_report()->mutable_notes());
  *response.mutable_report() = std::move(notes);
}

// The store's answer for a server without one.
absl::Status NoStore(absl::string_view method) {
  return absl::FailedPreconditionError(absl::StrCat(
      method, ": this server keeps no checks; start it with --store (e.g. sqlite:PATH)"));
}

// The answer of `job`'s check as its request asked for it (the report
// reduced to its notes where it was computed only for `record`), the
// resolution's notes added; `record` (unless null) filled from the full one.
void FinishCheck(const ResolvedJob& job, const v1::CheckRequest& request,
                 const ServiceConfig& config, v1::CheckRecord* record,
                 v1::CheckResponse* response) {
  if (record != nullptr) {
    *record = CheckRecordOf(job, *response, config.version, config.cluster);
    if (request.omit_report() && !job.rl) KeepReportNotes(*response);
  }
  AddNotes(job.notes, response->mutable_report());
}

google::protobuf::Timestamp TimestampOf(absl::Time time) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(time));
}

}  // namespace

RequestHandlers::RequestHandlers(ServiceConfig config, ServiceMetrics* metrics)
    : config_(std::move(config)),
      metrics_(metrics),
      check_cache_(config_.response_cache_bytes),
      check_results_(config_.check_result_cache_bytes),
      plan_cache_(config_.plan_cache_bytes) {
  cache_metrics_ = std::make_shared<CacheMetrics>(std::vector<WatchedCache>{
      {"response", check_cache_.enabled(), [this] { return check_cache_.Stats(); }},
      {"check_result", check_results_.enabled(), [this] { return check_results_.Stats(); }},
      {"plan", plan_cache_.enabled(), [this] { return plan_cache_.Stats(); }}});
  for (const v1::GpuSpec& gpu : config_.catalog.gpus()) *gpus_.add_gpus() = gpu;
}

grpc::Status RequestHandlers::Handle(
    const Call& call,
    absl::FunctionRef<absl::Status(absl::Time deadline, CallOutcome& outcome)> handler) {
  const absl::Time start = absl::Now();
  CallOutcome outcome;
  absl::Status status;
  if (call.deadline <= start) {
    status = absl::DeadlineExceededError("the deadline passed before the call was handled");
  } else {
    // The core does not throw; this guard keeps e.g. std::bad_alloc from
    // taking the server down with every call in flight.
    try {
      status = handler(call.deadline, outcome);
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("unexpected exception: ", e.what()));
    }
  }
  const grpc::Status result = ToGrpcStatus(status);
  const absl::Duration latency = absl::Now() - start;

  metrics_->RecordRequest(call.method, call.transport, result.error_code(), latency);
  if (result.ok() && outcome.peak_bytes > 0) metrics_->RecordEstimatedPeak(outcome.peak_bytes);
  // Only a Check has a verdict.
  if (result.ok() && outcome.verdict != v1::VERDICT_UNSPECIFIED) {
    metrics_->RecordVerdict(outcome.verdict);
  }
  if (config_.log_requests) {
    RequestRecord record;
    record.method = call.method;
    record.status = &result;
    record.latency = latency;
    record.peak_bytes = outcome.peak_bytes;
    record.peer = call.peer;
    if (outcome.verdict != v1::VERDICT_UNSPECIFIED) {
      record.verdict = absl::StripPrefix(v1::Verdict_Name(outcome.verdict), "VERDICT_");
    }
    WriteLogLine(FormatRequestLine(record, absl::Now()));
  }
  return result;
}

absl::StatusOr<v1::EstimateResponse> RequestHandlers::Estimate(const v1::EstimateRequest& request,
                                                               absl::Time deadline,
                                                               CallOutcome& outcome) const {
  OOMGUARD_ASSIGN_OR_RETURN(ResolvedJob job, ResolveJobSource(request.job(), "job"));
  EstimateOptions options;
  options.module_tree = request.module_tree();
  options.deadline = Deadline(deadline, &stop_);
  if (request.has_upper_bound_coverage()) {
    OOMGUARD_ASSIGN_OR_RETURN(options.upper_bound_coverage,
                              Coverage(request.upper_bound_coverage(), "upper_bound_coverage"));
  }
  if (job.rl) {
    // An RL job: every phase of its step on the request's GPU; `report` is
    // its actor update.
    OOMGUARD_ASSIGN_OR_RETURN(const v1::GpuSpec gpu,
                              ResolveEstimateGpu(request, config_.catalog, &job.notes));
    RlStepOptions step_options;
    step_options.gpu_memory_bytes = gpu.memory_bytes();
    step_options.gpu_name = gpu.name();
    step_options.upper_bound_coverage = options.upper_bound_coverage;
    step_options.deadline = options.deadline;
    absl::StatusOr<v1::RlStepReport> step = EstimateRlStep(RlJobOnGpu(*job.rl, gpu), step_options);
    if (!step.ok()) return MarkJobNotModelled(step.status());
    AddNotes(job.notes, &*step);
    outcome.peak_bytes = step->peak_device_bytes();
    v1::EstimateResponse response;
    *response.mutable_report() = step->actor_update();
    AddNotes(job.notes, response.mutable_report());
    *response.mutable_rl_step() = *std::move(step);
    return response;
  }
  absl::StatusOr<v1::EstimateReport> estimated = oomguard::Estimate(job.spec, options);
  if (!estimated.ok()) return MarkJobNotModelled(estimated.status());
  v1::EstimateReport report = *std::move(estimated);
  AddNotes(job.notes, &report);
  if (static_cast<int>(report.worst_rank()) < report.ranks_size()) {
    outcome.peak_bytes = report.ranks(report.worst_rank()).peak_device_bytes();
  }
  v1::EstimateResponse response;
  *response.mutable_report() = std::move(report);
  return response;
}

absl::Status RequestHandlers::RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                                       v1::CheckResponse* response,
                                       const v1::JobHandle& handle) const {
  if (config_.store == nullptr) return ComputeCheck(request, deadline, response, nullptr);
  if (absl::Status bad = feedback::ValidateJobHandle(handle); !bad.ok()) {
    return WithBadField(std::move(bad), "handle");
  }
  v1::CheckRecord record;
  OOMGUARD_RETURN_IF_ERROR(ComputeCheck(request, deadline, response, &record));
  response->set_check_id(StoreCheck(std::move(record), handle));
  return absl::OkStatus();
}

std::string RequestHandlers::StoreCheck(v1::CheckRecord record, const v1::JobHandle& handle) const {
  std::string id = NewCheckId();
  record.set_check_id(id);
  *record.mutable_checked_at() = TimestampOf(absl::Now());
  *record.mutable_handle() = handle;
  if (absl::Status stored = config_.store->PutCheck(record); !stored.ok()) {
    WriteLogLine(FormatEventLine("check not stored, answered without a check id",
                                 {{"error", stored.ToString()}}, absl::Now()));
    return "";
  }
  return id;
}

absl::Status RequestHandlers::ComputeCheck(const v1::CheckRequest& request, absl::Time deadline,
                                           v1::CheckResponse* response,
                                           v1::CheckRecord* record) const {
  OOMGUARD_ASSIGN_OR_RETURN(ResolvedJob job, ResolveJobSource(request.job(), "job"));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::GpuSpec gpu, ResolveGpu(request, config_.catalog));
  if (const double margin = request.policy().safety_margin();
      request.policy().has_safety_margin() && !(margin >= 0 && margin < 1)) {
    return WithBadField(
        absl::InvalidArgumentError(absl::StrCat("safety_margin = ", margin, ": must be in [0, 1)")),
        "policy.safety_margin");
  }
  const v1::Policy& policy = request.policy();
  AdmissionOptions options;
  options.safety_margin =
      policy.has_safety_margin() ? policy.safety_margin() : config_.default_safety_margin;
  options.deadline = Deadline(deadline, &stop_);
  // A record holds the estimate of each stage: its report's (a Megatron
  // job's; an RL step's phases are in its answer either way).
  const bool keep_report = record != nullptr && !job.rl;
  options.with_report = !request.omit_report() || keep_report;
  options.judge_unmodelled =
      policy.has_judge_unmodelled() ? policy.judge_unmodelled() : config_.default_judge_unmodelled;
  OOMGUARD_ASSIGN_OR_RETURN(
      options.compare_upper_bound,
      ComparesUpperBound(policy.peak_bound(), config_.default_peak_bound, "policy.peak_bound"));
  if (policy.has_upper_bound_coverage()) {
    OOMGUARD_ASSIGN_OR_RETURN(
        options.upper_bound_coverage,
        Coverage(policy.upper_bound_coverage(), "policy.upper_bound_coverage"));
  }
  std::string key;
  if (check_results_.enabled()) {
    key = job.rl ? CheckResultKey(*job.rl, gpu, options) : CheckResultKey(job.spec, gpu, options);
    if (std::optional<CheckResult> found = check_results_.Find(key)) {
      *response = **found;
      FinishCheck(job, request, config_, record, response);
      return absl::OkStatus();
    }
  }
  absl::StatusOr<v1::CheckResponse> core =
      job.rl ? CheckRlJob(*job.rl, gpu, options) : CheckJob(job.spec, gpu, options);
  if (!core.ok()) return MarkJobNotModelled(core.status());
  v1::CheckResponse checked = *std::move(core);
  // The configurations that fit (for a job that does not) or a clearly
  // faster one (for a job that fits). The plan costs milliseconds against
  // the check's microseconds, once per model and shape: plan_cache_ keeps it
  // for the checks of the same shape in other layouts. The planner plans
  // Megatron-Core training jobs, not RL steps.
  if (!job.rl) {
    OOMGUARD_RETURN_IF_ERROR(
        AddAlternatives(job.spec, gpu, options.deadline, &plan_cache_, &checked));
  }
  if (check_results_.enabled()) {
    check_results_.Insert(key, std::make_shared<const v1::CheckResponse>(checked));
  }
  *response = std::move(checked);
  FinishCheck(job, request, config_, record, response);
  return absl::OkStatus();
}

absl::StatusOr<ResponseCache::Entry> RequestHandlers::Check(const std::string& request_bytes,
                                                            absl::Time deadline,
                                                            CallOutcome& outcome) {
  std::optional<ResponseCache::Entry> cached = check_cache_.Find(request_bytes);
  if (!cached) {
    v1::CheckRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    v1::CheckResponse checked;
    std::shared_ptr<v1::CheckRecord> record;
    if (config_.store != nullptr) record = std::make_shared<v1::CheckRecord>();
    OOMGUARD_RETURN_IF_ERROR(ComputeCheck(parsed, deadline, &checked, record.get()));
    cached = ResponseCache::Entry{grpc::Slice(checked.SerializeAsString()), checked.verdict(),
                                  checked.peak_device_bytes(), std::move(record)};
    check_cache_.Insert(request_bytes, *cached);
  }
  outcome.verdict = cached->verdict;
  outcome.peak_bytes = cached->peak_bytes;
  if (cached->record == nullptr) return *std::move(cached);
  // This call's check id: a message's encoding followed by a field's is the
  // message with that field set, so the stored bytes are not parsed again.
  v1::CheckResponse id;
  id.set_check_id(StoreCheck(*cached->record, {}));
  std::string stamped(reinterpret_cast<const char*>(cached->response.begin()),
                      cached->response.size());
  id.AppendToString(&stamped);
  cached->response = grpc::Slice(std::move(stamped));
  return *std::move(cached);
}

absl::StatusOr<std::string> RequestHandlers::AuthenticateReporter(
    const CallerCredentials& credentials) const {
  return service::AuthenticateReporter(config_.report_auth, credentials);
}

absl::StatusOr<v1::ReportResponse> RequestHandlers::Report(const v1::ReportRequest& request,
                                                           absl::string_view reporter,
                                                           absl::Time deadline) {
  if (config_.store == nullptr) return NoStore("Report");
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateReport(request));
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError("Report: the deadline passed before the report was stored");
  }
  v1::StoredReport stored;
  *stored.mutable_received_at() = TimestampOf(absl::Now());
  stored.set_source(request.source());
  stored.set_reporter(std::string(reporter));
  *stored.mutable_ranks() = request.ranks();
  stored.set_outcome(request.outcome());
  stored.set_oom_phase(request.oom_phase());
  stored.set_detail(request.detail());
  OOMGUARD_RETURN_IF_ERROR(config_.store->AddReport(request.check_id(), stored, request.handle()));
  v1::ReportResponse response;
  response.set_check_id(request.check_id());
  response.set_ranks_stored(static_cast<uint32_t>(request.ranks_size()));
  return response;
}

absl::StatusOr<v1::CheckRecord> RequestHandlers::GetCheck(const v1::GetCheckRequest& request,
                                                          absl::Time) const {
  if (config_.store == nullptr) return NoStore("GetCheck");
  if (absl::Status bad = feedback::ValidateCheckId(request.check_id()); !bad.ok()) {
    return WithBadField(std::move(bad), "check_id");
  }
  return config_.store->GetCheck(request.check_id());
}

absl::Status RequestHandlers::RunPlan(const v1::PlanRequest& request, absl::Time deadline,
                                      PlanResult* result) const {
  OOMGUARD_ASSIGN_OR_RETURN(ResolvedJob job, ResolveJobSource(request.job(), "job"));
  if (job.rl) {
    return WithBadField(
        absl::InvalidArgumentError("job: an RL job is estimated (Estimate) or checked (Check); "
                                   "the planner plans Megatron-Core training jobs"),
        "job");
  }
  PlanCluster cluster;
  absl::StatusOr<v1::GpuSpec> gpu = config_.catalog.Find(request.gpu_name());
  if (!gpu.ok())
    return WithBadField(absl::InvalidArgumentError(gpu.status().message()), "gpu_name");
  cluster.gpu = *std::move(gpu);
  absl::StatusOr<GpuPerformance> speed = FindGpuPerformance(cluster.gpu.name());
  if (!speed.ok()) {
    return WithBadField(absl::InvalidArgumentError(speed.status().message()), "gpu_name");
  }
  cluster.speed = *speed;
  cluster.gpus_per_node = NvlinkDomain(cluster.speed, request.job().gpus_per_node());
  PlanOptions options;
  const v1::PlanConstraints& c = request.constraints();
  if (c.has_memory_margin()) options.memory_margin = c.memory_margin();
  if (request.limit() > 0) options.limit = request.limit();
  options.allow_recompute = !c.no_recompute();
  options.allow_offload = !c.no_offload();
  // Unset: allowed (plan.proto's three states).
  options.allow_cross_node_expert_parallel =
      !c.has_allow_cross_node_expert_parallel() || c.allow_cross_node_expert_parallel();
  options.allow_expert_parallel_overlap = !c.no_expert_parallel_overlap();
  options.deadline = Deadline(deadline, &stop_);
  OOMGUARD_ASSIGN_OR_RETURN(
      options.compare_upper_bound,
      ComparesUpperBound(c.peak_bound(), v1::PEAK_BOUND_UPPER, "constraints.peak_bound"));
  if (c.has_upper_bound_coverage()) {
    OOMGUARD_ASSIGN_OR_RETURN(
        options.upper_bound_coverage,
        Coverage(c.upper_bound_coverage(), "constraints.upper_bound_coverage"));
  }
  if (absl::Status bad = ValidateMemoryMargin(options.memory_margin, "constraints.memory_margin");
      !bad.ok()) {
    return WithBadField(std::move(bad), "constraints.memory_margin");
  }
  if (absl::Status bad = ValidatePlanLimit(options.limit, "limit"); !bad.ok()) {
    return WithBadField(std::move(bad), "limit");
  }
  // PlanConstraints' SizeRange fields, by the names the planner lists.
  const google::protobuf::Reflection& reflection = *c.GetReflection();
  for (const SizeRangeName& n : kSizeRangeNames) {
    const google::protobuf::FieldDescriptor* fd = c.GetDescriptor()->FindFieldByName(n.field);
    const auto& given = static_cast<const v1::SizeRange&>(reflection.GetMessage(c, fd));
    SizeRange& range = options.sizes.*n.range;
    if (given.has_min()) range.min = given.min();
    if (given.has_max()) range.max = given.max();
    const std::string field = absl::StrCat("constraints.", n.field);
    if (absl::Status bad = ValidateSizeRange(range, field); !bad.ok()) {
      return WithBadField(std::move(bad), field);
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(PlanResult plan, oomguard::Plan(job.spec, cluster, options));
  for (std::string& note : job.notes) plan.summary.add_notes(std::move(note));
  *result = std::move(plan);
  return absl::OkStatus();
}

v1::ListPresetsResponse RequestHandlers::ListPresets() const {
  v1::ListPresetsResponse presets;
  for (const PresetInfo& info : oomguard::ListPresets()) {
    v1::Preset* preset = presets.add_presets();
    preset->set_name(info.name);
    preset->set_description(info.description);
  }
  return presets;
}

}  // namespace oomguard::service
