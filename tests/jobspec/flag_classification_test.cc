// Every flag of Megatron-LM's parser at the supported version
// (tests/data/megatron_lm_arguments.txt) is in exactly one class (modelled,
// no memory effect, not modelled, refused), every name the classification
// lists is Megatron-LM's (or an older spelling named here with its reason),
// and every choice value of a modelled flag is one the table reads or one
// listed as not modelled.
#include "jobspec/flag_classification.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/rl_megatron_args.h"
#include "tests/testing/megatron_lm_arguments.h"

namespace oomguard {
namespace {

using testing::MegatronLmArguments;
using testing::MegatronLmChoices;

// Names the classification keeps that Megatron-Core 0.20.0's parser lacks,
// and why.
const std::map<std::string, std::string>& OlderSpellings() {
  static const auto* const kOlder = new std::map<std::string, std::string>{
      {"--use-custom-fsdp", "Megatron-FSDP's spelling until 2025-08: refused, naming the new one"},
      {"--use-legacy-models", "legacy (non-Core) models, removed from Megatron-LM: not modelled"},
      {"--batch-p2p-comm", "older pipeline communication switch: no memory effect"},
      {"--check-for-nan-in-loss-and-grad", "now on by default (--no-... turns it off)"},
      {"--disable-vision-class-token", "older vision flag"},
      {"--enable-one-logger", "older logging switch (now --no-one-logger)"},
      {"--gradient-accumulation-fusion", "now on by default (--no-... turns it off)"},
      {"--legacy-tokenizer", "older tokenizer switch"},
      {"--mmap-bin-files", "now on by default (--no-mmap-bin-files)"},
      {"--moe-use-legacy-grouped-gemm", "older grouped GEMM kernel choice"},
      {"--no-async-tensor-model-parallel-allreduce", "older communication switch"},
      {"--overlap-p2p-communication", "now on by default (--no-overlap-p2p-communication)"},
      {"--use-packed-sequence", "older data switch"},
      {"--variable-seq-lengths", "older pipeline communication switch"},
  };
  return *kOlder;
}

// The classes `spelling` is listed in, by name.
std::vector<std::string> ClassesListing(const std::string& spelling) {
  const std::string name = CanonicalFlagName(spelling);
  std::vector<std::string> classes;
  const MegatronFlag* flag = FindMegatronFlag(name);
  if (flag != nullptr && !flag->unimplemented) classes.push_back("modelled");
  if (IsMegatronRlReaderFlag(name)) classes.push_back("modelled");
  if (UnimplementedFlagReason(name).has_value()) classes.push_back("refused");
  const std::vector<absl::string_view> unmodelled = UnmodelledFlags();
  for (auto i = std::count(unmodelled.begin(), unmodelled.end(), name); i > 0; --i) {
    classes.push_back("not modelled");
  }
  const std::vector<absl::string_view> silent = NoMemoryEffectFlags();
  for (auto i = std::count(silent.begin(), silent.end(), name); i > 0; --i) {
    classes.push_back("no memory effect");
  }
  return classes;
}

TEST(FlagClassification, EveryFlagOfMegatronLmIsInExactlyOneClass) {
  std::map<std::string, int> per_class;
  for (const std::string& spelling : MegatronLmArguments()) {
    const std::vector<std::string> classes = ClassesListing(spelling);
    EXPECT_EQ(classes.size(), 1u) << spelling << " is in " << classes.size()
                                  << " classes: " << ::testing::PrintToString(classes);
    if (classes.size() != 1) continue;
    ++per_class[classes.front()];
    EXPECT_EQ(FlagClassName(ClassifyFlag(spelling).flag_class), classes.front()) << spelling;
  }
  EXPECT_GE(MegatronLmArguments().size(), 860u);
  for (const auto& [flag_class, count] : per_class) {
    std::cout << flag_class << ": " << count << "\n";
  }
}

TEST(FlagClassification, EveryNameListedIsMegatronLmsOrAnOlderSpelling) {
  std::vector<absl::string_view> listed = UnmodelledFlags();
  for (absl::string_view name : NoMemoryEffectFlags()) listed.push_back(name);
  for (absl::string_view name : UnimplementedFlags()) listed.push_back(name);
  for (absl::string_view name : listed) {
    const std::string spelling = absl::StrCat("--", name);
    EXPECT_EQ(CanonicalFlagName(spelling), name) << "not canonical: " << name;
    if (OlderSpellings().count(spelling) > 0) continue;
    EXPECT_EQ(MegatronLmArguments().count(spelling), 1u)
        << spelling << " is classified but is no flag of Megatron-LM's parser (an older spelling "
        << "goes into OlderSpellings() with its reason)";
  }
  for (const auto& [spelling, why] : OlderSpellings()) {
    EXPECT_EQ(MegatronLmArguments().count(spelling), 0u)
        << spelling << " is Megatron-LM's after all: take it off OlderSpellings()";
    EXPECT_EQ(ClassesListing(spelling).size(), 1u) << spelling;
  }
}

// Every choice of a modelled flag is read by the table: one of its words,
// or (for a flag read by a handler of its own) a value its handler takes,
// unless it is listed as not modelled.
TEST(FlagClassification, EveryChoiceOfAModelledFlagIsReadOrNotModelled) {
  int checked = 0;
  for (const auto& [spelling, choices] : MegatronLmChoices()) {
    const MegatronFlag* flag = FindMegatronFlag(spelling);
    if (flag == nullptr || flag->unimplemented) continue;
    for (const std::string& value : choices) {
      ++checked;
      const bool is_word = std::any_of(flag->words.begin(), flag->words.end(),
                                       [&](const FlagWord& word) { return word.word == value; });
      if (UnmodelledChoiceReason(flag->name, value).has_value()) {
        EXPECT_FALSE(is_word) << spelling << " " << value
                              << " is read by the table and listed as not modelled";
        continue;
      }
      if (!flag->words.empty()) {
        EXPECT_TRUE(is_word) << spelling << " " << value
                             << ": neither a word of the table nor a not-modelled choice";
        continue;
      }
      // With a vocabulary size, which --tokenizer-type NullTokenizer needs.
      v1::JobSpec job;
      std::vector<std::string> notes;
      EXPECT_TRUE(ApplyMegatronArgs({spelling, value, "--vocab-size", "32000"},
                                    ArgsMode::kOverrides, &job, &notes)
                      .ok())
          << spelling << " " << value << ": its handler refuses Megatron-LM's choice";
    }
  }
  EXPECT_GE(checked, 80);
  for (const UnmodelledChoice& choice : UnmodelledChoices()) {
    const std::string spelling = absl::StrCat("--", choice.flag);
    const MegatronFlag* flag = FindMegatronFlag(spelling);
    EXPECT_TRUE(flag != nullptr && !flag->unimplemented)
        << spelling << " has a not-modelled choice but is not modelled";
    const auto it = MegatronLmChoices().find(spelling);
    ASSERT_NE(it, MegatronLmChoices().end()) << spelling;
    EXPECT_THAT(it->second, ::testing::Contains(std::string(choice.value)))
        << choice.value << " is no choice of " << spelling;
  }
}

TEST(FlagClassification, ClassifiesEachKind) {
  const FlagClassification layers = ClassifyFlag("--num-layers");
  EXPECT_EQ(layers.flag_class, FlagClass::kModelled);
  EXPECT_THAT(layers.fields, ::testing::ElementsAre("model.num_layers"));

  const FlagClassification recipe = ClassifyFlag("fp8_recipe");
  EXPECT_EQ(recipe.spelling, "--fp8-recipe");
  EXPECT_EQ(recipe.flag_class, FlagClass::kModelled);
  ASSERT_EQ(recipe.unmodelled_choices.size(), 1u);
  EXPECT_EQ(recipe.unmodelled_choices[0].value, "custom");
  EXPECT_THAT(recipe.unmodelled_choices[0].reason, ::testing::HasSubstr("quantizer factory"));

  const FlagClassification lr = ClassifyFlag("--lr");
  EXPECT_EQ(lr.flag_class, FlagClass::kNoMemoryEffect);
  EXPECT_THAT(lr.reason, ::testing::HasSubstr("learning rate"));

  // Megatron-LM's RL loop: read by the RL reader into the RL job, or not
  // modelled there.
  const FlagClassification rl = ClassifyFlag("--perform-rl-step");
  EXPECT_EQ(rl.flag_class, FlagClass::kModelled);
  EXPECT_THAT(rl.fields, ::testing::ElementsAre("RlJobSpec.framework"));
  const FlagClassification buffer = ClassifyFlag("--inference-dynamic-batching-buffer-size-gb");
  EXPECT_EQ(buffer.flag_class, FlagClass::kModelled);
  EXPECT_THAT(buffer.fields, ::testing::ElementsAre("RlJobSpec.rollout.kv_buffer_bytes"));
  const FlagClassification partial = ClassifyFlag("--rl-partial-rollouts");
  EXPECT_EQ(partial.flag_class, FlagClass::kNotModelled);
  EXPECT_THAT(partial.reason, ::testing::HasSubstr("RL post-training"));
  EXPECT_EQ(ClassifyFlag("--rl-default-temperature").flag_class, FlagClass::kNoMemoryEffect);

  EXPECT_EQ(ClassifyFlag("--use-custom-fsdp").flag_class, FlagClass::kRefused);
  EXPECT_EQ(ClassifyFlag("--batch-size").flag_class, FlagClass::kRefused);

  const FlagClassification typo = ClassifyFlag("--num-layer");
  EXPECT_EQ(typo.flag_class, FlagClass::kUnknown);
  EXPECT_THAT(typo.reason, ::testing::HasSubstr("Megatron-Core 0.20.0"));
}

// The old flags Megatron-LM refuses make the job invalid (it never
// trains); the removed FSDP spelling, valid before Megatron-Core 0.14, is a
// job oomguard does not model.
TEST(FlagClassification, OldFlagsMegatronLmRefusesAreInvalid) {
  v1::JobSpec job;
  std::vector<std::string> notes;
  const absl::Status status =
      ApplyMegatronArgs({"--batch-size", "8"}, ArgsMode::kOverrides, &job, &notes);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("--micro-batch-size"));
  const absl::Status fsdp =
      ApplyMegatronArgs({"--use-custom-fsdp"}, ArgsMode::kOverrides, &job, &notes);
  EXPECT_EQ(fsdp.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(fsdp.message(), ::testing::HasSubstr("--use-megatron-fsdp"));
}

}  // namespace
}  // namespace oomguard
