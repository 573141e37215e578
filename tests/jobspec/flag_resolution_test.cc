#include "jobspec/flag_resolution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"
#include "tests/jobspec/megatron_line_util.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(FlagResolutionTest, NotesAreDeduplicatedAndBounded) {
  std::vector<std::string> notes = {"earlier"};
  v1::JobSpec job;
  ParseState state{.job = &job, .notes = &notes};
  state.Note("a");
  state.Note("a");
  EXPECT_THAT(notes, ElementsAre("earlier", "a"));
  for (int i = 0; i < 100; ++i) state.Note(absl::StrCat("note ", i));
  ASSERT_THAT(notes, SizeIs(66));
  EXPECT_EQ(notes.back(), "further notes omitted");
}

TEST(FlagResolutionTest, ResolvesRecordedFlags) {
  v1::JobSpec job;
  ParseState state{.job = &job};
  state.group_query_attention = true;
  state.num_query_groups = 8;
  state.tokenizer_type = "Llama2Tokenizer";
  state.final_scheduled_batch_size = 512;
  ASSERT_TRUE(ResolveFlags(state).ok());
  EXPECT_EQ(job.model().num_query_groups(), 8u);
  EXPECT_EQ(job.model().vocab_size(), 32000u);
  EXPECT_EQ(job.precision().params_dtype(), v1::DTYPE_FP32);
  EXPECT_EQ(job.training().global_batch_size(), 512u);

  state.bf16 = state.fp16 = true;
  EXPECT_EQ(ResolveFlags(state).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FlagResolutionTest, QueryGroupsNeedGroupQueryAttentionInFullMode) {
  std::vector<std::string> notes;
  const v1::JobSpec mha = ParseFull("--num-query-groups 8 --vocab-size 8", &notes);
  EXPECT_FALSE(mha.model().has_num_query_groups());
  EXPECT_THAT(notes, ElementsAre(HasSubstr("--group-query-attention")));

  EXPECT_EQ(ParseFull("--num-query-groups 8 --group-query-attention "
                      "--vocab-size 8")
                .model()
                .num_query_groups(),
            8u);
  // Megatron's --num-query-groups default is 1.
  EXPECT_EQ(ParseFull("--group-query-attention --vocab-size 8").model().num_query_groups(), 1u);

  v1::JobSpec preset;
  preset.mutable_model()->set_num_query_groups(4);
  ASSERT_TRUE(ApplyLine("--num-query-groups 2", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.model().num_query_groups(), 2u);
  ASSERT_TRUE(ApplyLine("--group-query-attention", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.model().num_query_groups(), 2u);
}

TEST(FlagResolutionTest, CrossEntropyFusionFlagOrderDoesNotMatter) {
  struct Case {
    const char* line;
    v1::CrossEntropyFusion expected;
  };
  const Case cases[] = {
      {"--cross-entropy-loss-fusion", v1::CROSS_ENTROPY_FUSION_NATIVE},
      {"--cross-entropy-loss-fusion --cross-entropy-fusion-impl te", v1::CROSS_ENTROPY_FUSION_TE},
      {"--cross-entropy-fusion-impl te --cross-entropy-loss-fusion", v1::CROSS_ENTROPY_FUSION_TE},
      {"--cross-entropy-fusion-impl native --cross-entropy-loss-fusion",
       v1::CROSS_ENTROPY_FUSION_NATIVE},
      {"--cross-entropy-fusion-impl te", v1::CROSS_ENTROPY_FUSION_UNSPECIFIED},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseFull(absl::StrCat(c.line, " --vocab-size 8")).training().cross_entropy_fusion(),
              c.expected)
        << c.line;
  }
  v1::JobSpec preset;
  preset.mutable_training()->set_cross_entropy_fusion(v1::CROSS_ENTROPY_FUSION_NATIVE);
  ASSERT_TRUE(ApplyLine("--cross-entropy-fusion-impl te", ArgsMode::kOverrides, &preset).ok());
  EXPECT_EQ(preset.training().cross_entropy_fusion(), v1::CROSS_ENTROPY_FUSION_TE);
}

TEST(FlagResolutionTest, VocabFromTokenizerType) {
  struct Case {
    const char* tokenizer;
    uint32_t vocab;
    bool noted;
  };
  const Case cases[] = {
      {"GPT2BPETokenizer", 50257, false},         {"Llama2Tokenizer", 32000, true},
      {"BertWordPieceLowerCase", 30522, true},    {"BertWordPieceCase", 30522, true},
      {"GPTSentencePieceTokenizer", 50257, true}, {"HuggingFaceTokenizer", 50257, true},
  };
  for (const Case& c : cases) {
    std::vector<std::string> notes;
    const v1::JobSpec job = ParseFull(absl::StrCat("--tokenizer-type ", c.tokenizer), &notes);
    EXPECT_EQ(job.model().vocab_size(), c.vocab) << c.tokenizer;
    EXPECT_EQ(notes.size(), c.noted ? 1u : 0u) << c.tokenizer;
  }
  EXPECT_EQ(ParseFull("--tokenizer-type GPT2BPETokenizer --vocab-size 1000").model().vocab_size(),
            1000u);
}

TEST(FlagResolutionTest, NullTokenizerNeedsVocabSizeAndAddsEod) {
  absl::Status status = ParseError("--tokenizer-type NullTokenizer");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--vocab-size"));

  EXPECT_EQ(ParseFull("--tokenizer-type NullTokenizer --vocab-size 8192").model().vocab_size(),
            8193u);
}

TEST(FlagResolutionTest, StepBatchSizeScheduleGivesFinalBatchSize) {
  std::vector<std::string> notes;
  const v1::JobSpec job =
      ParseFull("--step-batch-size-schedule 0:384 200B:768 400B:1152 --vocab-size 8", &notes);
  EXPECT_EQ(job.training().global_batch_size(), 1152u);
  EXPECT_THAT(notes, ElementsAre(HasSubstr("final global batch size")));

  const v1::JobSpec quoted = ParseFull(
      "--step-batch-size-schedule '0:384 200B:768' --global-batch-size 64 "
      "--rampup-batch-size 16 16 1000 --vocab-size 8");
  EXPECT_EQ(quoted.training().global_batch_size(), 64u);
}

}  // namespace
}  // namespace oomguard
