// Tests of the writer beside the flag table (jobspec/megatron_args_writer.h):
// what it writes is what the parser reads back, entry by entry and for whole
// jobs (the presets with varied parallel, recompute, offload and overlap
// settings), and the words are those a user writes.
#include "jobspec/megatron_args_writer.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "jobspec/job_field.h"
#include "jobspec/megatron_args.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/presets.h"
#include "jobspec/shell_words.h"
#include "tests/testing/megatron_lm_arguments.h"

namespace oomguard {
namespace {

using google::protobuf::FieldDescriptor;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

JobField Field(const std::string& path) {
  absl::StatusOr<JobField> field = JobField::Find(path);
  EXPECT_TRUE(field.ok()) << field.status();
  return *field;
}

// `args` applied to an empty JobSpec as overrides.
v1::JobSpec Parsed(const std::vector<std::string>& args) {
  v1::JobSpec job;
  const absl::Status status = ApplyMegatronArgs(args, ArgsMode::kOverrides, &job, nullptr);
  EXPECT_TRUE(status.ok()) << status << ": " << JoinShellWords(args);
  return job;
}

// Jobs with the field `f` set to each value a test tries: integers at both
// ends, reals in every flag's range, both switch values, every enum value
// (each alone and all of them for a list), text a shell would quote.
std::vector<v1::JobSpec> SampleJobs(const JobField& f) {
  std::vector<v1::JobSpec> jobs;
  auto add = [&](auto set) {
    v1::JobSpec job;
    set(job);
    jobs.push_back(job);
  };
  const FieldDescriptor& d = f.descriptor();
  switch (d.cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      for (uint32_t v : {0u, 7u, 4294967295u}) {
        add([&](v1::JobSpec& j) { d.is_repeated() ? f.AddUint32(&j, v) : f.SetUint32(&j, v); });
      }
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      for (double v : {0.5, 0.25, 1e-05}) add([&](v1::JobSpec& j) { f.SetDouble(&j, v); });
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      for (bool v : {true, false}) add([&](v1::JobSpec& j) { f.SetBool(&j, v); });
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      for (int i = 0; i < d.enum_type()->value_count(); ++i) {
        const int v = d.enum_type()->value(i)->number();
        add([&](v1::JobSpec& j) { d.is_repeated() ? f.AddEnum(&j, v) : f.SetEnum(&j, v); });
      }
      if (d.is_repeated()) {
        add([&](v1::JobSpec& j) {
          for (int i = 1; i < d.enum_type()->value_count(); ++i) {
            f.AddEnum(&j, d.enum_type()->value(i)->number());
          }
        });
      }
      break;
    default:
      for (const char* v : {"full_iteration", "Et|(tt|)*30mL", "two words"}) {
        add([&](v1::JobSpec& j) {
          d.is_repeated() ? f.AddString(&j, v) : f.SetString(&j, v);
          if (d.is_repeated()) f.AddString(&j, "attn");
        });
      }
  }
  return jobs;
}

// For every entry of the table that writes: each value it writes, read back
// by the parser, is the value it wrote; and it writes some value.
TEST(MegatronArgsWriterTest, EveryWritingEntryReadsBackWhatItWrites) {
  int entries = 0;
  for (const MegatronFlag& flag : MegatronFlags()) {
    if (flag.write == nullptr) continue;
    ++entries;
    const JobField field = Field(flag.fields.front());
    int written = 0;
    for (const v1::JobSpec& job : SampleJobs(field)) {
      std::optional<std::vector<std::string>> values = flag.write(job);
      if (!values) continue;
      ++written;
      std::vector<std::string> args = {flag.Spelling()};
      args.insert(args.end(), values->begin(), values->end());
      EXPECT_TRUE(field.SameIn(Parsed(args), job))
          << JoinShellWords(args) << " does not read back as " << job.ShortDebugString();
    }
    EXPECT_GT(written, 0) << flag.Spelling() << " writes none of the values tried";
  }
  // All but the refused flags, the flags read without a field and those
  // resolved with others (the next test names them): 103 when written.
  EXPECT_GE(entries, 103);
}

// The flags that do not write say why: refused, no field, or resolved with
// other flags.
TEST(MegatronArgsWriterTest, TheFlagsThatDoNotWrite) {
  std::vector<std::string> silent;
  for (const MegatronFlag& flag : MegatronFlags()) {
    if (flag.write == nullptr && !flag.unimplemented && !flag.fields.empty()) {
      silent.push_back(flag.name);
    }
  }
  EXPECT_THAT(silent, ElementsAre("num-query-groups", "group-query-attention", "tokenizer-type",
                                  "step-batch-size-schedule", "cross-entropy-loss-fusion",
                                  "cross-entropy-fusion-impl",
                                  // Its switches write every gradient buffer.
                                  "main-grads-dtype"));
}

TEST(MegatronArgsWriterTest, WritesAFieldWithTheFlagAUserWrites) {
  v1::JobSpec job;
  job.mutable_parallelism()->set_tensor_model_parallel_size(4);
  job.mutable_parallelism()->set_sequence_parallel(true);
  job.mutable_model()->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  job.mutable_model()->set_add_bias_linear(false);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  job.mutable_precision()->set_main_grads_dtype(v1::DTYPE_BF16);
  job.mutable_precision()->set_optimizer_offload_fraction(1.0);
  job.mutable_recompute()->add_modules(v1::RECOMPUTE_MODULE_CORE_ATTN);
  job.mutable_recompute()->add_modules(v1::RECOMPUTE_MODULE_LAYERNORM);
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_NONE);
  job.mutable_runtime()->add_cuda_graph_modules("full_iteration");
  for (uint32_t layer : {0, 0, 0, 1, 1}) job.mutable_model()->add_moe_layer_pattern(layer);
  struct Case {
    std::string path;
    std::vector<std::string> words;
  };
  for (const Case& c : std::vector<Case>{
           {"parallelism.tensor_model_parallel_size", {"--tensor-model-parallel-size", "4"}},
           {"parallelism.sequence_parallel", {"--sequence-parallel"}},
           // The main flag and word, not a legacy spelling.
           {"model.position_embedding", {"--position-embedding-type", "rope"}},
           {"model.add_bias_linear", {"--disable-bias-linear"}},
           {"precision.params_dtype", {"--bf16"}},
           // Megatron-LM takes --main-grads-dtype bf16 only with the
           // precision-aware optimizer; the switch gives the bf16 buffer.
           {"precision.main_grads_dtype", {"--grad-reduce-in-bf16"}},
           {"precision.optimizer_offload_fraction", {"--optimizer-offload-fraction", "1.0"}},
           {"recompute.modules", {"--recompute-modules", "core_attn", "layernorm"}},
           {"runtime.cuda_graph_impl", {"--cuda-graph-impl", "none"}},
           {"runtime.cuda_graph_modules", {"--cuda-graph-scope", "full_iteration"}},
           {"model.moe_layer_pattern", {"--moe-layer-freq", "([0]*3+[1]*2)"}},
           // Unset: Megatron-LM's default takes no flag.
           {"parallelism.pipeline_model_parallel_size", {}},
           {"parallelism.overlap_moe_expert_parallel_comm", {}},
       }) {
    absl::StatusOr<std::vector<std::string>> words = WriteJobField(job, c.path);
    ASSERT_TRUE(words.ok()) << c.path << ": " << words.status();
    EXPECT_EQ(*words, c.words) << c.path;
  }
}

TEST(MegatronArgsWriterTest, AFieldNoFlagSetsOrAValueNoFlagGivesIsAnError) {
  v1::JobSpec job;
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_model()->set_activation(v1::ACTIVATION_GELU);
  job.mutable_model()->set_add_bias_linear(true);
  EXPECT_EQ(WriteJobField(job, "parallelism.num_gpus").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(WriteJobField(job, "model.activation").status().code(),
            absl::StatusCode::kFailedPrecondition);
  const absl::Status bias = WriteJobField(job, "model.add_bias_linear").status();
  EXPECT_EQ(bias.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(bias.message()), ::testing::HasSubstr("model.add_bias_linear"));
}

// The switch a change that turns a field off drops.
TEST(MegatronArgsWriterTest, SwitchFlagForIsTheSwitchThatTurnsTheFieldOn) {
  EXPECT_EQ(SwitchFlagFor("runtime.use_nccl_ub"), "--use-nccl-ub");
  EXPECT_EQ(SwitchFlagFor("parallelism.tp_comm_overlap"), "--tp-comm-overlap");
  EXPECT_EQ(SwitchFlagFor("precision.use_distributed_optimizer"), "--use-distributed-optimizer");
}

// The flag a change that clears a field drops: the switch of a bool field,
// the flag that writes any other.
TEST(MegatronArgsWriterTest, DroppedFlagForIsTheFlagThatSetsTheField) {
  EXPECT_EQ(DroppedFlagFor("runtime.use_nccl_ub"), "--use-nccl-ub");
  EXPECT_EQ(DroppedFlagFor("recompute.cpu_offloading_num_layers"), "--cpu-offloading-num-layers");
}

// The arguments that turn a base into a job: the changed fields in table
// order; a switch turned off cannot be written, and says so.
TEST(MegatronArgsWriterTest, WritesTheFieldsThatDifferFromTheBase) {
  v1::JobSpec base;
  base.mutable_parallelism()->set_tensor_model_parallel_size(2);
  base.mutable_parallelism()->set_num_gpus(64);
  base.mutable_runtime()->set_use_nccl_ub(true);
  v1::JobSpec job = base;
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  job.mutable_parallelism()->set_tensor_model_parallel_size(4);
  job.mutable_parallelism()->set_sequence_parallel(true);
  job.mutable_parallelism()->set_num_gpus(128);  // Not a flag: left out.
  job.mutable_runtime()->set_use_nccl_ub(false);
  const WrittenArgs written = WriteMegatronArgs(job, base);
  EXPECT_THAT(written.args, ElementsAre("--tensor-model-parallel-size", "4", "--sequence-parallel",
                                        "--recompute-granularity", "selective"));
  EXPECT_THAT(written.unwritten, ElementsAre("runtime.use_nccl_ub"));
  EXPECT_THAT(ChangedFlagFields(base, job),
              ElementsAre("parallelism.tensor_model_parallel_size", "parallelism.sequence_parallel",
                          "recompute.granularity", "runtime.use_nccl_ub"));
  EXPECT_THAT(WriteMegatronArgs(base, base).args, IsEmpty());
}

// The variations each preset is written with: parallel sizes, virtual
// stages, uneven and accounted pipeline splits, a layout, recompute of each
// kind, CPU offload of the optimizer and of activations, the overlaps,
// precision and CUDA graphs.
const std::vector<std::string>& Variations() {
  static const auto* const kVariations = new std::vector<std::string>{
      "",
      "--tensor-model-parallel-size 4 --sequence-parallel --pipeline-model-parallel-size 2 "
      "--num-virtual-stages-per-pipeline-rank 3 --context-parallel-size 2 --micro-batch-size 2 "
      "--global-batch-size 1024 --seq-length 8192 --use-distributed-optimizer --tp-comm-overlap",
      "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3 "
      "--decoder-last-pipeline-num-layers 5 --account-for-embedding-in-pipeline-split "
      "--account-for-loss-in-pipeline-split --recompute-granularity full --recompute-method "
      "block --recompute-num-layers 2 --optimizer-cpu-offload --optimizer-offload-fraction 0.75 "
      "--use-precision-aware-optimizer --main-params-dtype fp16 --exp-avg-dtype bf16",
      "--pipeline-model-parallel-layout Et|(tt|)*30mL --expert-model-parallel-size 8 "
      "--expert-tensor-parallel-size 1 --overlap-moe-expert-parallel-comm "
      "--moe-shared-expert-overlap --recompute-granularity selective --recompute-modules "
      "moe_act layernorm mla_up_proj --moe-grouped-gemm --fp8-format hybrid --fp8-recipe "
      "blockwise --fp8-param-gather",
      "--cpu-offloading-num-layers 3 --fine-grained-activation-offloading "
      "--offload-modules core_attn attn_norm --cuda-graph-impl transformer_engine "
      "--cuda-graph-scope attn mlp --use-nccl-ub --no-gradient-accumulation-fusion "
      "--attention-backend fused --grad-reduce-in-bf16 --recompute-activations --fp16",
  };
  return *kVariations;
}

// Why a field of a preset job is not written: a value no flag gives
// (Megatron-LM's defaults set explicitly, fp32 parameters) or a field the
// resolution of several flags sets.
const std::set<std::string>& NotWritten() {
  static const auto* const kPaths = new std::set<std::string>{
      "model.activation",        // GELU, Megatron-LM's default, has no flag.
      "model.add_bias_linear",   // On, the default: only --disable-bias-linear.
      "model.num_query_groups",  // --group-query-attention with --num-query-groups.
      "precision.params_dtype",  // fp32 is the absence of --bf16 and --fp16.
      // fp16 parameters' fp16 gradient buffer is the absence of
      // --accumulate-allreduce-grads-in-fp32.
      "precision.main_grads_dtype",
      "training.cross_entropy_fusion",  // --cross-entropy-loss-fusion with its impl.
  };
  return *kPaths;
}

// parse(write(job)) is the job: every field of the table the writer writes
// reads back as it was, and only the fields it says it cannot write differ.
TEST(MegatronArgsWriterTest, PresetJobsReadBackAsWritten) {
  int jobs = 0;
  for (const PresetInfo& preset : ListPresets()) {
    for (const std::string& variation : Variations()) {
      v1::JobSpec job;
      absl::StatusOr<v1::ModelSpec> model = FindPreset(preset.name);
      ASSERT_TRUE(model.ok()) << preset.name;
      *job.mutable_model() = *model;
      job.mutable_parallelism()->set_num_gpus(64);
      const std::vector<std::string> args = absl::StrSplit(variation, ' ', absl::SkipEmpty());
      ASSERT_TRUE(ApplyMegatronArgs(args, ArgsMode::kOverrides, &job, nullptr).ok()) << variation;

      const WrittenArgs written = WriteMegatronArgs(job);
      const std::string where = absl::StrCat(preset.name, " with ", variation);
      EXPECT_EQ(ChangedFlagFields(job, Parsed(written.args)), written.unwritten) << where;
      // Every flag written is Megatron-LM's (tests/data/megatron_lm_arguments.txt).
      EXPECT_THAT(testing::FlagsMegatronLmLacks(written.args), IsEmpty()) << where;
      for (const std::string& path : written.unwritten) {
        EXPECT_TRUE(NotWritten().count(path) > 0) << where << ": " << path;
      }
      // As one line, the shell splits it back into the same words.
      absl::StatusOr<std::vector<std::string>> words =
          SplitArgumentLine(JoinShellWords(written.args));
      ASSERT_TRUE(words.ok()) << where;
      EXPECT_EQ(*words, written.args) << where;
      ++jobs;
    }
  }
  EXPECT_GE(jobs, 55);
}

}  // namespace
}  // namespace oomguard
