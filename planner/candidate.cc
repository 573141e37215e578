// A planned configuration described (see candidate.h).
#include "planner/candidate.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "estimator/job_defaults.h"
#include "estimator/recompute_rules.h"
#include "jobspec/megatron_args_writer.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/shell_words.h"

namespace oomguard {
std::string RecomputeText(const ValidatedJob& j) {
  const RecomputeSettings& r = j.recompute;
  if (r.granularity == v1::RECOMPUTE_GRANULARITY_FULL) {
    return absl::StrCat("full ", r.method == v1::RECOMPUTE_METHOD_UNIFORM ? "uniform " : "block ",
                        r.num_layers);
  }
  if (r.granularity == v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    std::vector<std::string> names;
    for (int m = v1::RecomputeModule_MIN; m <= v1::RecomputeModule_MAX; ++m) {
      const auto module = static_cast<v1::RecomputeModule>(m);
      if (r.HasModule(module)) names.emplace_back(RecomputeModuleWord(module));
    }
    return absl::StrCat("selective ", absl::StrJoin(names, ","));
  }
  return "none";
}

std::string CandidateArgs(const ValidatedJob& j, const v1::JobSpec& job) {
  // The job as the arguments state it: the selective modules named (the
  // default ones where it names none) in the enum's order, and the offload
  // fraction Megatron-LM would take.
  v1::JobSpec run = job;
  v1::RecomputeSpec* r = run.mutable_recompute();
  std::vector<v1::RecomputeModule> modules = SelectiveRecomputeModules(*r);
  std::sort(modules.begin(), modules.end());
  r->clear_modules();
  for (const v1::RecomputeModule m : modules) r->add_modules(m);
  v1::PrecisionSpec* precision = run.mutable_precision();
  precision->set_optimizer_offload_fraction(OptimizerOffloadFraction(*precision));
  // The parallel sizes always, as validated: the arguments take the place
  // of the job's own, so a size left out would leave the job's.
  v1::ParallelismSpec* p = run.mutable_parallelism();
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(j.parallelism.tp));
  p->set_pipeline_model_parallel_size(static_cast<uint32_t>(j.parallelism.pp));
  p->set_context_parallel_size(static_cast<uint32_t>(j.parallelism.cp));
  if (j.is_moe_model()) {
    p->set_expert_model_parallel_size(static_cast<uint32_t>(j.parallelism.ep));
    p->set_expert_tensor_parallel_size(static_cast<uint32_t>(j.parallelism.etp));
  }

  // The fields the arguments set, in the order shown; an unset one (of the
  // rest) is left out.
  std::vector<std::string_view> fields = {
      "parallelism.tensor_model_parallel_size",
      "parallelism.pipeline_model_parallel_size",
      job.parallelism().has_num_virtual_stages_per_pipeline_rank()
          ? "parallelism.num_virtual_stages_per_pipeline_rank"
          : "parallelism.num_layers_per_virtual_pipeline_stage",
      // The job's own group size, which the estimate and Megatron-Core's
      // rules for it (interleaved_schedule_rules.h) took.
      "parallelism.microbatch_group_size_per_vp_stage",
      "parallelism.decoder_first_pipeline_num_layers",
      "parallelism.decoder_last_pipeline_num_layers",
      "parallelism.account_for_embedding_in_pipeline_split",
      "parallelism.account_for_loss_in_pipeline_split",
      "parallelism.pipeline_model_parallel_layout",
      "parallelism.context_parallel_size",
  };
  if (j.is_moe_model()) {
    fields.insert(fields.end(), {"parallelism.expert_model_parallel_size",
                                 "parallelism.expert_tensor_parallel_size"});
  }
  fields.insert(fields.end(),
                {"parallelism.sequence_parallel", "parallelism.overlap_moe_expert_parallel_comm",
                 "training.micro_batch_size", "training.global_batch_size", "training.seq_length"});
  const v1::RecomputeGranularity g = j.recompute.granularity;
  if (g == v1::RECOMPUTE_GRANULARITY_FULL) {
    fields.insert(fields.end(),
                  {"recompute.granularity", "recompute.method", "recompute.num_layers"});
  } else if (g == v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
    fields.insert(fields.end(), {"recompute.granularity", "recompute.modules"});
  }
  fields.push_back("precision.use_distributed_optimizer");
  if (j.fsdp.on()) {
    // The base job's FSDP settings, and the strategy the search picked
    // (written where set; FSDP2's reshard switch only where it is off, the
    // value its flag writes).
    fields.insert(fields.end(),
                  {"parallelism.fsdp_implementation", "parallelism.data_parallel_sharding_strategy",
                   "parallelism.outer_dp_sharding_strategy", "parallelism.fsdp_double_buffer",
                   "parallelism.megatron_fsdp_max_pool_double_buffer",
                   "parallelism.megatron_fsdp_main_params_dtype",
                   "parallelism.megatron_fsdp_main_grads_dtype",
                   "parallelism.suggested_communication_unit_size"});
    if (!j.fsdp.reshard_after_forward) {
      fields.push_back("parallelism.torch_fsdp2_reshard_after_forward");
    }
  }
  if (j.precision.offload_fraction > 0) {
    fields.insert(fields.end(),
                  {"precision.optimizer_cpu_offload", "precision.optimizer_offload_fraction",
                   "precision.use_precision_aware_optimizer"});
  }
  std::vector<std::string> words = WriteJobFields(run, fields);
  // The step-time model assumes the data-parallel overlap (step_time.cc);
  // neither flag changes memory, so neither is a JobSpec field.
  words.insert(words.end(), {"--overlap-grad-reduce", "--overlap-param-gather"});
  return JoinShellWords(words);
}

