// The module tree (estimator/module_tree.h): repeating patterns of layers
// folded into one node, totals that match the rank's, and the node bound
// that keeps a tree request from costing seconds and megabytes (issue 12:
// 59,200 alternating layers took 7.8 s and printed 95 MB).
#include "estimator/module_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "estimator/estimator.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::oomguard::testing::JobFromArgs;
using ::oomguard::testing::SmallGptArgs;

absl::StatusOr<v1::EstimateReport> EstimateWithTree(const v1::JobSpec& job) {
  return Estimate(job, EstimateOptions{.module_tree = true});
}

int64_t Nodes(const v1::ModuleNode& n) {
  int64_t count = 1;
  for (const v1::ModuleNode& c : n.children()) count += Nodes(c);
  return count;
}

const v1::ModuleNode& Decoder(const v1::ModuleNode& rank) {
  for (const v1::ModuleNode& c : rank.children()) {
    if (c.name() == "decoder") return c;
  }
  ADD_FAILURE() << "no decoder in " << rank.name();
  return rank;
}

// `num_layers` layers of the small GPT with 8 experts on the layers the
// Python list `pattern` marks 1 (--moe-layer-freq).
v1::JobSpec MoeJob(int num_layers, const std::string& pattern) {
  return JobFromArgs(SmallGptArgs(num_layers, {"--num-experts", "8", "--moe-router-topk", "2",
                                               "--moe-layer-freq", pattern}),
                     1);
}

// Every other layer MoE: one pattern node of 2 layers, repeated, whose two
// children are the first period's layers; the tree's totals are the rank's.
TEST(ModuleTree, AlternatingLayersFoldIntoOnePattern) {
  absl::StatusOr<v1::EstimateReport> rep = EstimateWithTree(MoeJob(64, "2"));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::ModuleNode& decoder = Decoder(rep->rank_trees(0));
  ASSERT_EQ(decoder.children_size(), 3);  // The pattern, final_layernorm, output_layer.
  const v1::ModuleNode& pattern = decoder.children(0);
  EXPECT_EQ(pattern.name(), "(0-63)");
  EXPECT_EQ(pattern.type(), "LayerPattern(2 layers)");
  EXPECT_EQ(pattern.repeat(), 32u);
  ASSERT_EQ(pattern.children_size(), 2);
  EXPECT_EQ(pattern.children(0).name(), "(0-0)");
  EXPECT_EQ(pattern.children(0).type(), "TransformerLayer(MoE)");
  EXPECT_EQ(pattern.children(1).name(), "(1-1)");
  EXPECT_EQ(pattern.children(1).type(), "TransformerLayer");
  EXPECT_EQ(pattern.parameters(),
            pattern.children(0).parameters() + pattern.children(1).parameters());
  EXPECT_EQ(rep->rank_trees(0).parameters(), rep->ranks(0).parameters());
  // The tree's activations are one micro-batch's (PP 1 keeps one in flight).
  EXPECT_EQ(rep->rank_trees(0).activation_bytes(), rep->ranks(0).chunks(0).activation_bytes());
}

// A pattern inside a longer stretch: 3 dense layers, then (MoE, MoE, dense)
// 20 times, then 1 MoE layer: the dense run, the pattern, the last run.
TEST(ModuleTree, PatternBetweenRuns) {
  absl::StatusOr<v1::EstimateReport> rep = EstimateWithTree(MoeJob(64, "[0]*3+[1,1,0]*20+[1]"));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::ModuleNode& decoder = Decoder(rep->rank_trees(0));
  std::vector<std::string> names;  // repeat 0: a module, not a run of layers.
  for (const v1::ModuleNode& c : decoder.children()) {
    names.push_back(absl::StrCat(c.name(), " ", c.repeat(), " x ", c.type()));
  }
  EXPECT_THAT(names, ::testing::ElementsAre(
                         "(0-2) 3 x TransformerLayer", "(3-62) 20 x LayerPattern(3 layers)",
                         "(63-63) 1 x TransformerLayer(MoE)", "final_layernorm 0 x TENorm",
                         "output_layer 0 x ColumnParallelLinear"));
  const v1::ModuleNode& pattern = decoder.children(1);
  ASSERT_EQ(pattern.children_size(), 2);
  EXPECT_EQ(pattern.children(0).name(), "(3-4)");
  EXPECT_EQ(pattern.children(0).repeat(), 2u);
  EXPECT_EQ(rep->rank_trees(0).parameters(), rep->ranks(0).parameters());
}

// Issue 12's reproducer, scaled to the small GPT: 59,200 alternating layers
// are a tree of a few dozen nodes.
TEST(ModuleTree, DepthDoesNotGrowTheTree) {
  absl::StatusOr<v1::EstimateReport> rep = EstimateWithTree(MoeJob(59200, "2"));
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_LT(Nodes(rep->rank_trees(0)), 50);
}

// Layers that follow no short pattern need a node per module of every
// layer; past kMaxModuleTreeNodes the tree is refused (naming module_tree),
// after building at most that many nodes, and the estimate without it is
// still given.
TEST(ModuleTree, TreesPastTheNodeBoundAreRefused) {
  // A de Bruijn-like sequence has no period of up to 16 runs anywhere:
  // layer l is MoE when bit (l mod 13) of l / 13 is set.
  std::string pattern = "[";
  for (int l = 0; l < 20000; ++l) absl::StrAppend(&pattern, l ? "," : "", (l / 13 >> (l % 13)) & 1);
  pattern += "]";
  const v1::JobSpec job = MoeJob(20000, pattern);
  absl::StatusOr<v1::EstimateReport> rep = EstimateWithTree(job);
  EXPECT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rep.status().message(),
            "module_tree: this job's module trees need more than 65536 nodes (reached at PP rank "
            "0 of 1; a node per module of every layer that follows no short repeating pattern); "
            "ask for the estimate without the tree");
  EXPECT_TRUE(Estimate(job).ok());
}

// The bound is on the whole report: 8 pipeline ranks of 2,500 such layers
// each pass it together only if every rank's tree fits in what is left.
TEST(ModuleTree, BoundCoversEveryRank) {
  std::string pattern = "[";
  for (int l = 0; l < 20000; ++l) absl::StrAppend(&pattern, l ? "," : "", (l / 13 >> (l % 13)) & 1);
  pattern += "]";
  v1::JobSpec job = MoeJob(20000, pattern);
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_parallelism()->set_pipeline_model_parallel_size(8);
  absl::StatusOr<v1::EstimateReport> rep = EstimateWithTree(job);
  ASSERT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rep.status().message(), ::testing::HasSubstr("reached at PP rank "));
  EXPECT_THAT(rep.status().message(), ::testing::Not(::testing::HasSubstr("PP rank 0 ")));
}

}  // namespace
}  // namespace oomguard
