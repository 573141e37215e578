// The planner's search space (see planner.h): the parallel layouts of a job
// on a cluster, and the memory/speed settings tried on each, as changes to a
// JobSpec. What the user fixed in the base job stays as given.
#ifndef OOMGUARD_PLANNER_SEARCH_SPACE_H_
#define OOMGUARD_PLANNER_SEARCH_SPACE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "estimator/job_defaults.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// How the decoder layers are split over the pipeline stages.
enum class PipelineSplit {
  kAsGiven,                  // The base job's own split (the user fixed it), or PP = 1.
  kEven,                     // Megatron's default.
  kAccountEmbeddingAndLoss,  // --account-for-{embedding,loss}-in-pipeline-split.
  kUnevenFirstLast,          // --decoder-first/last-pipeline-num-layers.
  // --pipeline-model-parallel-layout: the embedding, each MTP layer and the
  // loss counted as a layer, every virtual stage the same count (models with
  // MTP, which the flags above cannot place: DeepSeek-V3's "Et|(tt|)*30mL").
  kMtpLayout,
};

struct Layout {
  int64_t tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1;
  PipelineSplit split = PipelineSplit::kAsGiven;
  int64_t first_layers = 0, last_layers = 0;  // kUnevenFirstLast.
  std::string pattern;                        // kMtpLayout.
  int64_t layers_per_chunk = 0;  // Of a middle stage's chunk (sizes full-block recompute).
};

// One memory/speed setting tried on a layout.
struct Setting {
  bool keep_recompute = false;  // The base job's recompute, as given.
  v1::RecomputeGranularity granularity = v1::RECOMPUTE_GRANULARITY_NONE;
  v1::RecomputeMethod method = v1::RECOMPUTE_METHOD_UNSPECIFIED;
  bool half_of_chunk = false;  // Full block: half the layers of a chunk.
  std::vector<v1::RecomputeModule> modules;
  bool optimizer_offload = false;
  // Megatron-FSDP's --data-parallel-sharding-strategy, searched when the base
  // job runs Megatron-FSDP without one; UNSPECIFIED keeps the base's.
  v1::ShardingStrategy sharding = v1::SHARDING_STRATEGY_UNSPECIFIED;
};

// An inclusive range of one size the search tries (PlanConstraints'
// SizeRange); the default is open.
struct SizeRange {
  int64_t min = 1;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool Contains(int64_t v) const { return v >= min && v <= max; }
  bool Bounded() const { return min > 1 || max < std::numeric_limits<int64_t>::max(); }
};

// The ranges of the sizes the search tries: TP, PP, virtual pipeline stages
// per PP rank (1: no interleaving), CP, EP, ETP and the micro-batch size.
struct SizeRanges {
  SizeRange tp, pp, vpp, cp, ep, etp, micro_batch;
};

// Each size SizeRanges bounds: its PlanConstraints field (a SizeRange), its
// NAME in `oomguard plan --bound NAME=MIN:MAX`, and its label in the plan's
// summary. The service, the command line, the plan cache and the planner's
// checks all go through this one list.
struct SizeRangeName {
  const char* field;
  const char* flag_name;
  const char* label;
  SizeRange SizeRanges::*range;
};
inline constexpr SizeRangeName kSizeRangeNames[] = {
    {"tensor_model_parallel_size", "tp", "TP", &SizeRanges::tp},
    {"pipeline_model_parallel_size", "pp", "PP", &SizeRanges::pp},
    {"virtual_pipeline_stages", "vpp", "VPP", &SizeRanges::vpp},
    {"context_parallel_size", "cp", "CP", &SizeRanges::cp},
    {"expert_model_parallel_size", "ep", "EP", &SizeRanges::ep},
    {"expert_tensor_parallel_size", "etp", "ETP", &SizeRanges::etp},
    {"micro_batch_size", "mbs", "micro-batch", &SizeRanges::micro_batch},
};

struct SearchBounds {
  int64_t gpus_per_node = kDefaultGpusPerNode;  // The NVLink domain TP and EP stay in.
  SizeRanges sizes;
  bool allow_recompute = true;
  bool allow_offload = true;
  bool cross_node_expert_parallel = false;  // EP x ETP may exceed the node.
};

// The layouts of `base` (its parallelism.num_gpus GPUs).
std::vector<Layout> EnumerateLayouts(const v1::JobSpec& base, const SearchBounds& bounds);

// Micro-batch sizes to try, ascending, within `range`.
std::vector<int64_t> MicroBatchSizes(const v1::JobSpec& base, const SizeRange& range);

// Settings to try on every layout, the most memory-saving last.
std::vector<Setting> EnumerateSettings(const v1::JobSpec& base, const SearchBounds& bounds);

// `base` with `layout`, `micro_batch` and `setting` applied (sequence
// parallel with TP > 1, the distributed optimizer).
void ApplyCandidate(const v1::JobSpec& base, const Layout& layout, int64_t micro_batch,
                    const Setting& setting, v1::JobSpec* job);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_SEARCH_SPACE_H_
