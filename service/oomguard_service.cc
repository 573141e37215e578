// The oomguard.v1.Oomguard service (see oomguard_service.h).
#include "service/oomguard_service.h"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "admission/admission.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "jobspec/presets.h"
#include "planner/alternatives.h"
#include "planner/gpu_performance.h"
#include "service/request_log.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "service/wire_message.h"

namespace oomguard::service {
namespace {

absl::Time Deadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

void AddNotes(const std::vector<std::string>& notes, v1::EstimateReport* report) {
  for (const std::string& note : notes) report->add_notes(note);
}

}  // namespace

OomguardService::OomguardService(ServiceConfig config, ServiceMetrics* metrics)
    : config_(std::move(config)), metrics_(metrics), check_cache_(config_.response_cache_bytes) {
  for (const v1::GpuSpec& gpu : config_.catalog.gpus()) *gpus_.add_gpus() = gpu;
}

template <typename Handler>
grpc::Status OomguardService::Handle(Method method, grpc::ServerContext& context,
                                     Handler&& handler) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = Deadline(context);
  Outcome outcome;
  absl::Status status;
  if (deadline <= start) {
    status = absl::DeadlineExceededError("the deadline passed before the call was handled");
  } else {
    // The core does not throw; this guard keeps e.g. std::bad_alloc from
    // taking the server down with every call in flight.
    try {
      status = handler(deadline, outcome);
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("unexpected exception: ", e.what()));
    }
  }
  const grpc::Status result = ToGrpcStatus(status);
  const absl::Duration latency = absl::Now() - start;

  metrics_->RecordRequest(method, result.error_code(), latency);
  if (result.ok() && outcome.peak_bytes > 0) metrics_->RecordEstimatedPeak(outcome.peak_bytes);
  if (result.ok() && method == Method::kCheck) metrics_->RecordVerdict(outcome.verdict);
  if (config_.log_requests) {
    const std::string peer = context.peer();
    RequestRecord record;
    record.method = MethodName(method);
    record.status = &result;
    record.latency = latency;
    record.peak_bytes = outcome.peak_bytes;
    record.peer = peer;
    if (outcome.verdict != v1::VERDICT_UNSPECIFIED) {
      record.verdict = absl::StripPrefix(v1::Verdict_Name(outcome.verdict), "VERDICT_");
    }
    WriteLogLine(FormatRequestLine(record, absl::Now()));
  }
  return result;
}

grpc::Status OomguardService::Estimate(grpc::ServerContext& context,
                                       const grpc::ByteBuffer& request,
                                       grpc::ByteBuffer* response) {
  return Handle(Method::kEstimate, context, [&](absl::Time, Outcome& outcome) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::EstimateRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    absl::StatusOr<ResolvedJob> job = ResolveJobSource(parsed.job(), "job");
    if (!job.ok()) return job.status();
    absl::StatusOr<v1::EstimateReport> report =
        oomguard::Estimate(job->spec, EstimateOptions{.module_tree = parsed.module_tree()});
    if (!report.ok()) return report.status();
    AddNotes(job->notes, &*report);
    if (static_cast<int>(report->worst_rank()) < report->ranks_size()) {
      outcome.peak_bytes = report->ranks(report->worst_rank()).peak_device_bytes();
    }
    v1::EstimateResponse estimated;
    *estimated.mutable_report() = *std::move(report);
    *response = SerializeResponse(estimated);
    return absl::OkStatus();
  });
}

absl::Status OomguardService::RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                                       v1::CheckResponse* response) {
  absl::StatusOr<ResolvedJob> job = ResolveJobSource(request.job(), "job");
  if (!job.ok()) return job.status();
  absl::StatusOr<v1::GpuSpec> gpu = ResolveGpu(request, config_.catalog);
  if (!gpu.ok()) return gpu.status();
  const AdmissionOptions options{.safety_margin = request.policy().has_safety_margin()
                                                      ? request.policy().safety_margin()
                                                      : config_.default_safety_margin,
                                 .deadline = deadline};
  absl::StatusOr<v1::CheckResponse> checked = CheckJob(job->spec, *gpu, options);
  if (!checked.ok()) return checked.status();
  AddAlternatives(job->spec, *gpu, deadline, &*checked);
  AddNotes(job->notes, checked->mutable_report());
  *response = *std::move(checked);
  return absl::OkStatus();
}

