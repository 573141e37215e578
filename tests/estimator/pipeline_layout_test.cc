// Tests of the layout grammar and rules (estimator/pipeline_layout.h),
// which are Megatron-Core's: megatron/core/transformer/
// pipeline_parallel_layer_layout.py, PipelineParallelLayerLayout
// (parse_str_to_list, validate_layer_layout).
#include "estimator/pipeline_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

PlacementInput Layout(absl::string_view layout, int64_t pp, int64_t num_layers,
                      int64_t mtp_layers = 0) {
  PlacementInput in;
  in.layout = layout;
  in.pp = pp;
  in.num_layers = num_layers;
  in.mtp_layers = mtp_layers;
  return in;
}

std::string PlaceError(const PlacementInput& in) {
  absl::StatusOr<std::vector<StageContents>> stages = PlaceLayers(in);
  EXPECT_EQ(stages.status().code(), absl::StatusCode::kInvalidArgument) << in.layout;
  return std::string(stages.status().message());
}

TEST(ExpandLayoutTest, UnrollsAsMegatronCore) {
  EXPECT_THAT(*ExpandLayout("Et|(tt|)*2mL"), ElementsAre("Et", "tt", "tt", "mL"));
  // Megatron-Core's docstring example: commas are cosmetic.
  absl::StatusOr<std::vector<std::string>> stages = ExpandLayout("Ettt|(tt|)*29,m|L");
  ASSERT_TRUE(stages.ok()) << stages.status();
  ASSERT_EQ(stages->size(), 32u);
  EXPECT_EQ(stages->front(), "Ettt");
  EXPECT_EQ((*stages)[29], "tt");
  EXPECT_EQ((*stages)[30], "m");
  EXPECT_EQ(stages->back(), "L");
  EXPECT_THAT(*ExpandLayout("Et*3|t*2L"), ElementsAre("Ettt", "ttL"));
  EXPECT_THAT(*ExpandLayout("(t*2|)*2L"), ElementsAre("tt", "tt", "L"));
  EXPECT_THAT(*ExpandLayout("E(t)*0|L"), ElementsAre("E", "L"));
  EXPECT_THAT(*ExpandLayout("|E||L"), ElementsAre("", "E", "", "L"));
  // re.sub rewrites "(...)*n" first, then "x*n" on what that left.
  EXPECT_THAT(*ExpandLayout("(t|)*2*3"), ElementsAre("t", "t", "", "", ""));
}

TEST(ExpandLayoutTest, RefusesWhatMegatronCoreRefuses) {
  for (const char* bad : {"Et|(tt|*2", "Ex", "Et |tL", "E((t)*2)*2|L", "E(t)|L", "E()*2|L", "Et*|L",
                          "Et**2|L", "Et*-1|L", "E\tt|L"}) {
    absl::StatusOr<std::vector<std::string>> stages = ExpandLayout(bad);
    EXPECT_EQ(stages.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(stages.status().message()),
                StartsWith("parallelism.pipeline_model_parallel_layout \""))
        << bad;
  }
  EXPECT_EQ(ExpandLayout("Et |tL").status().message(),
            "parallelism.pipeline_model_parallel_layout \"Et |tL\": unexpected character ' ' "
            "in stage 0; a stage holds E (embedding), t (decoder layer), m (MTP layer) and L "
            "(loss), repeated with \"x*n\" or \"(...)*n\"");
  EXPECT_THAT(std::string(ExpandLayout("E(t)*99999999999999999999999|L").status().message()),
              HasSubstr("expands to more than 201024 characters, more than any valid job's "
                        "layout"));
  // The bound is 2 x kMaxLayers + kMaxVirtualStages characters: 100,000
  // layers and 1,000 MTP layers in 1024 stages expand.
  EXPECT_TRUE(ExpandLayout("E(t)*100000|(m)*1000(|)*1022L").ok());
  EXPECT_TRUE(ExpandLayout("E(t)*201022L").ok());
  EXPECT_FALSE(ExpandLayout("E(t)*201024L").ok());
  EXPECT_THAT(std::string(ExpandLayout(std::string(5000, 't')).status().message()),
              HasSubstr("longer than 4096 characters"));
}

