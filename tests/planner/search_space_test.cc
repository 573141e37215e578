// The planner's search space (planner/search_space.h): the layouts it
// enumerates for a small cluster, counted and listed by hand; what it leaves
// out and why; the sizes a job fixes; the bounds; the settings tried on each
// layout; and a candidate applied to a job.
#include "planner/search_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "oomguard/v1/plan.pb.h"
#include "planner/planner.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A dense GPT of `layers` layers, seq 4096, on `gpus` GPUs, nothing fixed.
v1::JobSpec DenseBase(uint32_t layers, uint32_t gpus) {
  v1::JobSpec job;
  job.mutable_model()->set_num_layers(layers);
  job.mutable_model()->set_hidden_size(1024);
  job.mutable_model()->set_num_attention_heads(16);
  job.mutable_model()->set_vocab_size(32000);
  job.mutable_parallelism()->set_num_gpus(gpus);
  job.mutable_training()->set_seq_length(4096);
  return job;
}

// A layout as "tp/cp/pp/vpp/ep/etp split layers_per_chunk[ first/last][ pattern]".
std::string Describe(const Layout& l) {
  const char* split = "";
  switch (l.split) {
    case PipelineSplit::kAsGiven:
      split = "given";
      break;
    case PipelineSplit::kEven:
      split = "even";
      break;
    case PipelineSplit::kAccountEmbeddingAndLoss:
      split = "E+L";
      break;
    case PipelineSplit::kUnevenFirstLast:
      split = "uneven";
      break;
    case PipelineSplit::kMtpLayout:
      split = "mtp";
      break;
  }
  std::string out = absl::StrCat(l.tp, "/", l.cp, "/", l.pp, "/", l.vpp, "/", l.ep, "/", l.etp, " ",
                                 split, " ", l.layers_per_chunk);
  if (l.split == PipelineSplit::kUnevenFirstLast) {
    absl::StrAppend(&out, " ", l.first_layers, "/", l.last_layers);
  }
  if (!l.pattern.empty()) absl::StrAppend(&out, " ", l.pattern);
  return out;
}

std::vector<std::string> Describe(const std::vector<Layout>& layouts) {
  std::vector<std::string> out;
  for (const Layout& l : layouts) out.push_back(Describe(l));
  return out;
}

// The layouts with TP `tp` and CP `cp`.
std::vector<std::string> With(const std::vector<Layout>& layouts, int64_t tp, int64_t cp) {
  std::vector<Layout> out;
  for (const Layout& l : layouts) {
    if (l.tp == tp && l.cp == cp) out.push_back(l);
  }
  return Describe(out);
}

