// Issue 26, item 1: a Megatron-LM flag written at its default changes
// nothing. For every flag of the table that takes a value and has a default
// in Megatron-LM (megatron/training/arguments.py, or the config dataclass
// its ArgumentGroupFactory reads, at the commit of
// tests/data/megatron_lm_arguments.txt), each representative job (whole
// command lines: a few models x parallel layouts x precision settings) with
// the flag written at that default gets the same EstimateReport, byte for
// byte, as the job without it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "estimator/estimator.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/shell_words.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

// Megatron-LM's default of each flag that has one, as the words after the
// flag.
const std::map<std::string, std::vector<std::string>>& Defaults() {
  static const auto* const kDefaults = new std::map<std::string, std::vector<std::string>>{
      // arguments.py add_argument defaults.
      {"make-vocab-size-divisible-by", {"128"}},
      {"position-embedding-type", {"learned_absolute"}},
      {"kv-lora-rank", {"32"}},
      {"qk-head-dim", {"128"}},
      {"qk-pos-emb-head-dim", {"64"}},
      {"v-head-dim", {"128"}},
      {"moe-layer-freq", {"1"}},
      {"optimizer", {"adam"}},
      {"num-distributed-optimizer-instances", {"1"}},
      {"main-grads-dtype", {"fp32"}},
      {"main-params-dtype", {"fp32"}},
      {"exp-avg-dtype", {"fp32"}},
      {"exp-avg-sq-dtype", {"fp32"}},
      {"optimizer-offload-fraction", {"1.0"}},
      {"cuda-graph-modules", {}},
      // TransformerConfig (and ModelParallelConfig) field defaults.
      {"normalization", {"LayerNorm"}},
      {"hidden-dropout", {"0.1"}},
      {"attention-dropout", {"0.1"}},
      {"moe-router-topk", {"2"}},
      {"moe-token-dispatcher-type", {"allgather"}},
      {"moe-flex-dispatcher-backend", {"deepep"}},
      {"tensor-model-parallel-size", {"1"}},
      {"pipeline-model-parallel-size", {"1"}},
      {"context-parallel-size", {"1"}},
      {"expert-model-parallel-size", {"1"}},
      {"wgrad-deferral-limit", {"0"}},
      {"attention-backend", {"auto"}},
      {"cp-comm-type", {"p2p"}},
      {"transformer-impl", {"transformer_engine"}},
      {"cross-entropy-fusion-impl", {"native"}},
      {"cpu-offloading-num-layers", {"0"}},
      {"fp8-recipe", {"delayed"}},
      {"fp4-recipe", {"nvfp4"}},
      {"num-layers-at-start-in-bf16", {"1"}},
      {"num-layers-at-end-in-bf16", {"1"}},
      {"cuda-graph-impl", {"none"}},
      {"mamba-state-dim", {"128"}},
      {"mamba-head-dim", {"64"}},
      {"mamba-num-groups", {"8"}},
      // Megatron-FSDP's (arguments.py _add_distributed_args,
      // _add_mixed_precision_args).
      {"data-parallel-sharding-strategy", {"optim_grads_params"}},
      {"outer-dp-sharding-strategy", {"no_shard"}},
      {"megatron-fsdp-main-params-dtype", {"fp32"}},
      {"megatron-fsdp-main-grads-dtype", {"auto"}},
      {"megatron-fsdp-version", {"1"}},
  };
  return *kDefaults;
}

// The flags of the table that take values but have no default to write:
// Megatron-LM's default is None (unset: the model's sizes, the batch, the
// optional features) or a value its parser refuses (num-layers 0).
const std::set<std::string>& WithoutDefault() {
  static const auto* const kFlags = new std::set<std::string>{
      "num-layers",
      "hidden-size",
      "ffn-hidden-size",
      "num-attention-heads",
      "num-query-groups",
      "kv-channels",
      "vocab-size",
      "tokenizer-type",
      "max-position-embeddings",
      "q-lora-rank",
      "num-experts",
      "moe-ffn-hidden-size",
      "moe-shared-expert-intermediate-size",
      "moe-router-dtype",
      "moe-expert-capacity-factor",
      "moe-flex-dispatcher-num-sms",
      "moe-deepep-num-sms",
      "moe-hybridep-num-sms",
      "moe-expert-rank-capacity-factor",
      "mtp-num-layers",
      "hybrid-layer-pattern",
      "hybrid-override-pattern",
      "spec",
      "mamba-num-heads",
      "mamba-training-ssm-states-dtype",
      "expert-tensor-parallel-size",
      "num-layers-per-virtual-pipeline-stage",
      "num-virtual-stages-per-pipeline-rank",
      "virtual-pipeline-model-parallel-size",
      "microbatch-group-size-per-virtual-pipeline-stage",
      "decoder-first-pipeline-num-layers",
      "decoder-last-pipeline-num-layers",
      "pipeline-model-parallel-layout",
      "micro-batch-size",
      "global-batch-size",
      "seq-length",
      "rampup-batch-size",
      "step-batch-size-schedule",
      "recompute-granularity",
      "recompute-method",
      "recompute-num-layers",
      "recompute-modules",
      "offload-modules",
      "fp8-format",
      "fp4-format",
      "cuda-graph-scope",
      "suggested-communication-unit-size",
      "hierarchical-context-parallel-sizes",
      "output-logit-dtype",
  };
  return *kFlags;
}

