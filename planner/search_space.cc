// The planner's search space (see search_space.h).
#include "planner/search_space.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "planner/mtp_layouts.h"
#include "planner/planner.h"

namespace oomguard {
namespace {

std::vector<int64_t> PowersOfTwo(int64_t max) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= max; v *= 2) out.push_back(v);
  return out;
}

// `values` without those outside `range`.
std::vector<int64_t> Within(std::vector<int64_t> values, const SizeRange& range) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [&](int64_t v) { return !range.Contains(v); }),
      values.end());
  return values;
}

int64_t DecoderLayers(const v1::JobSpec& base) { return base.model().num_layers(); }

// The pipeline splits of `pp` > 1 stages over `layers` decoder layers, with the
// layers of a middle stage.
std::vector<Layout> Splits(int64_t layers, int64_t pp) {
  std::vector<Layout> out;
  Layout l;
  l.pp = pp;
  if (layers % pp == 0) {
    l.split = PipelineSplit::kEven;
    l.layers_per_chunk = layers / pp;
    out.push_back(l);
  }
  if ((layers + 2) % pp == 0 && (layers + 2) / pp >= 2) {
    l.split = PipelineSplit::kAccountEmbeddingAndLoss;
    l.layers_per_chunk = (layers + 2) / pp;
    out.push_back(l);
  }
  // Uneven: middle stages of ceil(layers / pp), the rest shared by the first
  // and last (the first no larger: it also holds the embedding).
  const int64_t middle = (layers + pp - 1) / pp;
  const int64_t rest = layers - (pp - 2) * middle;
  if (layers % pp != 0 && rest >= 2) {
    l.split = PipelineSplit::kUnevenFirstLast;
    l.first_layers = rest / 2;
    l.last_layers = rest - rest / 2;
    l.layers_per_chunk = middle;
    if (l.last_layers <= middle) out.push_back(l);
  }
  return out;
}

// Appends `l` with each EP x ETP of the search (one copy for a dense model).
void AddExpertLayouts(Layout l, const v1::ParallelismSpec& p, int64_t experts, int64_t world,
                      int64_t node, const SearchBounds& bounds, std::vector<Layout>& out) {
  if (experts == 0) {
    out.push_back(l);
    return;
  }
  const int64_t expert_world = world / l.pp;
  const std::vector<int64_t> ep_values = Within(
      p.has_expert_model_parallel_size() ? std::vector<int64_t>{p.expert_model_parallel_size()}
                                         : PowersOfTwo(std::min(experts, expert_world)),
      bounds.sizes.ep);
  std::vector<int64_t> etp_values = {1};
  if (p.has_expert_tensor_parallel_size()) {
    etp_values = {p.expert_tensor_parallel_size()};
  } else if (l.tp > 1) {
    etp_values.push_back(l.tp);
  }
  etp_values = Within(std::move(etp_values), bounds.sizes.etp);
  for (const int64_t ep : ep_values) {
    for (const int64_t etp : etp_values) {
      if (experts % ep != 0 || expert_world % (ep * etp) != 0) continue;
      if (!bounds.cross_node_expert_parallel && ep * etp > node) continue;
      l.ep = ep;
      l.etp = etp;
      out.push_back(l);
    }
  }
}

// The virtual pipeline sizes of a split of `layers_per_stage` decoder layers
// a stage: 1, and with PP > 1 its divisors up to kMaxVpp.
std::vector<int64_t> VirtualStages(int64_t pp, int64_t layers_per_stage, const SizeRange& range) {
  std::vector<int64_t> vpps = {1};
  if (pp > 1) {
    for (int64_t v = 2; v <= std::min(kMaxVpp, layers_per_stage); ++v) {
      if (layers_per_stage % v == 0) vpps.push_back(v);
    }
  }
  return Within(std::move(vpps), range);
}