// 16 GPUs, 8 per node, 8 layers, seq 4096:
//   TP 1, 2, 4, 8 (powers of two inside the node; 16 would leave it);
//   CP 1, 2 (4 would leave 1024 < kMinCpTokens = 2048 tokens a rank);
//   PP the divisors of 16 / (TP x CP) up to the 8 layers (never 16), each
//   with its splits: PP 2 even (4 a stage: VPP 1, 2, 4) and embedding and
//   loss counted as layers (10 / 2 = 5: VPP 1, 5); PP 4 even (2: VPP 1, 2;
//   10 is not a multiple of 4); PP 8 even (1: VPP 1). 8 layers divide by
//   every PP, so no uneven split.
// Per TP x CP: 1 + 5 + 2 + 1 = 9 layouts for 16 or 8 GPUs left (PP 1, 2,
// 4, 8), 8 for 4 (no PP 8), 6 for 2 (PP 1, 2), 1 for 1:
//   TP1 CP1 (16) 9, TP1 CP2 (8) 9, TP2 CP1 (8) 9, TP2 CP2 (4) 8,
//   TP4 CP1 (4) 8, TP4 CP2 (2) 6, TP8 CP1 (2) 6, TP8 CP2 (1) 1: 56.
TEST(SearchSpace, LayoutsOfADenseModelOnSixteenGpus) {
  const std::vector<Layout> layouts = EnumerateLayouts(DenseBase(8, 16), SearchBounds());
  EXPECT_EQ(layouts.size(), 56u);
  std::set<int64_t> tps, cps, pps;
  for (const Layout& l : layouts) {
    tps.insert(l.tp);
    cps.insert(l.cp);
    pps.insert(l.pp);
    EXPECT_EQ(16 % (l.tp * l.cp * l.pp), 0) << Describe(l);
    EXPECT_EQ(l.ep, 1);  // Dense: no expert sizes.
    EXPECT_EQ(l.etp, 1);
  }
  EXPECT_EQ(tps, (std::set<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(cps, (std::set<int64_t>{1, 2}));
  EXPECT_EQ(pps, (std::set<int64_t>{1, 2, 4, 8}));
  // TP 2 x CP 2 leaves 4 GPUs: PP 1, 2, 4.
  EXPECT_THAT(With(layouts, 2, 2),
              ElementsAre("2/2/1/1/1/1 given 8",  //
                          "2/2/2/1/1/1 even 4", "2/2/2/2/1/1 even 2", "2/2/2/4/1/1 even 1",
                          "2/2/2/1/1/1 E+L 5", "2/2/2/5/1/1 E+L 1",  //
                          "2/2/4/1/1/1 even 2", "2/2/4/2/1/1 even 1"));
  EXPECT_THAT(With(layouts, 8, 2), ElementsAre("8/2/1/1/1/1 given 8"));
  EXPECT_THAT(With(layouts, 8, 1),
              ElementsAre("8/1/1/1/1/1 given 8", "8/1/2/1/1/1 even 4", "8/1/2/2/1/1 even 2",
                          "8/1/2/4/1/1 even 1", "8/1/2/1/1/1 E+L 5", "8/1/2/5/1/1 E+L 1"));
}

// 7 layers on 12 GPUs, TP and CP fixed at 1: PP 1, 2, 3, 4, 6 (12's
// divisors up to 7). 7 divides by none of them, so each PP > 1 takes the
// uneven split: middle stages of ceil(7 / PP) layers, the first and last
// sharing the rest, the first no larger; PP 2 also counts embedding and
// loss (9 is odd: no), PP 3 (9 / 3 = 3 a stage: yes). PP 6: middle 2,
// rest 7 - 4 x 2 = -1: no uneven split; (7 + 2) / 6 no: PP 6 has none.
TEST(SearchSpace, UnevenSplitsWhenTheLayersDoNotDivide) {
  v1::JobSpec job = DenseBase(7, 12);
  job.mutable_parallelism()->set_tensor_model_parallel_size(1);
  job.mutable_parallelism()->set_context_parallel_size(1);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("1/1/1/1/1/1 given 7",
                          // PP 2: middle 4, rest 7: first 3, last 4.
                          "1/1/2/1/1/1 uneven 4 3/4", "1/1/2/2/1/1 uneven 2 3/4",
                          "1/1/2/4/1/1 uneven 1 3/4",
                          // PP 3: 9 / 3 = 3 with embedding and loss; middle 3,
                          // rest 4: first 2, last 2.
                          "1/1/3/1/1/1 E+L 3", "1/1/3/3/1/1 E+L 1", "1/1/3/1/1/1 uneven 3 2/2",
                          "1/1/3/3/1/1 uneven 1 2/2",
                          // PP 4: middle 2, rest 3: first 1, last 2.
                          "1/1/4/1/1/1 uneven 2 1/2", "1/1/4/2/1/1 uneven 1 1/2"));
}

// What the job fixes stays: its TP, PP and CP; a split it gives is taken as
// given (no other splits tried, layers a chunk rounded up); virtual stages
// it gives stay (VPP 0: as given).
TEST(SearchSpace, FixedSizesAreKept) {
  v1::JobSpec job = DenseBase(8, 16);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_tensor_model_parallel_size(2);
  p->set_context_parallel_size(1);
  p->set_pipeline_model_parallel_size(4);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("2/1/4/1/1/1 even 2", "2/1/4/2/1/1 even 1"));

  p->set_account_for_embedding_in_pipeline_split(true);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("2/1/4/1/1/1 given 2", "2/1/4/2/1/1 given 1"));

  p->set_num_virtual_stages_per_pipeline_rank(2);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())), ElementsAre("2/1/4/0/1/1 given 2"));
}

