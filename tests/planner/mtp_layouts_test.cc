// The MTP layouts the planner tries (planner/mtp_layouts.h), listed by hand,
// each placed by the estimator's layout reader as Megatron-Core would.
#include "planner/mtp_layouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/pipeline_layout.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Patterns(int64_t layers, int64_t mtp, int64_t pp, int64_t vpp) {
  std::vector<std::string> out;
  for (const MtpLayout& l : MtpLayouts(layers, mtp, pp, vpp)) out.push_back(l.pattern);
  return out;
}

// DeepSeek-V3, 61 layers and 1 MTP layer:
//   PP 2 x VPP 8 = 16 virtual stages: counted, 64 / 16 = 4 entries a stage
//   ("E" + 3, 14 x 4, 2 + "mL"); lighter ends, ceil(61 / 16) = 4 a middle
//   stage, 61 - 14 x 4 = 5 left: 4 to the first (with "E"), 1 to the last
//   (with "mL"), Megatron-Bridge's `Et*4|(t*4|)*14tmL`;
//   PP 8 x VPP 4 = 32: counted 2 a stage, "Et|(tt|)*30mL"; lighter ends
//   ceil(61 / 32) = 2, 61 - 60 = 1 left: the same layout, listed once;
//   PP 8 x VPP 8 = 64: one entry a stage cannot hold the last's t, m and L
//   (counted), and 62 middle stages of 1 need 62 > 61 layers (lighter ends).
TEST(MtpLayouts, DeepSeekV3) {
  EXPECT_THAT(Patterns(61, 1, 2, 8), ElementsAre("Ettt|(tttt|)*14ttmL", "Etttt|(tttt|)*14tmL"));
  const std::vector<MtpLayout> pp2 = MtpLayouts(61, 1, 2, 8);
  EXPECT_EQ(pp2[0].middle_layers, 4);
  EXPECT_EQ(pp2[1].middle_layers, 4);
  EXPECT_THAT(Patterns(61, 1, 8, 4), ElementsAre("Et|(tt|)*30mL"));
  EXPECT_THAT(Patterns(61, 1, 8, 8), IsEmpty());
  EXPECT_THAT(Patterns(61, 1, 1, 1), IsEmpty());  // One stage: no layout to give.
}

// Two virtual stages: no middle ones. 7 layers + 2 MTP over PP 2: counted,
// 11 entries do not split in 2; lighter ends, 4 to the first, 3 to the
// last with "mmL". Three: one middle stage, written without a repeat.
TEST(MtpLayouts, FewStages) {
  EXPECT_THAT(Patterns(7, 2, 2, 1), ElementsAre("Etttt|tttmmL"));
  // 7 + 2 + 1 = 10 over 3 does not divide; ceil(7 / 3) = 3, 4 left: 3 and 1.
  EXPECT_THAT(Patterns(7, 1, 3, 1), ElementsAre("Ettt|ttt|tmL"));
}

// Every layout places the model's layers as Megatron-Core would: all
// decoder layers, the MTP layers in the last virtual stage, the stages a
// multiple of PP.
TEST(MtpLayouts, EveryLayoutIsPlaced) {
  for (int64_t pp : {2, 4, 8}) {
    for (int64_t vpp = 1; vpp <= 16; ++vpp) {
      for (const MtpLayout& l : MtpLayouts(61, 1, pp, vpp)) {
        PlacementInput in;
        in.num_layers = 61;
        in.mtp_layers = 1;
        in.pp = pp;
        in.vpp = vpp;
        in.layout = l.pattern;
        const auto stages = PlaceLayers(in);
        ASSERT_TRUE(stages.ok()) << l.pattern << ": " << stages.status();
        EXPECT_EQ(static_cast<int64_t>(stages->size()), pp * vpp) << l.pattern;
        EXPECT_EQ(stages->back().num_mtp_layers, 1) << l.pattern;
      }
    }
  }
}

// A model too long for a layout Megatron-Core's grammar takes here
// (kMaxLayoutChars) on PP 2 gets none, and none is built.
TEST(MtpLayouts, TooLongForALayout) { EXPECT_THAT(Patterns(100000, 1, 2, 1), IsEmpty()); }

}  // namespace
}  // namespace oomguard