// The ways of placing the layers on `pp` stages (PP, VPP, the split or
// layout, the layers of a middle chunk): the job's own when it fixes them,
// else the flag splits with their virtual stages; for a model with MTP
// layers first the layouts of mtp_layouts.h, over the virtual stages the job
// fixes (--num-virtual-stages-per-pipeline-rank, which the layout then
// states) or every VPP up to kMaxVpp.
std::vector<Layout> PipelinePlacements(const v1::JobSpec& base, int64_t pp,
                                       const SizeRanges& sizes) {
  const v1::ParallelismSpec& p = base.parallelism();
  const int64_t layers = DecoderLayers(base);
  const bool split_given =
      p.has_decoder_first_pipeline_num_layers() || p.has_decoder_last_pipeline_num_layers() ||
      !p.pipeline_model_parallel_layout().empty() || p.account_for_embedding_in_pipeline_split() ||
      p.account_for_loss_in_pipeline_split();
  // A layout sets the virtual stages too.
  const bool vpp_by_layers =
      p.has_num_layers_per_virtual_pipeline_stage() || !p.pipeline_model_parallel_layout().empty();
  const bool vpp_given = p.has_num_virtual_stages_per_pipeline_rank() || vpp_by_layers;
  const int64_t mtp = base.model().mtp_num_layers();
  std::vector<Layout> out;
  if (mtp > 0 && !split_given && !vpp_by_layers && pp > 1) {
    std::vector<int64_t> vpps;
    if (p.has_num_virtual_stages_per_pipeline_rank()) {
      vpps = {p.num_virtual_stages_per_pipeline_rank()};
    } else {
      for (int64_t v = 1; v <= kMaxVpp; ++v) vpps.push_back(v);
    }
    for (const int64_t v : Within(std::move(vpps), sizes.vpp)) {
      for (MtpLayout& m : MtpLayouts(layers, mtp, pp, v)) {
        Layout l;
        l.pp = pp;
        l.vpp = v;
        l.split = PipelineSplit::kMtpLayout;
        l.pattern = std::move(m.pattern);
        l.layers_per_chunk = m.middle_layers;
        out.push_back(std::move(l));
      }
    }
  }
  std::vector<Layout> splits;
  if (split_given || pp == 1) {
    Layout l;
    l.pp = pp;
    l.layers_per_chunk = (layers + pp - 1) / pp;
    splits.push_back(l);
  } else {
    splits = Splits(layers, pp);
  }
  for (const Layout& split : splits) {
    // Kept as given (0; the planner checked it against the range).
    const std::vector<int64_t> vpps =
        vpp_given ? std::vector<int64_t>{0} : VirtualStages(pp, split.layers_per_chunk, sizes.vpp);
    for (const int64_t vpp : vpps) {
      Layout l = split;
      l.vpp = vpp;
      if (vpp > 1) l.layers_per_chunk = split.layers_per_chunk / vpp;
      out.push_back(l);
    }
  }
  return out;
}

}  // namespace

std::vector<Layout> EnumerateLayouts(const v1::JobSpec& base, const SearchBounds& bounds) {
  const v1::ParallelismSpec& p = base.parallelism();
  const int64_t world = p.num_gpus();
  const int64_t layers = DecoderLayers(base);
  const int64_t seq = base.training().seq_length();
  const int64_t experts = base.model().num_experts();
  const int64_t node = bounds.gpus_per_node;

  const SizeRanges& sizes = bounds.sizes;
  const std::vector<int64_t> tps = Within(p.has_tensor_model_parallel_size()
                                              ? std::vector<int64_t>{p.tensor_model_parallel_size()}
                                              : PowersOfTwo(node),
                                          sizes.tp);
  std::vector<int64_t> cps;
  if (p.has_context_parallel_size()) {
    cps = {p.context_parallel_size()};
  } else {
    for (int64_t cp = 1; cp == 1 || seq / cp >= kMinCpTokens; cp *= 2) cps.push_back(cp);
  }
  cps = Within(std::move(cps), sizes.cp);
  std::vector<Layout> out;
  for (const int64_t tp : tps) {
    for (const int64_t cp : cps) {
      if (world % (tp * cp) != 0) continue;
      const int64_t rest = world / (tp * cp);
      std::vector<int64_t> pps;
      if (p.has_pipeline_model_parallel_size()) {
        pps = {p.pipeline_model_parallel_size()};
      } else {
        for (int64_t pp = 1; pp <= std::min(rest, layers); ++pp) {
          if (rest % pp == 0) pps.push_back(pp);
        }
      }
      pps = Within(std::move(pps), sizes.pp);
      for (const int64_t pp : pps) {
        // Each dimension below multiplies the layouts: the pipeline
        // placements of PP, then the expert sizes of each.
        for (Layout l : PipelinePlacements(base, pp, sizes)) {
          l.tp = tp;
          l.cp = cp;
          AddExpertLayouts(l, p, experts, world, node, bounds, out);
        }
      }
    }
  }
  return out;
}

