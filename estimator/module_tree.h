// The module tree of a PP rank (EstimateReport.rank_trees): a node per
// module, with its parameters and the activation bytes it keeps. Runs of
// identical decoder layers are one node with `repeat`, and so is a pattern of
// layers that repeats (e.g. dense, MoE, dense, MoE, ...), so a tree's size
// follows the kinds of layer a model has, not how many.
#ifndef OOMGUARD_ESTIMATOR_MODULE_TREE_H_
#define OOMGUARD_ESTIMATOR_MODULE_TREE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

// The most nodes the module trees of one report hold together (about 8 MB
// as JSON). A job whose layers follow no repeating pattern needs a node per
// module of every layer; past this, asking for its tree is refused.
inline constexpr int64_t kMaxModuleTreeNodes = int64_t{1} << 16;

// Builds PP rank `r`'s tree into `root`, taking its nodes from
// `*nodes_left`. When they run out: InvalidArgument naming `module_tree`
// (and nothing more is built).
absl::Status BuildRankTree(const ValidatedJob& j, int64_t r, int64_t* nodes_left,
                           v1::ModuleNode* root);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_MODULE_TREE_H_
