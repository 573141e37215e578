// A check's record (see check_record.h).
#include "service/check_record.h"

#include <algorithm>
#include <map>
#include <string>

namespace oomguard::service {
namespace {

// The trainer's layout: global rank r is on stage r /
// gpus_per_pipeline_stage (Megatron-LM's default order tp-cp-ep-dp-pp).
void SetLayout(uint32_t num_gpus, uint32_t pipeline_parallel, v1::CheckRecord& record) {
  record.set_num_gpus(num_gpus);
  if (pipeline_parallel > 0) record.set_gpus_per_pipeline_stage(num_gpus / pipeline_parallel);
}

}  // namespace

v1::CheckRecord CheckRecordOf(const ResolvedJob& job, const v1::CheckResponse& response,
                              absl::string_view version, absl::string_view cluster) {
  v1::CheckRecord record;
  record.set_oomguard_version(std::string(version));
  record.set_cluster(std::string(cluster));
  record.set_gpu_name(response.gpu_name());
  record.set_usable_bytes(response.usable_bytes());
  record.set_verdict(response.verdict());
  if (!job.rl) {
    *record.mutable_job_spec() = job.spec;
    const v1::EstimateReport& report = response.report();
    SetLayout(report.num_gpus(), report.pipeline_parallel(), record);
    for (const v1::RankReport& rank : report.ranks()) {
      v1::RankEstimate* stage = record.add_estimate();
      stage->set_pp_rank(rank.pp_rank());
      stage->set_peak_allocated_bytes(rank.peak_allocated_bytes());
      stage->set_peak_allocated_upper_bytes(rank.peak_allocated_upper_bytes());
      stage->set_peak_device_bytes(rank.peak_device_bytes());
      stage->set_peak_device_upper_bytes(rank.peak_device_upper_bytes());
    }
    return record;
  }
  // An RL step: the layout is its actor's (validated: PP unset is 1); the
  // allocator's peaks are the actor update's (in the answer with its
  // report), the device's each stage's largest phase.
  *record.mutable_rl_job_spec() = *job.rl;
  const v1::ParallelismSpec& actor = job.rl->actor().parallelism();
  SetLayout(actor.num_gpus(),
            actor.has_pipeline_model_parallel_size() ? actor.pipeline_model_parallel_size() : 1,
            record);
  const v1::RlStepReport& step = response.rl_step();
  std::map<uint32_t, v1::RankEstimate> stages;
  for (const v1::RankReport& rank : step.actor_update().ranks()) {
    v1::RankEstimate& stage = stages[rank.pp_rank()];
    stage.set_peak_allocated_bytes(rank.peak_allocated_bytes());
    stage.set_peak_allocated_upper_bytes(rank.peak_allocated_upper_bytes());
  }
  for (const v1::RlPhaseReport& phase : step.phases()) {
    for (const v1::RlPhaseRank& rank : phase.ranks()) {
      v1::RankEstimate& stage = stages[rank.pp_rank()];
      stage.set_peak_device_bytes(std::max(stage.peak_device_bytes(), rank.peak_device_bytes()));
      stage.set_peak_device_upper_bytes(
          std::max(stage.peak_device_upper_bytes(), rank.peak_device_upper_bytes()));
    }
  }
  for (auto& [pp_rank, stage] : stages) {
    stage.set_pp_rank(pp_rank);
    *record.add_estimate() = std::move(stage);
  }
  return record;
}

}  // namespace oomguard::service