std::vector<int64_t> MicroBatchSizes(const v1::JobSpec& base, const SizeRange& range) {
  if (base.training().micro_batch_size() > 0) {
    return Within({base.training().micro_batch_size()}, range);
  }
  return Within({1, 2, 4, 8}, range);
}

std::vector<Setting> EnumerateSettings(const v1::JobSpec& base, const SearchBounds& bounds) {
  std::vector<Setting> recomputes;
  const bool moe = base.model().num_experts() > 0;
  if (!bounds.allow_recompute ||
      base.recompute().granularity() != v1::RECOMPUTE_GRANULARITY_UNSPECIFIED) {
    Setting s;
    s.keep_recompute = true;
    recomputes.push_back(s);
  } else {
    using M = v1::RecomputeModule;
    auto selective = [](std::vector<M> modules) {
      Setting s;
      s.granularity = v1::RECOMPUTE_GRANULARITY_SELECTIVE;
      s.modules = std::move(modules);
      return s;
    };
    recomputes.push_back(Setting());  // None.
    recomputes.push_back(selective({v1::RECOMPUTE_MODULE_CORE_ATTN}));
    if (moe) {
      recomputes.push_back(
          selective({v1::RECOMPUTE_MODULE_MOE_ACT, v1::RECOMPUTE_MODULE_LAYERNORM}));
      recomputes.push_back(selective({v1::RECOMPUTE_MODULE_MOE, v1::RECOMPUTE_MODULE_LAYERNORM}));
    } else {
      recomputes.push_back(selective({v1::RECOMPUTE_MODULE_MLP}));
    }
    if (base.model().attention_type() == v1::ATTENTION_TYPE_MLA) {
      // MLA's up-projections (and the dense layers' MLPs; Megatron-Core's
      // `mlp` leaves MoE layers alone): what Megatron-Bridge's DeepSeek-V3
      // recipes recompute.
      recomputes.push_back(selective({v1::RECOMPUTE_MODULE_MLA_UP_PROJ, v1::RECOMPUTE_MODULE_MLP}));
    }
    Setting block;
    block.granularity = v1::RECOMPUTE_GRANULARITY_FULL;
    block.method = v1::RECOMPUTE_METHOD_BLOCK;
    block.half_of_chunk = true;
    recomputes.push_back(block);
    Setting uniform;
    uniform.granularity = v1::RECOMPUTE_GRANULARITY_FULL;
    uniform.method = v1::RECOMPUTE_METHOD_UNIFORM;
    recomputes.push_back(uniform);
  }
  const v1::ParallelismSpec& par = base.parallelism();
  if (par.fsdp_implementation() == v1::FSDP_IMPLEMENTATION_MEGATRON_FSDP) {
    // Megatron-FSDP shards the optimizer state itself (oomguard does not
    // model the optimizer offload under it). Without a strategy given, each
    // that shards the optimizer state is tried, the most sharded last: the
    // most memory-saving setting is the last one.
    if (par.data_parallel_sharding_strategy() != v1::SHARDING_STRATEGY_UNSPECIFIED) {
      return recomputes;
    }
    std::vector<Setting> out;
    for (const v1::ShardingStrategy sharding :
         {v1::SHARDING_STRATEGY_OPTIM, v1::SHARDING_STRATEGY_OPTIM_GRADS,
          v1::SHARDING_STRATEGY_OPTIM_GRADS_PARAMS}) {
      for (Setting s : recomputes) {
        s.sharding = sharding;
        out.push_back(s);
      }
    }
    return out;
  }
  if (par.fsdp_implementation() == v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) return recomputes;
  std::vector<Setting> out = recomputes;
  if (bounds.allow_offload && !base.precision().optimizer_cpu_offload()) {
    for (Setting s : recomputes) {
      s.optimizer_offload = true;
      out.push_back(s);
    }
  }
  return out;
}