v1::PlanCandidate DescribeCandidate(const v1::JobSpec& job, const ValidatedJob& j,
                                    const StepTime& t, const PeakEstimate& peaks,
                                    uint64_t usable_bytes, bool compare_upper_bound) {
  const Parallelism& par = j.parallelism;
  v1::PlanCandidate c;
  c.set_tp(static_cast<uint32_t>(par.tp));
  c.set_pp(static_cast<uint32_t>(par.pp));
  c.set_vpp(static_cast<uint32_t>(par.vpp));
  c.set_cp(static_cast<uint32_t>(par.cp));
  c.set_ep(static_cast<uint32_t>(par.ep));
  c.set_etp(static_cast<uint32_t>(par.etp));
  c.set_dp(static_cast<uint32_t>(par.dp));
  c.set_micro_batch_size(static_cast<uint32_t>(j.training.micro_batch));
  c.set_num_microbatches(static_cast<uint32_t>(j.training.num_microbatches));
  c.set_decoder_first_pipeline_num_layers(job.parallelism().decoder_first_pipeline_num_layers());
  c.set_decoder_last_pipeline_num_layers(job.parallelism().decoder_last_pipeline_num_layers());
  c.set_sequence_parallel(par.sp);
  c.set_distributed_optimizer(j.precision.distributed_optimizer);
  c.set_optimizer_cpu_offload(j.precision.offload_fraction > 0);
  c.set_recompute(RecomputeText(j));
  c.set_expert_parallel_overlap(par.overlap_moe_ep);
  const int64_t worst = peaks.WorstRank(compare_upper_bound);
  c.set_peak_device_bytes(peaks.ranks[worst].peak_device_bytes);
  c.set_peak_device_upper_bytes(peaks.ranks[worst].peak_device_upper_bytes);
  c.set_worst_pp_rank(static_cast<uint32_t>(worst));
  c.set_headroom_bytes(static_cast<int64_t>(usable_bytes) -
                       static_cast<int64_t>(peaks.WorstPeak(compare_upper_bound)));
  for (const RankPeak& r : peaks.ranks) c.add_rank_peak_device_bytes(r.peak_device_bytes);
  c.set_step_time_seconds(t.seconds);
  c.set_tokens_per_gpu_per_second(t.tokens_per_gpu_per_second);
  c.set_mfu(t.mfu);
  v1::StepTimeBreakdown* b = c.mutable_breakdown();
  b->set_compute_seconds(t.compute);
  b->set_recompute_seconds(t.recompute);
  b->set_tensor_parallel_seconds(t.tensor_parallel);
  b->set_context_parallel_seconds(t.context_parallel);
  b->set_expert_parallel_seconds(t.expert_parallel);
  b->set_pipeline_bubble_seconds(t.pipeline_bubble);
  b->set_data_parallel_seconds(t.data_parallel);
  b->set_offload_seconds(t.offload);
  c.set_megatron_args(CandidateArgs(j, job));
  return c;
}

void SetReasons(double best_tokens_per_gpu_per_second, v1::PlanCandidate* c) {
  c->clear_reasons();
  const double ratio = c->tokens_per_gpu_per_second() / best_tokens_per_gpu_per_second;
  if (ratio >= 0.9995) {
    c->add_reasons(absl::StrFormat("fastest predicted: %.0f tokens/GPU/s, MFU %.0f%%",
                                   c->tokens_per_gpu_per_second(), 100 * c->mfu()));
  } else {
    c->add_reasons(absl::StrFormat("%.1f%% slower than the best (%.0f tokens/GPU/s, MFU %.0f%%)",
                                   100 * (1 - ratio), c->tokens_per_gpu_per_second(),
                                   100 * c->mfu()));
  }
  // The two largest costs beyond the model's own compute.
  const v1::StepTimeBreakdown& b = c->breakdown();
  const double step = c->step_time_seconds();
  std::vector<std::pair<double, std::string>> costs = {
      {b.recompute_seconds(), absl::StrCat("recompute (", c->recompute(), ")")},
      {b.tensor_parallel_seconds(), absl::StrCat("TP/SP communication (TP ", c->tp(), ")")},
      {b.context_parallel_seconds(), absl::StrCat("CP key/value exchange (CP ", c->cp(), ")")},
      {b.expert_parallel_seconds(),
       absl::StrCat("EP all-to-all (EP ", c->ep(),
                    c->expert_parallel_overlap() ? ", overlapped" : "", ")")},
      {b.pipeline_bubble_seconds(),
       absl::StrCat("pipeline bubble (PP ", c->pp(), ", VPP ", c->vpp(), ", ",
                    c->num_microbatches(), " micro-batches)")},
      {b.data_parallel_seconds(), absl::StrCat("data-parallel sync (DP ", c->dp(), ")")},
      {b.offload_seconds(), "optimizer CPU offload"},
  };
  std::sort(costs.begin(), costs.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; i < 2 && costs[i].first > 0.005 * step; ++i) {
    c->add_reasons(absl::StrFormat("%s takes %.0f%% of the step", costs[i].second,
                                   100 * costs[i].first / step));
  }
  if (c->reasons_size() < 3) {
    c->add_reasons(absl::StrFormat("peak %.1f GiB on PP rank %u, %.1f GiB headroom",
                                   static_cast<double>(c->peak_device_bytes()) / (1 << 30),
                                   c->worst_pp_rank(),
                                   static_cast<double>(c->headroom_bytes()) / (1 << 30)));
  }
}

}  // namespace oomguard
