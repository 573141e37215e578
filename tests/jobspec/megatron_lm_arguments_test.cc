// oomguard's flag table against Megatron-LM's own parser
// (tests/data/megatron_lm_arguments.txt): every flag the table reads is one
// Megatron-LM has, but for the spellings named below with their reason, and
// every flag the writer writes is one Megatron-LM has.
#include "tests/testing/megatron_lm_arguments.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_flags.h"

namespace oomguard {
namespace {

using testing::MegatronLmArguments;

// Flags of the table that Megatron-LM's parser (at the list's commit) lacks,
// and why the table keeps them.
const std::map<std::string, std::string>& NotMegatronLms() {
  static const auto* const kKept = new std::map<std::string, std::string>{
      {"--virtual-pipeline-model-parallel-size",
       "a legacy spelling some forks register, read as --num-virtual-stages-per-pipeline-rank "
       "with a note; never written"},
      {"--use-custom-fsdp",
       "removed in 2025-08 (Megatron-LM af28b5a559); refused, naming --use-megatron-fsdp"},
  };
  return *kKept;
}

TEST(MegatronLmArguments, TheListIsTheWholeParser) {
  const std::set<std::string>& args = MegatronLmArguments();
  EXPECT_GE(args.size(), 800u);
  // Written out by add_argument.
  EXPECT_EQ(args.count("--num-layers"), 1u);
  EXPECT_EQ(args.count("--recompute-granularity"), 1u);
  // Generated from TransformerConfig's fields (ArgumentGroupFactory): an
  // integer, a switch whose default is off, one whose default is on.
  EXPECT_EQ(args.count("--cpu-offloading-num-layers"), 1u);
  EXPECT_EQ(args.count("--fine-grained-activation-offloading"), 1u);
  EXPECT_EQ(args.count("--tensor-model-parallel-size"), 1u);
  // Fields _add_network_size_args excludes have no flag.
  EXPECT_EQ(args.count("--cpu-offloading"), 0u);
  EXPECT_EQ(args.count("--cpu-offloading-activations"), 0u);
  EXPECT_EQ(args.count("--cpu-offloading-double-buffering"), 0u);
}

TEST(MegatronLmArguments, EveryFlagOfTheTableIsMegatronLms) {
  int checked = 0;
  for (const MegatronFlag& flag : MegatronFlags()) {
    const std::string spelling = flag.Spelling();
    ++checked;
    if (NotMegatronLms().count(spelling) > 0) {
      EXPECT_EQ(MegatronLmArguments().count(spelling), 0u)
          << spelling << " is Megatron-LM's after all: take it off NotMegatronLms()";
      continue;
    }
    EXPECT_EQ(MegatronLmArguments().count(spelling), 1u)
        << spelling << " is in oomguard's flag table but not in Megatron-LM's parser";
  }
  EXPECT_GE(checked, 110);
  for (const auto& [spelling, why] : NotMegatronLms()) {
    EXPECT_NE(FindMegatronFlag(spelling), nullptr) << spelling << " left the table";
  }
}

// Every entry that writes is Megatron-LM's, or never the one the writer
// picks: an earlier entry of Megatron-LM's writes its field.
TEST(MegatronLmArguments, EveryFlagTheWriterWritesIsMegatronLms) {
  int writing = 0;
  for (const MegatronFlag& flag : MegatronFlags()) {
    if (flag.write == nullptr) continue;
    ++writing;
    if (MegatronLmArguments().count(flag.Spelling()) > 0) continue;
    const MegatronFlag* first = FindMegatronFlagForField(flag.fields.front());
    ASSERT_NE(first, nullptr) << flag.Spelling();
    EXPECT_NE(first, &flag) << flag.Spelling() << " is written but is not Megatron-LM's";
    EXPECT_EQ(MegatronLmArguments().count(first->Spelling()), 1u) << first->Spelling();
  }
  EXPECT_GE(writing, 100);
}

// Issue 25, item 3: `--cpu-offloading` is no flag of Megatron-LM (its parser
// exits on it), so it is read as any unknown flag, recorded as not modelled
// (JobSpec.unmodelled_settings), and turns nothing on; `--cpu-offloading-num-layers N` alone is the
// offloading.
TEST(MegatronLmArguments, CpuOffloadingIsUnknownAndTheNumberOfLayersTurnsItOn) {
  EXPECT_EQ(FindMegatronFlag("--cpu-offloading"), nullptr);
  v1::JobSpec job;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyMegatronArgs({"--cpu-offloading"}, ArgsMode::kOverrides, &job, &notes).ok());
  EXPECT_THAT(notes, ::testing::IsEmpty());
  ASSERT_EQ(job.unmodelled_settings_size(), 1);
  EXPECT_EQ(job.unmodelled_settings(0).flag(), "--cpu-offloading");
  EXPECT_FALSE(job.recompute().has_cpu_offloading_num_layers());

  ASSERT_TRUE(
      ApplyMegatronArgs({"--cpu-offloading-num-layers", "5"}, ArgsMode::kOverrides, &job, &notes)
          .ok());
  EXPECT_EQ(job.recompute().cpu_offloading_num_layers(), 5u);
}

}  // namespace
}  // namespace oomguard