// The bounds narrow every size; a size outside its range leaves nothing.
TEST(SearchSpace, BoundsNarrowTheSizes) {
  SearchBounds bounds;
  bounds.sizes.tp = {.min = 2, .max = 4};
  bounds.sizes.cp = {.min = 1, .max = 1};
  bounds.sizes.pp = {.min = 2, .max = 2};
  bounds.sizes.vpp = {.min = 1, .max = 1};
  EXPECT_THAT(Describe(EnumerateLayouts(DenseBase(8, 16), bounds)),
              ElementsAre("2/1/2/1/1/1 even 4", "2/1/2/1/1/1 E+L 5", "4/1/2/1/1/1 even 4",
                          "4/1/2/1/1/1 E+L 5"));
  // A fixed TP outside the range: no layout.
  v1::JobSpec fixed = DenseBase(8, 16);
  fixed.mutable_parallelism()->set_tensor_model_parallel_size(8);
  EXPECT_THAT(EnumerateLayouts(fixed, bounds), IsEmpty());
  // 4 GPUs per node: TP stops at 4.
  SearchBounds small_node;
  small_node.gpus_per_node = 4;
  std::set<int64_t> tps;
  for (const Layout& l : EnumerateLayouts(DenseBase(8, 16), small_node)) tps.insert(l.tp);
  EXPECT_EQ(tps, (std::set<int64_t>{1, 2, 4}));
}

// MoE, 8 experts on 16 GPUs, TP 2, CP 1, PP 1 fixed: EP the powers of two
// up to min(8 experts, 16 GPUs), ETP 1 or TP; EP x ETP inside the node of
// 8 (EP 8 x ETP 2 = 16 leaves it) unless the bounds allow crossing.
TEST(SearchSpace, ExpertLayouts) {
  v1::JobSpec job = DenseBase(8, 16);
  job.mutable_model()->set_num_experts(8);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_tensor_model_parallel_size(2);
  p->set_context_parallel_size(1);
  p->set_pipeline_model_parallel_size(1);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("2/1/1/1/1/1 given 8", "2/1/1/1/1/2 given 8", "2/1/1/1/2/1 given 8",
                          "2/1/1/1/2/2 given 8", "2/1/1/1/4/1 given 8", "2/1/1/1/4/2 given 8",
                          "2/1/1/1/8/1 given 8"));
  SearchBounds across;
  across.cross_node_expert_parallel = true;
  EXPECT_EQ(EnumerateLayouts(job, across).size(), 8u);
  SearchBounds ep4;
  ep4.sizes.ep = {.min = 4, .max = 4};
  ep4.sizes.etp = {.min = 1, .max = 1};
  EXPECT_THAT(Describe(EnumerateLayouts(job, ep4)), ElementsAre("2/1/1/1/4/1 given 8"));
  p->set_expert_model_parallel_size(2);
  p->set_expert_tensor_parallel_size(1);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())), ElementsAre("2/1/1/1/2/1 given 8"));
}

