// The hybrid layer pattern (estimator/hybrid_layer_pattern.h) read as
// Megatron-Core's hybrid_layer_allocation.py reads it: the symbols, the
// pipeline segments, the MTP depths, and what it refuses, each error naming
// the field, its flag and the offending symbol with its offset.
#include "estimator/hybrid_layer_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using L = HybridLayer;

TEST(HybridLayerPattern, EverySymbol) {
  // '*' beside 'D' or '+' is refused (below): they are read apart.
  absl::StatusOr<HybridPattern> p = ParseHybridLayerPattern("MG*-E");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->Layers(), ElementsAre(L::kMamba, L::kGatedDelta, L::kAttention, L::kMlp, L::kMoe));
  p = ParseHybridLayerPattern("D+");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->Layers(), ElementsAre(L::kDsAttention, L::kMla));
  std::string symbols;
  for (L layer :
       {L::kMamba, L::kGatedDelta, L::kAttention, L::kDsAttention, L::kMla, L::kMlp, L::kMoe}) {
    symbols += HybridLayerSymbol(layer);
  }
  EXPECT_EQ(symbols, "MG*D+-E");
}

// Nemotron-H 8B's pattern: 24 Mamba, 4 attention, 24 MLP layers.
TEST(HybridLayerPattern, NemotronH8b) {
  absl::StatusOr<HybridPattern> p =
      ParseHybridLayerPattern("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->num_layers(), 52);
  EXPECT_FALSE(p->has_pipes());
  EXPECT_EQ(p->mtp_depths, 0);
  int mamba = 0, attention = 0, mlp = 0;
  for (L layer : p->Layers()) {
    mamba += layer == L::kMamba;
    attention += layer == L::kAttention;
    mlp += layer == L::kMlp;
  }
  EXPECT_EQ(mamba, 24);
  EXPECT_EQ(attention, 4);
  EXPECT_EQ(mlp, 24);
}

// The docstring examples of parse_hybrid_pattern.
TEST(HybridLayerPattern, PipesAndMtp) {
  absl::StatusOr<HybridPattern> p = ParseHybridLayerPattern("M-M-|M-M*-/MM/MM");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->segments.size(), 2u);
  EXPECT_EQ(p->segments[0].size(), 4u);
  EXPECT_EQ(p->segments[1].size(), 5u);
  EXPECT_EQ(p->num_layers(), 9);
  EXPECT_THAT(p->mtp, ElementsAre(L::kMamba, L::kMamba));
  EXPECT_EQ(p->mtp_depths, 2);
  p = ParseHybridLayerPattern("MMMM/*M/*M/*M");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->mtp_depths, 3);
  // A trailing '/' with nothing after it is no MTP; empty segments are
  // empty stages.
  p = ParseHybridLayerPattern("M*//");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->mtp_depths, 0);
  p = ParseHybridLayerPattern("M||M");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->segments.size(), 3u);
  EXPECT_TRUE(p->segments[1].empty());
}

TEST(HybridLayerPattern, ErrorsNameTheFlagAndTheOffendingSymbol) {
  absl::Status s = ParseHybridLayerPattern("M-M-X*").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model.hybrid_layer_pattern (--hybrid-layer-pattern)"));
  EXPECT_THAT(s.message(),
              HasSubstr("'X' at offset 4 (in the main pattern) is not a layer symbol"));
  s = ParseHybridLayerPattern("M-M-/M m").status();
  EXPECT_THAT(s.message(), HasSubstr("' ' at offset 6 (in the MTP pattern)"));
  s = ParseHybridLayerPattern("MM/M|M").status();
  EXPECT_THAT(s.message(), HasSubstr("'|' at offset 4 is in an MTP pattern"));
  s = ParseHybridLayerPattern("MM/M*/MM").status();
  EXPECT_THAT(s.message(), HasSubstr("MTP pattern 2 \"MM\" at offset 6 differs from MTP pattern 1 "
                                     "\"M*\""));
  s = ParseHybridLayerPattern("M*M+").status();
  EXPECT_THAT(s.message(), HasSubstr("main pattern mixes attention (*) with multi-latent"));
  s = ParseHybridLayerPattern("M-/M*D").status();
  EXPECT_THAT(s.message(), HasSubstr("MTP pattern mixes attention"));
  for (const char* empty : {"", "|", "/MM"}) {
    s = ParseHybridLayerPattern(empty).status();
    EXPECT_THAT(s.message(), HasSubstr("has no decoder layers")) << empty;
  }
  s = ParseHybridLayerPattern(std::string(kMaxHybridPatternChars + 1, 'M')).status();
  EXPECT_THAT(s.message(), HasSubstr("characters long (limit"));
}

}  // namespace
}  // namespace oomguard