void ApplyCandidate(const v1::JobSpec& base, const Layout& l, int64_t micro_batch, const Setting& s,
                    v1::JobSpec* job) {
  *job = base;
  v1::ParallelismSpec* p = job->mutable_parallelism();
  p->set_tensor_model_parallel_size(static_cast<uint32_t>(l.tp));
  p->set_context_parallel_size(static_cast<uint32_t>(l.cp));
  p->set_pipeline_model_parallel_size(static_cast<uint32_t>(l.pp));
  p->set_expert_model_parallel_size(static_cast<uint32_t>(l.ep));
  p->set_expert_tensor_parallel_size(static_cast<uint32_t>(l.etp));
  p->set_sequence_parallel(l.tp > 1);
  if (l.vpp > 1) p->set_num_virtual_stages_per_pipeline_rank(static_cast<uint32_t>(l.vpp));
  switch (l.split) {
    case PipelineSplit::kAsGiven:
    case PipelineSplit::kEven:
      break;
    case PipelineSplit::kAccountEmbeddingAndLoss:
      p->set_account_for_embedding_in_pipeline_split(true);
      p->set_account_for_loss_in_pipeline_split(true);
      break;
    case PipelineSplit::kUnevenFirstLast:
      p->set_decoder_first_pipeline_num_layers(static_cast<uint32_t>(l.first_layers));
      p->set_decoder_last_pipeline_num_layers(static_cast<uint32_t>(l.last_layers));
      break;
    case PipelineSplit::kMtpLayout:
      // The layout sets the virtual stages; Megatron-LM takes no VPP with it.
      p->clear_num_virtual_stages_per_pipeline_rank();
      p->set_pipeline_model_parallel_layout(l.pattern);
      break;
  }
  job->mutable_training()->set_micro_batch_size(static_cast<uint32_t>(micro_batch));
  if (s.sharding != v1::SHARDING_STRATEGY_UNSPECIFIED) {
    p->set_data_parallel_sharding_strategy(s.sharding);
  }
  v1::PrecisionSpec* precision = job->mutable_precision();
  // Torch FSDP2 shards the optimizer state itself; Megatron-LM refuses the
  // distributed optimizer with it.
  if (p->fsdp_implementation() != v1::FSDP_IMPLEMENTATION_TORCH_FSDP2) {
    precision->set_use_distributed_optimizer(true);
  }
  if (s.optimizer_offload) {
    // Megatron-LM runs the hybrid-device optimizer through the
    // precision-aware optimizer (validate_args refuses it without).
    precision->set_optimizer_cpu_offload(true);
    precision->set_optimizer_offload_fraction(1.0);
    precision->set_use_precision_aware_optimizer(true);
  }
  if (!s.keep_recompute) {
    v1::RecomputeSpec* r = job->mutable_recompute();
    r->set_granularity(s.granularity);
    r->set_method(s.method);
    r->clear_modules();
    for (const v1::RecomputeModule m : s.modules) r->add_modules(m);
    if (s.granularity == v1::RECOMPUTE_GRANULARITY_FULL) {
      r->set_num_layers(s.half_of_chunk
                            ? static_cast<uint32_t>(std::max<int64_t>(1, l.layers_per_chunk / 2))
                            : 1);
    } else {
      r->clear_num_layers();
    }
  }
}

}  // namespace oomguard