// A model with MTP layers also gets the layouts of planner/mtp_layouts.h
// for each VPP: 7 layers + E + m + L = 10 over PP 2 is 5 a stage,
// "Etttt|tttmL" (the lighter ends give the same); VPP 2, 4 stages: 10 does
// not divide, the lighter ends 2 a middle stage, 7 - 4 = 3 left, 2 to the
// first and 1 to the last; VPP 4, 8 stages: 1 a middle stage, 1 left to the
// first; VPP 3 and 5 and more: the middle stages alone would need more than
// 7 layers. Then the uneven splits of 7 over 2. (The layouts at VPP 2 and 4
// are new: before, only those that divide evenly.)
TEST(SearchSpace, MtpLayouts) {
  v1::JobSpec job = DenseBase(7, 2);
  job.mutable_model()->set_mtp_num_layers(1);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_tensor_model_parallel_size(1);
  p->set_context_parallel_size(1);
  p->set_pipeline_model_parallel_size(2);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("1/1/2/1/1/1 mtp 5 Etttt|tttmL", "1/1/2/2/1/1 mtp 2 Ett|(tt|)*2tmL",
                          "1/1/2/4/1/1 mtp 1 Et|(t|)*6mL", "1/1/2/1/1/1 uneven 4 3/4",
                          "1/1/2/2/1/1 uneven 2 3/4", "1/1/2/4/1/1 uneven 1 3/4"));
  // The job fixes VPP 2: the layouts of VPP 2 only (the layout then states
  // it), and the uneven split kept at the given VPP.
  p->set_num_virtual_stages_per_pipeline_rank(2);
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())),
              ElementsAre("1/1/2/2/1/1 mtp 2 Ett|(tt|)*2tmL", "1/1/2/0/1/1 uneven 4 3/4"));
  // A layout the job gives is kept: no other.
  p->clear_num_virtual_stages_per_pipeline_rank();
  p->set_pipeline_model_parallel_layout("Etttt|tttmL");
  EXPECT_THAT(Describe(EnumerateLayouts(job, SearchBounds())), ElementsAre("1/1/2/0/1/1 given 4"));
}

// DeepSeek-V3's layouts over PP 8 (planner/mtp_layouts_test.cc derives
// each): VPP 1 and 2 counted and with lighter ends, VPP 4 the one
// "Et|(tt|)*30mL" (both rules give it); VPP 8 gives 1 a stage, too few.
TEST(SearchSpace, DeepSeekV3Layout) {
  v1::JobSpec job = DenseBase(61, 8);
  job.mutable_model()->set_mtp_num_layers(1);
  v1::ParallelismSpec* p = job.mutable_parallelism();
  p->set_tensor_model_parallel_size(1);
  p->set_context_parallel_size(1);
  p->set_pipeline_model_parallel_size(8);
  std::vector<std::string> mtp;
  for (const Layout& l : EnumerateLayouts(job, SearchBounds())) {
    if (l.split == PipelineSplit::kMtpLayout) mtp.push_back(Describe(l));
  }
  EXPECT_THAT(
      mtp, ElementsAre("1/1/8/1/1/1 mtp 8 Ettttttt|(tttttttt|)*6ttttttmL",
                       "1/1/8/1/1/1 mtp 8 Etttttttt|(tttttttt|)*6tttttmL",
                       "1/1/8/2/1/1 mtp 4 Ettt|(tttt|)*14ttmL",
                       "1/1/8/2/1/1 mtp 4 Etttt|(tttt|)*14tmL", "1/1/8/4/1/1 mtp 2 Et|(tt|)*30mL"));
}