struct Representative {
  int gpus;
  std::string line;
};

std::vector<Representative> Representatives() {
  const std::string gpt =
      "--num-layers 8 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
      "--max-position-embeddings 2048 --vocab-size 50304 --micro-batch-size 2 "
      "--global-batch-size 64";
  const std::string llama =
      "--num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
      "--group-query-attention --num-query-groups 8 --vocab-size 128256 --seq-length 4096 "
      "--max-position-embeddings 8192 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear "
      "--untie-embeddings-and-output-weights --micro-batch-size 1 --global-batch-size 32";
  const std::string moe =
      "--num-layers 4 --hidden-size 2048 --ffn-hidden-size 6144 --num-attention-heads 32 "
      "--group-query-attention --num-query-groups 4 --kv-channels 128 --qk-layernorm "
      "--num-experts 128 --moe-router-topk 8 --moe-ffn-hidden-size 768 --moe-grouped-gemm "
      "--moe-token-dispatcher-type alltoall --vocab-size 151936 --seq-length 4096 "
      "--max-position-embeddings 40960 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear "
      "--untie-embeddings-and-output-weights --micro-batch-size 1 --global-batch-size 32";
  const std::vector<std::string> precisions = {
      "--bf16",
      "--bf16 --use-distributed-optimizer",
      "--bf16 --use-distributed-optimizer --use-precision-aware-optimizer --grad-reduce-in-bf16",
      "--bf16 --use-distributed-optimizer --use-precision-aware-optimizer "
      "--optimizer-cpu-offload",
      "--fp16 --use-distributed-optimizer",
      "--bf16 --use-megatron-fsdp",
  };
  std::vector<Representative> jobs;
  for (const std::string& precision : precisions) {
    for (const char* layout :
         {"", "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2",
          "--tensor-model-parallel-size 2 --context-parallel-size 2"}) {
      jobs.push_back({8, absl::StrCat(gpt, " ", layout, " ", precision)});
      jobs.push_back({8, absl::StrCat(llama, " ", layout, " ", precision)});
    }
    for (const char* layout :
         {"--expert-model-parallel-size 8",
          "--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 4 "
          "--expert-tensor-parallel-size 1 --pipeline-model-parallel-size 2"}) {
      jobs.push_back({8, absl::StrCat(moe, " ", layout, " ", precision)});
    }
  }
  return jobs;
}

absl::StatusOr<v1::EstimateReport> EstimateLine(const std::vector<std::string>& args, int gpus) {
  v1::JobSpec job;
  absl::Status parsed = ApplyMegatronArgs(args, ArgsMode::kFullCommandLine, &job, nullptr);
  if (!parsed.ok()) return parsed;
  job.mutable_parallelism()->set_num_gpus(gpus);
  return Estimate(job);
}

TEST(FlagsAtDefault, EveryFlagWithAValueHasItsDefaultListedOrNone) {
  for (const MegatronFlag& flag : MegatronFlags()) {
    if (flag.unimplemented || flag.arity == FlagArity::kSwitch) continue;
    EXPECT_TRUE(Defaults().count(flag.name) + WithoutDefault().count(flag.name) == 1)
        << flag.Spelling() << ": list its Megatron-LM default, or that it has none";
  }
  for (const auto& [name, words] : Defaults()) {
    EXPECT_NE(FindMegatronFlag(name), nullptr) << name;
  }
}

TEST(FlagsAtDefault, AFlagWrittenAtItsDefaultGivesTheSameReport) {
  int compared = 0;
  for (const Representative& rep : Representatives()) {
    absl::StatusOr<std::vector<std::string>> base_args = SplitArgumentLine(rep.line);
    ASSERT_TRUE(base_args.ok()) << rep.line;
    absl::StatusOr<v1::EstimateReport> base = EstimateLine(*base_args, rep.gpus);
    ASSERT_TRUE(base.ok()) << base.status() << " for: " << rep.line;
    const std::string base_bytes = base->SerializeAsString();
    for (const auto& [name, words] : Defaults()) {
      const std::string spelling = absl::StrCat("--", name);
      if (absl::StrContains(absl::StrCat(rep.line, " "), absl::StrCat(spelling, " "))) continue;
      std::vector<std::string> args = *base_args;
      args.push_back(spelling);
      args.insert(args.end(), words.begin(), words.end());
      absl::StatusOr<v1::EstimateReport> with = EstimateLine(args, rep.gpus);
      EXPECT_TRUE(with.ok()) << with.status() << "\n  for: " << rep.line << " " << spelling;
      if (!with.ok()) continue;
      EXPECT_EQ(with->SerializeAsString(), base_bytes)
          << spelling << " at its default changes the report of: " << rep.line;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace oomguard