// Issue 12 (F): the DeepSeek-V3 layout is Megatron-Core's own example.
TEST(PlaceLayersTest, DeepSeekV3LayoutIsAccepted) {
  absl::StatusOr<std::vector<StageContents>> stages =
      PlaceLayers(Layout("Et|(tt|)*30mL", /*pp=*/8, /*num_layers=*/61, /*mtp_layers=*/1));
  ASSERT_TRUE(stages.ok()) << stages.status();
  ASSERT_EQ(stages->size(), 32u);
  EXPECT_TRUE(stages->front().has_embedding);
  EXPECT_EQ(stages->front().num_layers, 1);
  EXPECT_EQ((*stages)[1].first_layer, 1);
  EXPECT_EQ((*stages)[1].num_layers, 2);
  EXPECT_TRUE(stages->back().has_loss);
  EXPECT_EQ(stages->back().num_layers, 0);
  EXPECT_EQ(stages->back().num_mtp_layers, 1);
  EXPECT_EQ(stages->back().first_layer, 61);
}

// Issue 12 (F): the embedding once, first; the loss once, last.
TEST(PlaceLayersTest, EmbeddingAndLossOnceAtTheEnds) {
  EXPECT_EQ(PlaceError(Layout("EEt|(tt|)*30mL", 8, 61, 1)),
            "parallelism.pipeline_model_parallel_layout \"EEt|(tt|)*30mL\": has the embedding "
            "'E' 2 times; it must be there once");
  EXPECT_THAT(PlaceError(Layout("Et|tE|tL", 3, 3)), HasSubstr("has the embedding 'E' 2 times"));
  EXPECT_THAT(PlaceError(Layout("Et|LtL", 2, 2)), HasSubstr("has the loss 'L' 2 times"));
  EXPECT_THAT(PlaceError(Layout("tE|tL", 2, 2)), HasSubstr("must start with the embedding 'E'"));
  EXPECT_THAT(PlaceError(Layout("Et|Lt", 2, 2)), HasSubstr("must end with the loss 'L'"));
  EXPECT_THAT(PlaceError(Layout("t|t", 2, 2)), HasSubstr("must start with the embedding 'E'"));
  EXPECT_THAT(PlaceError(Layout("|", 2, 0)), HasSubstr("must start with the embedding 'E'"));
}

// Megatron-Core only requires 'E' first and 'L' last in layer order: empty
// stages before or after are accepted. Megatron-LM builds the embedding on
// the first virtual stage and the loss on the last whatever the layout says.
TEST(PlaceLayersTest, EmptyStagesAroundEmbeddingAndLoss) {
  absl::StatusOr<std::vector<StageContents>> stages = PlaceLayers(Layout("|Et|tL|", 4, 2));
  ASSERT_TRUE(stages.ok()) << stages.status();
  EXPECT_TRUE((*stages)[0].has_embedding);
  EXPECT_EQ((*stages)[0].num_layers, 0);
  EXPECT_FALSE((*stages)[1].has_embedding);
  EXPECT_EQ((*stages)[1].num_layers, 1);
  EXPECT_FALSE((*stages)[2].has_loss);
  EXPECT_TRUE((*stages)[3].has_loss);
}

TEST(PlaceLayersTest, CountsMatchTheModel) {
  EXPECT_THAT(PlaceError(Layout("Et|tL", 2, 3)),
              HasSubstr("places 2 decoder layers but model.num_layers is 3"));
  EXPECT_THAT(PlaceError(Layout("Et|tmL", 2, 2)),
              HasSubstr("places 1 MTP layers but model.mtp_num_layers is 0"));
  EXPECT_THAT(PlaceError(Layout("Et|t|L", 2, 2)),
              HasSubstr("has 3 virtual stages, not a multiple of pipeline_model_parallel_size 2"));
}

