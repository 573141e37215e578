#include "jobspec/ignored_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_flags.h"
#include "oomguard/v1/job.pb.h"
#include "tests/jobspec/megatron_line_util.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

TEST(IgnoredFlagsTest, SilentFlagsAndPrefixes) {
  for (absl::string_view name :
       {"lr", "data-path", "seed", "save", "log-interval", "tensorboard-dir", "wandb-project",
        "moe-router-score-function", "fp8-amax-history-len", "overlap-grad-reduce"}) {
    EXPECT_TRUE(IsSilentFlag(name)) << name;
  }
  for (absl::string_view name :
       {"num-layers", "frobnicate", "tp-comm-overlap-cfg", "use-torch-fsdp2",
        "data-parallel-sharding-strategy", "megatron-fsdp-grad-comm-dtype",
        "megatron-fsdp-enable-fine-grained-param-gather"}) {
    EXPECT_FALSE(IsSilentFlag(name)) << name;
  }
}

TEST(IgnoredFlagsTest, UnmodelledFlagsSayWhy) {
  EXPECT_THAT(UnmodelledFlagReason("tp-comm-overlap-cfg"), Optional(HasSubstr("userbuffers")));
  EXPECT_THAT(UnmodelledFlagReason("disable-mamba-mem-eff-path"), Optional(HasSubstr("Mamba")));
  EXPECT_THAT(UnmodelledFlagReason("linear-attention-freq"),
              Optional(HasSubstr("gated delta net")));
  EXPECT_EQ(UnmodelledFlagReason("hybrid-layer-pattern"), std::nullopt);  // Modelled.
  EXPECT_TRUE(IsSilentFlag("is-hybrid-model"));
  EXPECT_EQ(UnmodelledFlagReason("lr"), std::nullopt);
  EXPECT_EQ(UnmodelledFlagReason("num-layers"), std::nullopt);
}

TEST(IgnoredFlagsTest, UnimplementedFlagsSayWhy) {
  EXPECT_THAT(UnimplementedFlags(),
              ElementsAre("use-custom-fsdp", "batch-size", "model-parallel-size", "warmup",
                          "checkpoint-activations"));
  EXPECT_THAT(UnimplementedFlagReason("checkpoint-activations"),
              Optional(HasSubstr("--recompute-activations")));
  EXPECT_THAT(UnimplementedFlagReason("use-custom-fsdp"),
              Optional(HasSubstr("--use-megatron-fsdp")));
  EXPECT_EQ(UnimplementedFlagReason("use-megatron-fsdp"), std::nullopt);
}

// The flag table is looked up first: no flag it reads is also ignored.
TEST(IgnoredFlagsTest, NoFlagIsBothReadAndUnmodelled) {
  for (absl::string_view name :
       {"tp-comm-overlap-cfg", "encoder-num-layers", "vocab-extra-ids",
        "disable-mamba-mem-eff-path", "linear-num-key-heads", "yaml-cfg"}) {
    ASSERT_TRUE(UnmodelledFlagReason(name).has_value()) << name;
    EXPECT_EQ(FindMegatronFlag(std::string(name)), nullptr) << name;
  }
}

TEST(IgnoredFlagsTest, UnknownFlagsAreSkippedAndRecordedAsNotModelled) {
  std::vector<std::string> notes;
  const v1::JobSpec job = ParseFull(
      "--frobnicate 1 2 -3 --num-layers 4 --shiny-new-switch "
      "--use-legacy-models --vocab-size 8",
      &notes);
  EXPECT_EQ(job.model().num_layers(), 4u);
  EXPECT_THAT(notes, IsEmpty());
  std::vector<std::string> flags, reasons;
  for (const v1::UnmodelledSetting& setting : job.unmodelled_settings()) {
    flags.push_back(setting.flag());
    reasons.push_back(setting.reason());
  }
  EXPECT_THAT(flags, ElementsAre("--frobnicate", "--shiny-new-switch", "--use-legacy-models"));
  EXPECT_THAT(reasons, ElementsAre(std::string(UnknownFlagReason()),
                                   std::string(UnknownFlagReason()), HasSubstr("legacy")));
}

TEST(IgnoredFlagsTest, MemoryIrrelevantFlagsAreSilent) {
  std::vector<std::string> notes;
  ParseFull(
      "--vocab-size 8 --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine "
      "--lr-warmup-iters 100 --adam-beta1 0.9 --adam-beta2 0.95 "
      "--adam-eps 1e-8 --weight-decay 0.1 --clip-grad 1.0 --seed 1234 "
      "--init-method-std 0.02 --tokenizer-model /m --data-path 1.0 /d "
      "--split 99,1,0 --eval-iters 10 --eval-interval 1000 --save /s "
      "--load /l --save-interval 500 --log-interval 1 "
      "--log-throughput --tensorboard-dir /tb --wandb-project p "
      "--distributed-backend nccl --distributed-timeout-minutes 60 "
      "--use-mcore-models --manual-gc --manual-gc-interval 10 "
      "--overlap-grad-reduce --overlap-param-gather "
      "--no-gradient-accumulation-fusion --attention-softmax-in-fp32 "
      "--rotary-base 10000 --rotary-percent 0.5 --mscale 1.0 "
      "--norm-epsilon 1e-5 --apply-layernorm-1p "
      "--moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2 "
      "--moe-permute-fusion --no-check-for-nan-in-loss-and-grad "
      "--train-iters 100 --train-samples 1000 --exit-interval 5 "
      "--use-checkpoint-opt_param-scheduler",
      &notes);
  EXPECT_THAT(notes, IsEmpty());
}

}  // namespace
}  // namespace oomguard