TEST(SearchSpace, MicroBatchSizes) {
  v1::JobSpec job = DenseBase(8, 16);
  EXPECT_THAT(MicroBatchSizes(job, SizeRange()), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(MicroBatchSizes(job, {.min = 2, .max = 4}), ElementsAre(2, 4));
  job.mutable_training()->set_micro_batch_size(4);
  EXPECT_THAT(MicroBatchSizes(job, SizeRange()), ElementsAre(4));
  EXPECT_THAT(MicroBatchSizes(job, {.min = 1, .max = 2}), IsEmpty());
}

// A setting as "granularity method modules[ half][ offload]".
std::vector<std::string> Describe(const std::vector<Setting>& settings) {
  std::vector<std::string> out;
  for (const Setting& s : settings) {
    if (s.keep_recompute) {
      out.push_back(s.optimizer_offload ? "keep offload" : "keep");
      continue;
    }
    std::string d = v1::RecomputeGranularity_Name(s.granularity);
    if (s.method != v1::RECOMPUTE_METHOD_UNSPECIFIED) {
      absl::StrAppend(&d, " ", v1::RecomputeMethod_Name(s.method));
    }
    for (v1::RecomputeModule m : s.modules) absl::StrAppend(&d, " ", v1::RecomputeModule_Name(m));
    if (s.half_of_chunk) absl::StrAppend(&d, " half");
    if (s.optimizer_offload) absl::StrAppend(&d, " offload");
    out.push_back(d);
  }
  return out;
}

// Settings, the most memory-saving last: no recompute, selective
// core_attn, the MLP's (dense: mlp; MoE: moe_act + layernorm, then moe +
// layernorm; MLA adds mla_up_proj + mlp), full block over half a chunk,
// full uniform; then each again with the optimizer offloaded.
TEST(SearchSpace, SettingsOfDenseMoeAndMlaModels) {
  const std::vector<std::string> dense = Describe(EnumerateSettings(DenseBase(8, 16), {}));
  EXPECT_THAT(dense,
              ElementsAre("RECOMPUTE_GRANULARITY_NONE",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_CORE_ATTN",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_MLP",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_BLOCK half",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_UNIFORM",
                          "RECOMPUTE_GRANULARITY_NONE offload",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_CORE_ATTN offload",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_MLP offload",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_BLOCK half offload",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_UNIFORM offload"));

  v1::JobSpec moe = DenseBase(8, 16);
  moe.mutable_model()->set_num_experts(8);
  moe.mutable_model()->set_attention_type(v1::ATTENTION_TYPE_MLA);
  SearchBounds no_offload;
  no_offload.allow_offload = false;
  EXPECT_THAT(Describe(EnumerateSettings(moe, no_offload)),
              ElementsAre("RECOMPUTE_GRANULARITY_NONE",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_CORE_ATTN",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_MOE_ACT "
                          "RECOMPUTE_MODULE_LAYERNORM",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_MOE "
                          "RECOMPUTE_MODULE_LAYERNORM",
                          "RECOMPUTE_GRANULARITY_SELECTIVE RECOMPUTE_MODULE_MLA_UP_PROJ "
                          "RECOMPUTE_MODULE_MLP",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_BLOCK half",
                          "RECOMPUTE_GRANULARITY_FULL RECOMPUTE_METHOD_UNIFORM"));
}

// A job that sets its recompute keeps it; without recompute allowed, so
// does every job; an optimizer already offloaded is not offloaded again.
TEST(SearchSpace, SettingsKeepWhatTheJobSets) {
  v1::JobSpec job = DenseBase(8, 16);
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(Describe(EnumerateSettings(job, {})), ElementsAre("keep", "keep offload"));
  SearchBounds no_recompute;
  no_recompute.allow_recompute = false;
  EXPECT_THAT(Describe(EnumerateSettings(DenseBase(8, 16), no_recompute)),
              ElementsAre("keep", "keep offload"));
  job.mutable_precision()->set_optimizer_cpu_offload(true);
  EXPECT_THAT(Describe(EnumerateSettings(job, {})), ElementsAre("keep"));
}

// The whole search of the dense job: 56 layouts x 4 micro-batch sizes x 10
// settings.
TEST(SearchSpace, SizeOfTheDenseSearch) {
  const v1::JobSpec job = DenseBase(8, 16);
  EXPECT_EQ(EnumerateLayouts(job, {}).size() * MicroBatchSizes(job, {}).size() *
                EnumerateSettings(job, {}).size(),
            56u * 4 * 10);
}

TEST(SearchSpace, SizeRange) {
  const SizeRange open;
  EXPECT_FALSE(open.Bounded());
  EXPECT_TRUE(open.Contains(1));
  EXPECT_TRUE(open.Contains(int64_t{1} << 40));
  EXPECT_FALSE(open.Contains(0));
  const SizeRange two_to_four{.min = 2, .max = 4};
  EXPECT_TRUE(two_to_four.Bounded());
  EXPECT_FALSE(two_to_four.Contains(1));
  EXPECT_TRUE(two_to_four.Contains(2));
  EXPECT_TRUE(two_to_four.Contains(4));
  EXPECT_FALSE(two_to_four.Contains(5));
  EXPECT_TRUE((SizeRange{.max = 8}).Bounded());
}

// kSizeRangeNames: every SizeRanges member once, each naming a SizeRange
// field of PlanConstraints, with a distinct --bound name and label.
TEST(SearchSpace, SizeRangeNames) {
  std::vector<std::string> flags;
  std::set<std::string> labels;
  std::vector<SizeRange SizeRanges::*> members;
  const google::protobuf::Descriptor* constraints = v1::PlanConstraints::descriptor();
  for (const SizeRangeName& n : kSizeRangeNames) {
    flags.push_back(n.flag_name);
    labels.insert(n.label);
    for (SizeRange SizeRanges::*other : members) EXPECT_NE(other, n.range) << n.field;
    members.push_back(n.range);
    const google::protobuf::FieldDescriptor* field = constraints->FindFieldByName(n.field);
    ASSERT_NE(field, nullptr) << n.field;
    ASSERT_EQ(field->type(), google::protobuf::FieldDescriptor::TYPE_MESSAGE) << n.field;
    EXPECT_EQ(field->message_type()->full_name(), "oomguard.v1.SizeRange") << n.field;
  }
  EXPECT_THAT(flags, ElementsAre("tp", "pp", "vpp", "cp", "ep", "etp", "mbs"));
  EXPECT_EQ(labels.size(), 7u);
  EXPECT_EQ(members.size(), 7u);  // tp, pp, vpp, cp, ep, etp, micro_batch.
  // Each name reaches its own member.
  SizeRanges ranges;
  int64_t v = 10;
  for (const SizeRangeName& n : kSizeRangeNames) (ranges.*n.range).max = v++;
  EXPECT_EQ(ranges.tp.max, 10);
  EXPECT_EQ(ranges.pp.max, 11);
  EXPECT_EQ(ranges.vpp.max, 12);
  EXPECT_EQ(ranges.cp.max, 13);
  EXPECT_EQ(ranges.ep.max, 14);
  EXPECT_EQ(ranges.etp.max, 15);
  EXPECT_EQ(ranges.micro_batch.max, 16);
}

// ApplyCandidate: the layout's sizes, sequence parallel with TP > 1, the
// split's flags, the micro-batch, the distributed optimizer, the offload
// and the recompute, over the base job.
TEST(SearchSpace, ApplyCandidate) {
  const v1::JobSpec base = DenseBase(8, 16);
  Layout l;
  l.tp = 2;
  l.pp = 4;
  l.vpp = 2;
  l.split = PipelineSplit::kUnevenFirstLast;
  l.first_layers = 1;
  l.last_layers = 2;
  l.layers_per_chunk = 6;
  Setting block;
  block.granularity = v1::RECOMPUTE_GRANULARITY_FULL;
  block.method = v1::RECOMPUTE_METHOD_BLOCK;
  block.half_of_chunk = true;
  block.optimizer_offload = true;
  v1::JobSpec job;
  ApplyCandidate(base, l, 2, block, &job);
  const v1::ParallelismSpec& p = job.parallelism();
  EXPECT_EQ(p.num_gpus(), 16u);
  EXPECT_EQ(p.tensor_model_parallel_size(), 2u);
  EXPECT_EQ(p.context_parallel_size(), 1u);
  EXPECT_EQ(p.pipeline_model_parallel_size(), 4u);
  EXPECT_EQ(p.expert_model_parallel_size(), 1u);
  EXPECT_EQ(p.expert_tensor_parallel_size(), 1u);
  EXPECT_TRUE(p.sequence_parallel());
  EXPECT_EQ(p.num_virtual_stages_per_pipeline_rank(), 2u);
  EXPECT_EQ(p.decoder_first_pipeline_num_layers(), 1u);
  EXPECT_EQ(p.decoder_last_pipeline_num_layers(), 2u);
  EXPECT_FALSE(p.account_for_embedding_in_pipeline_split());
  EXPECT_EQ(job.training().micro_batch_size(), 2u);
  EXPECT_EQ(job.training().seq_length(), 4096u);  // The base's.
  EXPECT_TRUE(job.precision().use_distributed_optimizer());
  EXPECT_TRUE(job.precision().optimizer_cpu_offload());
  EXPECT_EQ(job.precision().optimizer_offload_fraction(), 1.0);
  EXPECT_EQ(job.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(job.recompute().method(), v1::RECOMPUTE_METHOD_BLOCK);
  EXPECT_EQ(job.recompute().num_layers(), 3u);  // Half of the chunk's 6.

  // TP 1: no sequence parallel; VPP 1: unset; the embedding and loss split;
  // selective recompute: its modules, no layer count.
  Layout even;
  even.pp = 2;
  even.split = PipelineSplit::kAccountEmbeddingAndLoss;
  even.layers_per_chunk = 5;
  Setting selective;
  selective.granularity = v1::RECOMPUTE_GRANULARITY_SELECTIVE;
  selective.modules = {v1::RECOMPUTE_MODULE_CORE_ATTN};
  v1::JobSpec base_with_layers = base;
  base_with_layers.mutable_recompute()->set_num_layers(4);
  ApplyCandidate(base_with_layers, even, 1, selective, &job);
  EXPECT_FALSE(job.parallelism().sequence_parallel());
  EXPECT_FALSE(job.parallelism().has_num_virtual_stages_per_pipeline_rank());
  EXPECT_TRUE(job.parallelism().account_for_embedding_in_pipeline_split());
  EXPECT_TRUE(job.parallelism().account_for_loss_in_pipeline_split());
  EXPECT_FALSE(job.parallelism().has_decoder_first_pipeline_num_layers());
  EXPECT_FALSE(job.precision().optimizer_cpu_offload());
  EXPECT_THAT(job.recompute().modules(), ElementsAre(v1::RECOMPUTE_MODULE_CORE_ATTN));
  EXPECT_FALSE(job.recompute().has_num_layers());

  // Full uniform: one layer a group; a chunk of 1 layer in a block: 1.
  Setting uniform;
  uniform.granularity = v1::RECOMPUTE_GRANULARITY_FULL;
  uniform.method = v1::RECOMPUTE_METHOD_UNIFORM;
  ApplyCandidate(base, l, 1, uniform, &job);
  EXPECT_EQ(job.recompute().num_layers(), 1u);
  l.layers_per_chunk = 1;
  ApplyCandidate(base, l, 1, block, &job);
  EXPECT_EQ(job.recompute().num_layers(), 1u);

  // The MTP layout: the pattern, and no VPP (the layout sets it).
  Layout mtp;
  mtp.pp = 2;
  mtp.vpp = 1;
  mtp.split = PipelineSplit::kMtpLayout;
  mtp.pattern = "Etttt|tttmL";
  v1::JobSpec with_vpp = base;
  with_vpp.mutable_parallelism()->set_num_virtual_stages_per_pipeline_rank(2);
  Setting keep;
  keep.keep_recompute = true;
  with_vpp.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  ApplyCandidate(with_vpp, mtp, 1, keep, &job);
  EXPECT_EQ(job.parallelism().pipeline_model_parallel_layout(), "Etttt|tttmL");
  EXPECT_FALSE(job.parallelism().has_num_virtual_stages_per_pipeline_rank());
  EXPECT_EQ(job.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);  // Kept.
}

}  // namespace
}  // namespace oomguard