// Issue 12 (F): the MTP layers after every decoder layer, together, in the
// last virtual stage of a pipeline rank (stage index = rank + chunk * pp).
TEST(PlaceLayersTest, MtpPlacement) {
  EXPECT_THAT(PlaceError(Layout("Et|m|tL", 3, 2, 1)),
              HasSubstr("decoder layers 't' must all come before the MTP layers 'm'"));
  EXPECT_THAT(PlaceError(Layout("Emt|tL", 2, 2, 1)),
              HasSubstr("decoder layers 't' must all come before the MTP layers 'm'"));
  EXPECT_EQ(PlaceError(Layout("Ett|tm||L", 2, 3, 1)),
            "parallelism.pipeline_model_parallel_layout \"Ett|tm||L\": MTP layers 'm' must be in "
            "the last virtual stage of their pipeline rank; stage 1 is virtual stage 0 of "
            "pipeline rank 1");
  EXPECT_THAT(PlaceError(Layout("Et|tm|mL", 3, 2, 2)),
              HasSubstr("all MTP layers must be in one stage; stage 1 has 1 of "
                        "model.mtp_num_layers 2"));
  // A stage of its own, on a rank before the last (Megatron-Core's
  // "standalone" MTP), is accepted.
  absl::StatusOr<std::vector<StageContents>> stages = PlaceLayers(Layout("Et|tmm|L", 3, 2, 2));
  ASSERT_TRUE(stages.ok()) << stages.status();
  EXPECT_EQ((*stages)[1].num_mtp_layers, 2);
  stages = PlaceLayers(Layout("Ett|tt|t|mmL", 2, 5, 2));
  ASSERT_TRUE(stages.ok()) << stages.status();
  EXPECT_EQ((*stages)[3].num_mtp_layers, 2);
}

PlacementInput Uneven(int64_t pp, int64_t num_layers, int64_t first, int64_t last) {
  PlacementInput in;
  in.pp = pp;
  in.num_layers = num_layers;
  in.first_stage_layers = first;
  in.last_stage_layers = last;
  return in;
}

// Megatron-Core's uneven split (TransformerConfig.__post_init__): first
// and last stages get what they are given, the middle ones share the rest.
TEST(PlaceLayersTest, UnevenSplit) {
  absl::StatusOr<std::vector<StageContents>> stages = PlaceLayers(Uneven(4, 10, 1, 3));
  ASSERT_TRUE(stages.ok()) << stages.status();
  std::vector<int> layers;
  for (const StageContents& st : *stages) layers.push_back(st.num_layers);
  EXPECT_THAT(layers, ElementsAre(1, 3, 3, 3));
  EXPECT_EQ((*stages)[3].first_layer, 7);
}

// Its refusals: a set first or last stage with no layer ("must be larger
// than 0"), and middle stages left without layers ("Mismatch: 0 middle
// layers remaining but N middle PP stages available", core 0.16). Issue
// 12's fuzzing found a 46,656-stage pipeline of such empty stages (1.9 s
// and 48 MB of report).
TEST(PlaceLayersTest, UnevenSplitRefusesEmptyStages) {
  EXPECT_EQ(PlaceError(Uneven(4, 8, 0, -1)),
            "parallelism.decoder_first_pipeline_num_layers = 0: must be at least 1 when set");
  EXPECT_EQ(PlaceError(Uneven(4, 8, 2, 0)),
            "parallelism.decoder_last_pipeline_num_layers = 0: must be at least 1 when set");
  EXPECT_EQ(PlaceError(Uneven(46656, 2, -1, 2)),
            "parallelism.decoder_last_pipeline_num_layers = 2: leaves none of model.num_layers 2 "
            "to the other 46655 stages; every stage needs a layer");
  EXPECT_EQ(PlaceError(Uneven(4, 4, 2, 2)),
            "parallelism.decoder_first_pipeline_num_layers = 2: leaves none of model.num_layers 4 "
            "to the other 2 stages; every stage needs a layer");
  EXPECT_EQ(PlaceError(Uneven(4, 9, 2, 2)),
            "parallelism.decoder_first_pipeline_num_layers = 2: the remaining 5 of "
            "model.num_layers 9 do not split evenly over the other 2 stages");
  EXPECT_TRUE(PlaceLayers(Uneven(2, 8, 4, 4)).ok());
}

TEST(PlaceLayersTest, LongLayoutIsEchoedCutShort) {
  const std::string layout = "E" + std::string(3000, 't') + "|L";
  const std::string message = PlaceError(Layout(layout, 2, 1));
  EXPECT_THAT(message, StartsWith("parallelism.pipeline_model_parallel_layout \"E" +
                                  std::string(79, 't') + "...\": places 3000 decoder layers"));
  EXPECT_LT(message.size(), 200u);
}

}  // namespace
}  // namespace oomguard