grpc::Status OomguardService::Check(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                                    grpc::ByteBuffer* response) {
  return Handle(Method::kCheck, context,
                [&](absl::Time deadline, Outcome& outcome) -> absl::Status {
                  OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
                  std::optional<ResponseCache::Entry> cached = check_cache_.Find(request_bytes);
                  if (!cached) {
                    v1::CheckRequest parsed;
                    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
                    v1::CheckResponse checked;
                    OOMGUARD_RETURN_IF_ERROR(RunCheck(parsed, deadline, &checked));
                    cached = ResponseCache::Entry{grpc::Slice(checked.SerializeAsString()),
                                                  checked.verdict(), checked.peak_device_bytes()};
                    check_cache_.Insert(request_bytes, *cached);
                  }
                  outcome.verdict = cached->verdict;
                  outcome.peak_bytes = cached->peak_bytes;
                  *response = grpc::ByteBuffer(&cached->response, 1);
                  return absl::OkStatus();
                });
}

absl::Status OomguardService::RunPlan(const v1::PlanRequest& request, absl::Time deadline,
                                      PlanResult* result) {
  absl::StatusOr<ResolvedJob> job = ResolveJobSource(request.job(), "job");
  if (!job.ok()) return job.status();
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
  if (request.job().gpus_per_node() > 0) cluster.gpus_per_node = request.job().gpus_per_node();
  PlanOptions options;
  const v1::PlanConstraints& c = request.constraints();
  if (c.has_memory_margin()) options.memory_margin = c.memory_margin();
  if (request.limit() > 0) options.limit = request.limit();
  options.allow_recompute = !c.no_recompute();
  options.allow_offload = !c.no_offload();
  options.allow_cross_node_expert_parallel = c.allow_cross_node_expert_parallel();
  options.deadline = deadline;
  absl::StatusOr<PlanResult> plan = oomguard::Plan(job->spec, cluster, options);
  if (!plan.ok()) {
    const absl::string_view message = plan.status().message();
    if (absl::StartsWith(message, "limit")) return WithBadField(plan.status(), "limit");
    if (absl::StartsWith(message, "constraints.memory_margin")) {
      return WithBadField(plan.status(), "constraints.memory_margin");
    }
    return plan.status();
  }
  for (std::string& note : job->notes) plan->summary.add_notes(std::move(note));
  *result = *std::move(plan);
  return absl::OkStatus();
}

grpc::Status OomguardService::Plan(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                                   std::vector<grpc::ByteBuffer>* responses) {
  return Handle(Method::kPlan, context, [&](absl::Time deadline, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::PlanRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    PlanResult plan;
    OOMGUARD_RETURN_IF_ERROR(RunPlan(parsed, deadline, &plan));
    v1::PlanResponse message;
    for (v1::PlanCandidate& candidate : plan.candidates) {
      *message.mutable_candidate() = std::move(candidate);
      responses->push_back(SerializeResponse(message));
    }
    *message.mutable_summary() = std::move(plan.summary);
    responses->push_back(SerializeResponse(message));
    return absl::OkStatus();
  });
}

grpc::Status OomguardService::ListPresets(grpc::ServerContext& context,
                                          const grpc::ByteBuffer& request,
                                          grpc::ByteBuffer* response) {
  return Handle(Method::kListPresets, context, [&](absl::Time, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::ListPresetsRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    v1::ListPresetsResponse presets;
    for (const PresetInfo& info : oomguard::ListPresets()) {
      v1::Preset* preset = presets.add_presets();
      preset->set_name(info.name);
      preset->set_description(info.description);
    }
    *response = SerializeResponse(presets);
    return absl::OkStatus();
  });
}

grpc::Status OomguardService::ListGpus(grpc::ServerContext& context,
                                       const grpc::ByteBuffer& request,
                                       grpc::ByteBuffer* response) {
  return Handle(Method::kListGpus, context, [&](absl::Time, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::ListGpusRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    *response = SerializeResponse(gpus_);
    return absl::OkStatus();
  });
}

}  // namespace oomguard::service
