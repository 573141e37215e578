// Tests of `oomguard check` (tools/check_command.h) against the real server
// in-process on a loopback port: job files, precedence of the GPU sources,
// every exit code, the verdict lines and the JSON output.
#include "tools/check_command.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "oomguard/v1/admission.pb.h"
#include "server/server.h"
#include "tests/jobscript/job_script_test_util.h"
#include "tests/testing/rl_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Llama-3-8B on 8 GPUs, distributed optimizer, full recompute: fits an H100.
constexpr char kFitsArgs[] =
    "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
    "--use-distributed-optimizer --seq-length 4096 --micro-batch-size 1 "
    "--global-batch-size 128 "
    "--recompute-granularity full --recompute-method uniform "
    "--recompute-num-layers 1";

std::vector<std::string> Split(const std::string& s) {
  return absl::StrSplit(s, ' ', absl::SkipEmpty());
}

class CheckCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override { dir_ = testing::MakeTempDir(); }
  void TearDown() override { std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()); }

  static std::string Server() { return absl::StrCat("127.0.0.1:", server_->grpc_port()); }

  // Runs `oomguard check --server <ours> <args>`.
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", Server()});
    out_.clear();
    err_.clear();
    return RunCheckCommand(args, out_, err_);
  }

  std::string File(const std::string& name, const std::string& text) {
    const std::string path = absl::StrCat(dir_, "/", name);
    testing::WriteFile(path, text);
    return path;
  }

  static server::Server* server_;
  std::string dir_;
  std::string out_, err_;
};

server::Server* CheckCommandTest::server_ = nullptr;

TEST_F(CheckCommandTest, FitsFromArguments) {
  std::vector<std::string> args = {"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--"};
  for (const std::string& a : Split(kFitsArgs)) args.push_back(a);
  EXPECT_EQ(Run(args), kCheckFits) << err_;
  EXPECT_THAT(out_, StartsWith("oomguard: Fits: PP rank 0 peaks at "));
  EXPECT_THAT(out_, HasSubstr("usable on H100-SXM-80GB"));
  // Then the planner's clearly faster configuration on the same 8 GPUs
  // (kClearlyFaster: at least 10 % more tokens/GPU/s), as a line of its own.
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 2) << out_;
  EXPECT_THAT(out_, HasSubstr("\noomguard: faster on the same GPUs: TP 1 PP 2 "));
}

TEST_F(CheckCommandTest, DoesNotFitFromScript) {
  const std::string script = File("oom.sh", R"sh(#!/bin/bash
#OOMGUARD preset=deepseek-v3 gpu=H100 gpus=8
ARGS=(--expert-model-parallel-size 8 --seq-length 4096 --micro-batch-size 1)
torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" --use-distributed-optimizer
)sh");
  EXPECT_EQ(Run({"--script", script}), kCheckDoesNotFit) << err_;
  const std::vector<std::string> lines = absl::StrSplit(out_, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 2u) << out_;
  EXPECT_THAT(lines[0], AllOf(StartsWith("oomguard: Does not fit: PP rank "),
                              HasSubstr("usable on H100-SXM-80GB"), HasSubstr(" over")));
  EXPECT_THAT(lines[1], StartsWith("oomguard: step 1: "));
}

// A hybrid (Mamba) job launched by pretrain_mamba.py (which runs
// pretrain_hybrid.py) with the older spelling of the hybrid stack spec:
// judged, with the verdict of the same arguments given to check.
TEST_F(CheckCommandTest, HybridScriptIsJudgedAsItsArguments) {
  const std::string args =
      "--hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 8 "
      "--hybrid-layer-pattern M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M- "
      "--spec megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec "
      "--micro-batch-size 4 --global-batch-size 32 --seq-length 1024 "
      "--max-position-embeddings 1024 --tensor-model-parallel-size 2 --context-parallel-size 4 "
      "--use-distributed-optimizer --bf16";
  const std::string script =
      File("hybrid.sh", absl::StrCat("#!/bin/bash\n#OOMGUARD gpu=H100\n"
                                     "torchrun --nproc_per_node 8 pretrain_mamba.py ",
                                     args, "\n"));
  ASSERT_EQ(Run({"--script", script}), kCheckFits) << out_ << err_;
  const std::string from_script = out_;
  EXPECT_THAT(from_script, StartsWith("oomguard: Fits: PP rank 0 peaks at "));
  std::vector<std::string> direct = {"--gpu", "H100", "--gpus", "8", "--"};
  for (const std::string& a : Split(args)) direct.push_back(a);
  ASSERT_EQ(Run(direct), kCheckFits) << out_ << err_;
  EXPECT_EQ(from_script, out_);
}

// The ways people ask Slurm for 32 GPUs (issue 11): judged without the GPU
// count restated, the GRES type matched against the GPU catalog.
TEST_F(CheckCommandTest, SbatchSizesAreReadAsSlurmComputesThem) {
  const std::string launch = absl::StrCat(
      "srun python pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
      "--ffn-hidden-size 14336 --seq-length 4096 --max-position-embeddings 4096 "
      "--micro-batch-size 1 --global-batch-size 128 --use-distributed-optimizer --bf16\n");
  for (const char* sbatch : {"#SBATCH --nodes=4 --gpus-per-node=8\n", "#SBATCH -N 4 --gres=gpu:8\n",
                             "#SBATCH --gpus=32 --ntasks=32\n",
                             "#SBATCH --nodes=4 --ntasks-per-node=8 --gpus-per-node=h100:8\n",
                             "#SBATCH -N4 --ntasks-per-node=8 --gpus-per-task=1\n"}) {
    SCOPED_TRACE(sbatch);
    const std::string script = File("job.sh", absl::StrCat("#!/bin/bash\n", sbatch, launch));
    const int code = Run({"--gpu", "h100", "--json", "--script", script});
    EXPECT_NE(code, kCheckNotJudged) << out_ << err_;
    EXPECT_THAT(code, ::testing::AnyOf(kCheckFits, kCheckFitsWithSettings, kCheckDoesNotFit));
    EXPECT_THAT(err_, Not(HasSubstr("ignored")));
  }
  // The GRES type names the GPU.
  const std::string typed = File(
      "typed.sh", absl::StrCat("#SBATCH -N 4 --ntasks-per-node 8 --gres=gpu:h100:8\n", launch));
  EXPECT_NE(Run({"--script", typed}), kCheckNotJudged) << out_ << err_;
  const std::string unknown_type = File(
      "a100l.sh", absl::StrCat("#SBATCH -N 4 --ntasks-per-node 8 --gres=gpu:a100l:8\n", launch));
  EXPECT_EQ(Run({"--script", unknown_type}), kCheckNotJudged) << out_ << err_;
  EXPECT_THAT(out_, HasSubstr("the service does not know the GPU \"a100l\""));
}

TEST_F(CheckCommandTest, TheLaunchsWorldSizeWinsOverSbatchAndItIsNoted) {
  const std::string script = File("job.sh", R"sh(#!/bin/bash
#SBATCH --nodes=4 --gpus-per-node=h100:8
srun torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \
  --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \
  --micro-batch-size 1 --global-batch-size 128 --bf16
)sh");
  EXPECT_NE(Run({"--json", "--script", script}), kCheckNotJudged) << out_ << err_;
  EXPECT_THAT(err_, HasSubstr("note: the launch starts 16 ranks (torchrun --nnodes 2 x "
                              "--nproc-per-node 8) but #SBATCH allocates 32 GPUs"));
  v1::CheckResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &response).ok()) << out_;
  EXPECT_EQ(response.report().num_gpus(), 16u);
}

TEST_F(CheckCommandTest, ABadSbatchValueIsAnInvalidJobNamingIt) {
  const std::string script = File(
      "bad.sh", "#!/bin/bash\n#SBATCH --nodes=abc --gpus-per-node=8\ntorchrun pretrain_gpt.py\n");
  EXPECT_EQ(Run({"--gpu", "H100", "--script", script}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("invalid job script: line 2: #SBATCH --nodes=abc: expected a node "
                              "count"));
}

// Llama-3-8B, micro-batch 2, full recompute, at sequence length `seq`.
std::string Llama8bAtSeq(int seq) {
  return absl::StrCat("--use-distributed-optimizer --seq-length ", seq,
                      " --micro-batch-size 2 --global-batch-size 128 --recompute-granularity "
                      "full --recompute-method uniform --recompute-num-layers 1");
}

TEST_F(CheckCommandTest, FitsWithSettingsSaysWhatToAdd) {
  // The first sequence length where only expandable segments make it fit.
  int code = -1;
  int seq = 6016;
  while (seq < 8704 && code != kCheckFitsWithSettings) {
    seq += 128;
    std::vector<std::string> args = {"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--"};
    for (const std::string& a : Split(Llama8bAtSeq(seq))) args.push_back(a);
    code = Run(args);
  }
  ASSERT_EQ(code, kCheckFitsWithSettings) << "no sequence length fits only with settings";
  EXPECT_THAT(out_, StartsWith("oomguard: Fits only with PYTORCH_CUDA_ALLOC_CONF="
                               "expandable_segments:True: PP rank 0 peaks at "));
  EXPECT_THAT(out_, HasSubstr("\noomguard: add to the job script: export "
                              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"));

  // The same job submitted with the setting in its environment fits...
  const std::string header =
      "oomguard-job 1\ngpus=8\ngpu=H100\n"
      "env.PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n\n";
  const std::string script = absl::StrCat("#OOMGUARD preset=llama3-8b\ntorchrun pretrain_gpt.py ",
                                          Llama8bAtSeq(seq), "\n");
  EXPECT_EQ(Run({"--job-file", File("env", header + script)}), kCheckFits) << out_ << err_;
  // ... unless the script itself says otherwise.
  EXPECT_EQ(
      Run({"--job-file", File("env2", header + "export PYTORCH_CUDA_ALLOC_CONF=\n" + script)}),
      kCheckFitsWithSettings)
      << out_ << err_;
}

TEST_F(CheckCommandTest, JobFileSchedulerWinsOverDirectiveAndSaysSo) {
  const std::string job = File("job", absl::StrCat(R"(oomguard-job 1
gpus=8
gpus_per_node=8
gpu=h200
partition=big

#!/bin/bash
#OOMGUARD preset=llama3-8b gpu=A100-40GB gpus=16
torchrun pretrain_gpt.py )",
                                                   kFitsArgs, "\n"));
  EXPECT_EQ(Run({"--job-file", job, "--json"}), kCheckFits) << err_;
  EXPECT_THAT(err_, HasSubstr("oomguard check: note: #OOMGUARD gpu=A100-40GB ignored: the "
                              "scheduler's allocation says h200\n"));
  EXPECT_THAT(err_, HasSubstr("#OOMGUARD gpus=16 ignored: the scheduler's allocation says 8"));
  v1::CheckResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &response).ok()) << out_;
  EXPECT_EQ(response.gpu_name(), "H200-141GB");
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS);
  EXPECT_GT(response.peak_device_bytes(), uint64_t{10} << 30);
  EXPECT_THAT(out_, HasSubstr("\"headroom_bytes\""));

  // The command line wins over both.
  EXPECT_EQ(Run({"--job-file", job, "--gpu", "A100-40GB", "--json"}), kCheckDoesNotFit) << err_;
  EXPECT_THAT(err_, HasSubstr("the scheduler's gpu=h200 ignored: the command line says A100-40GB"));
}

TEST_F(CheckCommandTest, DefaultGpuOnlyWhenNothingElseNamesOne) {
  const std::string header = "oomguard-job 1\ngpus=8\ndefault_gpu=H200\n\n";
  const std::string body = absl::StrCat("torchrun pretrain_gpt.py ", kFitsArgs, "\n");
  EXPECT_EQ(
      Run({"--json", "--job-file", File("a", header + "#OOMGUARD preset=llama3-8b\n" + body)}),
      kCheckFits);
  EXPECT_THAT(out_, HasSubstr("\"gpu_name\":\"H200-141GB\""));
  EXPECT_EQ(Run({"--json", "--job-file",
                 File("b", header + "#OOMGUARD preset=llama3-8b gpu=H100\n" + body)}),
            kCheckFits);
  EXPECT_THAT(out_, HasSubstr("\"gpu_name\":\"H100-SXM-80GB\""));
}

TEST_F(CheckCommandTest, NotJudged) {
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script",
                 File("hello.sh", "#!/bin/bash\necho hello\n")}),
            kCheckNotJudged);
  EXPECT_EQ(out_,
            "oomguard: not judged: no Megatron-LM training launch "
            "(torchrun/python ... "
            "pretrain_gpt.py) found in the job\n");

  const std::string skip =
      File("skip.sh", "#OOMGUARD skip\ntorchrun pretrain_gpt.py --num-layers 2\n");
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script", skip}), kCheckNotJudged);
  EXPECT_THAT(out_, HasSubstr("#OOMGUARD skip"));
  // --ignore-skip judges it anyway (here: invalid, the model is incomplete).
  EXPECT_NE(Run({"--gpu", "H100", "--gpus", "8", "--ignore-skip", "--script", skip}),
            kCheckNotJudged);

  EXPECT_EQ(Run({"--gpu", "H100", "--preset", "llama3-8b", "--", "--micro-batch-size", "1"}),
            kCheckNotJudged);
  EXPECT_THAT(out_, HasSubstr("GPU count is unknown"));
  EXPECT_EQ(Run({"--gpus", "8", "--preset", "llama3-8b", "--", "--micro-batch-size", "1"}),
            kCheckNotJudged);
  EXPECT_THAT(out_, HasSubstr("GPU type is unknown"));
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--", "--use-custom-fsdp",
                 "--micro-batch-size", "1"}),
            kCheckNotJudged);
  EXPECT_THAT(out_, HasSubstr("FSDP"));
}

// Issue 27: a job with a flag oomguard does not model (or know) is not
// judged by default (exit 5, naming each flag and its reason); with
// --judge-unmodelled it is, the verdict line saying what it was judged
// without and the notes under it saying why. --no-judge-unmodelled asks not
// to, whatever the server's default.
TEST_F(CheckCommandTest, UnmodelledFlagsAreNotJudgedUnlessAsked) {
  std::vector<std::string> args = {"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--"};
  for (const std::string& a : Split(kFitsArgs)) args.push_back(a);
  args.insert(args.end(), {"--tp-comm-overlap-cfg", "x.yaml", "--no-such-flag"});
  EXPECT_EQ(Run(args), kCheckNotJudged) << err_;
  EXPECT_THAT(out_, AllOf(StartsWith("oomguard: not judged: oomguard does not model "
                                     "--tp-comm-overlap-cfg, --no-such-flag, so the job is not "
                                     "judged. --tp-comm-overlap-cfg: a custom TP communication "
                                     "overlap configuration is not read"),
                          HasSubstr(" --no-such-flag: not a flag of Megatron-LM up to "
                                    "Megatron-Core 0.20.0 (commit d98e8a64dd): a newer version's "
                                    "flag, a custom script's or a typo. To judge it as if they "
                                    "were absent: policy.judge_unmodelled (oomguard check "
                                    "--judge-unmodelled, or the server's --judge_unmodelled).\n")));

  std::vector<std::string> judged = args;
  judged.insert(judged.begin(), "--judge-unmodelled");
  EXPECT_EQ(Run(judged), kCheckFits) << err_;
  EXPECT_THAT(out_, StartsWith("oomguard: Fits, judged without modelling --tp-comm-overlap-cfg, "
                               "--no-such-flag: PP rank 0 peaks at "));
  EXPECT_THAT(out_, AllOf(HasSubstr("\noomguard: note: --tp-comm-overlap-cfg is not modelled (a "
                                    "custom TP communication overlap configuration"),
                          HasSubstr("\noomguard: note: --no-such-flag is not modelled (not a flag "
                                    "of Megatron-LM")));

  std::vector<std::string> refused = args;
  refused.insert(refused.begin(), "--no-judge-unmodelled");
  EXPECT_EQ(Run(refused), kCheckNotJudged) << err_;
}

TEST_F(CheckCommandTest, UnknownGpuFromSchedulerIsNotJudgedFromUserIsInvalid) {
  const std::string body =
      absl::StrCat("#OOMGUARD preset=llama3-8b\ntorchrun pretrain_gpt.py ", kFitsArgs, "\n");
  EXPECT_EQ(Run({"--job-file", File("a", "oomguard-job 1\ngpus=8\ngpu=tesla\n\n" + body)}),
            kCheckNotJudged);
  EXPECT_THAT(out_, AllOf(HasSubstr("not judged: the service does not know the GPU \"tesla\""),
                          HasSubstr("gpu_name")));
  EXPECT_EQ(Run({"--gpus", "8", "--gpu", "tesla", "--script", File("b", body)}), kCheckUsage);
  EXPECT_THAT(err_, AllOf(HasSubstr("invalid job: gpu_name"), HasSubstr("tesla")));
}

TEST_F(CheckCommandTest, InvalidJobs) {
  // The server's INVALID_ARGUMENT, with its message.
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--",
                 "--tensor-model-parallel-size", "3", "--micro-batch-size", "1"}),
            kCheckUsage);
  EXPECT_THAT(err_, AllOf(StartsWith("oomguard check: invalid job: "),
                          HasSubstr("not divisible by TP x PP")));
  // The script parser's.
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script",
                 File("q.sh", "torchrun pretrain_gpt.py --num-layers \"2\n")}),
            kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("invalid job script: line 1: unterminated double quote"));
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script", File("d.sh", "#OOMGUARD gpus=x\n")}),
            kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("#OOMGUARD gpus=x"));
}

// A Linux path is bytes (issue 25, item 8): a script or an argument after
// `--` with bytes that are not UTF-8 is judged like the same job without
// them (their bytes do not change memory), where the request used to fail
// to serialize ("libprotobuf ERROR", exit 2 with the server's parse error).
// A value that matters is refused naming its flag.
TEST_F(CheckCommandTest, BytesThatAreNotUtf8AreJudged) {
  const std::string launch =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --use-distributed-optimizer --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 128 --recompute-granularity full "
      "--recompute-method uniform --recompute-num-layers 1";
  const std::string header = "#!/bin/bash\n#OOMGUARD preset=llama3-8b gpu=H100 gpus=8\n";
  ASSERT_EQ(Run({"--script", File("plain.sh", header + launch + "\n")}), kCheckFits) << err_;
  const std::string judged = out_;
  ASSERT_THAT(judged, StartsWith("oomguard: Fits: PP rank 0 peaks at "));

  EXPECT_EQ(Run({"--script", File("bytes.sh", header + launch +
                                                  " --data-path /data/\xff\xfe/text_document "
                                                  "--tokenizer-model '/tok/\xc3(.model'\n")}),
            kCheckFits)
      << err_;
  EXPECT_EQ(out_, judged);
  EXPECT_THAT(err_, Not(HasSubstr("invalid job")));

  std::vector<std::string> args = {"--gpu", "H100", "--gpus", "8", "--preset", "llama3-8b", "--"};
  for (const std::string& a : Split(kFitsArgs)) args.push_back(a);
  std::vector<std::string> with_path = args;
  with_path.insert(with_path.end(), {"--data-path", "/data/\xff"});
  EXPECT_EQ(Run(with_path), kCheckFits) << err_;
  EXPECT_THAT(out_, StartsWith("oomguard: Fits: PP rank 0 peaks at "));

  // A number with such a byte: the server's INVALID_ARGUMENT names the flag.
  std::vector<std::string> bad_number = args;
  bad_number.insert(bad_number.end(), {"--num-layers", "32\xff"});
  EXPECT_EQ(Run(bad_number), kCheckUsage);
  EXPECT_THAT(err_, AllOf(StartsWith("oomguard check: invalid job: "), HasSubstr("--num-layers")));
}

// Issue 25's reproducers. Qwen3-235B-A22B with 40 micro-batches in groups
// of 24 (the last of 16 = PP): rank 15 holds 16 micro-batches of its loss
// chunk, not 1 (Estimator.PartialMicroBatchGroupFillsTheLossChunk). It was
// "fits only with expandable segments" (rank 1, 80.3 GiB, 95% bound).
TEST_F(CheckCommandTest, PartialMicroBatchGroupOverflowsTheLastRank) {
  std::vector<std::string> args = {"--gpu",           "H100", "--gpus", "64", "--preset",
                                   "qwen3-235b-a22b", "--"};
  for (const std::string& a :
       Split("--pipeline-model-parallel-size 16 --num-virtual-stages-per-pipeline-rank 6 "
             "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split "
             "--expert-model-parallel-size 4 --micro-batch-size 1 --global-batch-size 160 "
             "--seq-length 4096 --recompute-granularity full --recompute-method block "
             "--recompute-num-layers 1 --use-distributed-optimizer "
             "--microbatch-group-size-per-virtual-pipeline-stage 24")) {
    args.push_back(a);
  }
  EXPECT_EQ(Run(args), kCheckDoesNotFit) << err_;
  EXPECT_THAT(out_, StartsWith("oomguard: Does not fit: PP rank 15 peaks at "));
}

// Llama 3 70B, TP 8 PP 8 VPP 5, DP 1, global batch 20: a last group of 4 <
// PP, which Megatron-Core refuses. It was "Fits"; now an invalid job.
TEST_F(CheckCommandTest, MicroBatchGroupMegatronRefusesIsAnInvalidJob) {
  std::vector<std::string> args = {"--gpu", "H100", "--gpus", "64", "--preset", "llama3-70b", "--"};
  for (const std::string& a :
       Split("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
             "--num-virtual-stages-per-pipeline-rank 5 --micro-batch-size 1 --global-batch-size 20 "
             "--seq-length 4096")) {
    args.push_back(a);
  }
  EXPECT_EQ(Run(args), kCheckUsage) << out_;
  EXPECT_THAT(err_, StartsWith("oomguard check: invalid job: training.global_batch_size = 20: "
                               "Megatron-Core's interleaved schedule refuses a last micro-batch "
                               "group of 4 < PP 8"));
}

TEST_F(CheckCommandTest, IncompleteOnlyBecauseOfRuntimeValuesIsNotJudged) {
  const std::string script = File("rt.sh", R"sh(#OOMGUARD preset=llama3-70b gpu=H100 gpus=8
torchrun pretrain_gpt.py --seq-length 8192 --micro-batch-size $(touch /tmp/oomguard_never) --bf16
)sh");
  EXPECT_EQ(Run({"--script", script}), kCheckNotJudged) << err_;
  EXPECT_THAT(out_, HasSubstr("without what the script leaves to run time (--micro-batch-size "
                              "$(touch /tmp/oomguard_never)) the job is incomplete: "));
  EXPECT_THAT(err_, HasSubstr("note: line 2: dropped --micro-batch-size $(touch"));
  EXPECT_NE(access("/tmp/oomguard_never", F_OK), 0);
}

TEST_F(CheckCommandTest, ArgumentsWithQuotesAndBlanksReachTheServerIntact) {
  // The layout holds | ( ) *; the tokenizer path a blank and a quote. Were the
  // joined line split differently, the server would refuse the layout or
  // the quoting (INVALID_ARGUMENT, exit 2) instead of giving a verdict.
  // 16 micro-batches per DP rank (512 / DP 32): one group of PP, as the
  // interleaved schedule needs (interleaved_schedule_rules.h).
  const int code = Run({"--gpu",
                        "H100",
                        "--gpus",
                        "1024",
                        "--preset",
                        "deepseek-v3",
                        "--json",
                        "--",
                        "--tensor-model-parallel-size",
                        "2",
                        "--pipeline-model-parallel-size",
                        "16",
                        "--expert-model-parallel-size",
                        "64",
                        "--expert-tensor-parallel-size",
                        "1",
                        "--sequence-parallel",
                        "--pipeline-model-parallel-layout",
                        "Et|(tt|)*30mL",
                        "--seq-length",
                        "4096",
                        "--micro-batch-size",
                        "1",
                        "--global-batch-size",
                        "512",
                        "--use-distributed-optimizer",
                        "--tokenizer-model",
                        "/data/it's a dir/tok.model"});
  EXPECT_TRUE(code == kCheckFits || code == kCheckFitsWithSettings || code == kCheckDoesNotFit)
      << code << ": " << err_;
  v1::CheckResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &response).ok()) << out_;
  // 16 pipeline ranks, as the layout says.
  EXPECT_EQ(response.report().ranks_size(), 16);
}

// Issue 25 items 5 and 10: a script oomguard cannot read within its bounds
// (array-doubling lines past the expansion work; a 32,768-pair data blend
// past 65,536 words) exits 6, where the Slurm hook's policy decides
// (closed: refused), not 2 (invalid) or 5 (no launch: accepted), and says
// which bound. The doubling script took 17 s of CPU before.
TEST_F(CheckCommandTest, AScriptPastTheReadersBoundsIsLeftToThePolicy) {
  const std::string doubling = File("doubling.sh", testing::ArrayDoublingScript("a b"));
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script", doubling}), kCheckUnavailable);
  EXPECT_THAT(err_, HasSubstr("oomguard check: cannot read the job script: line 19: the script's "
                              "variable expansions pass 16 MiB of work"));
  EXPECT_EQ(out_, "");
  const std::string blend = File("blend.sh", testing::DataBlendScript(32768));
  EXPECT_EQ(Run({"--gpu", "H100", "--gpus", "8", "--script", blend}), kCheckUnavailable);
  EXPECT_THAT(err_, HasSubstr("cannot read the job script: line 2: the command has more than "
                              "65536 words"));
}

// Issue 25 item 12: a secret exported by the script and substituted into a
// numeric flag was echoed in the error slurmctld logs. The error names the
// variable; the value appears nowhere.
TEST_F(CheckCommandTest, AValueFromAVariableIsNamedNeverEchoed) {
  const std::string script = File("secret.sh", R"sh(#!/bin/bash
#OOMGUARD preset=llama3-8b gpu=H100 gpus=8
export WANDB_API_KEY=sk-secret-123
torchrun pretrain_gpt.py --micro-batch-size $WANDB_API_KEY
)sh");
  EXPECT_EQ(Run({"--script", script}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("invalid job: job.megatron: --micro-batch-size: expected a "
                              "non-negative integer, got the value of $WANDB_API_KEY (not shown)"));
  EXPECT_THAT(err_ + out_, Not(HasSubstr("sk-secret")));
}

TEST_F(CheckCommandTest, UsageErrors) {
  std::string out, err;
  EXPECT_EQ(RunCheckCommand({"--gpus", "8", "--", "--fp16"}, out, err), kCheckUsage);
  EXPECT_THAT(err, HasSubstr("--server: expected HOST:PORT"));
  EXPECT_EQ(Run({"--gpus", "eight", "--", "--fp16"}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("--gpus: expected a whole number in [1, 1048576], got \"eight\""));
  EXPECT_EQ(Run({"--gpus", "8", "--script", "a", "--job-file", "b"}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("exactly one of"));
  EXPECT_EQ(Run({"--gpus", "8", "--job-file", absl::StrCat(dir_, "/missing")}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("--job-file: cannot read"));
  EXPECT_EQ(Run({"--bogus"}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("unknown flag \"--bogus\""));
  EXPECT_EQ(Run({"--help"}), kCheckFits);
  EXPECT_THAT(out_, HasSubstr("exit: 0 fits, 3 fits with settings"));
}

TEST_F(CheckCommandTest, ServiceDownOrSilentIsUnavailableWithinTheDeadline) {
  std::vector<std::string> args = {"--gpu",     "H100",          "--gpus", "8", "--preset",
                                   "llama3-8b", "--deadline-ms", "700",    "--"};
  for (const std::string& a : Split(kFitsArgs)) args.push_back(a);
  std::string out, err;
  std::vector<std::string> down = args;
  down.insert(down.begin(), {"--server", absl::StrCat("127.0.0.1:", testing::PickFreePort())});
  EXPECT_EQ(RunCheckCommand(down, out, err), kCheckUnavailable);
  EXPECT_THAT(err, HasSubstr("unavailable: UNAVAILABLE"));

  // A listener that never speaks: the deadline ends the call.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::vector<std::string> silent = args;
  silent.insert(silent.begin(), {"--server", absl::StrCat("127.0.0.1:", ntohs(addr.sin_port))});
  const auto start = std::chrono::steady_clock::now();
  err.clear();
  EXPECT_EQ(RunCheckCommand(silent, out, err), kCheckUnavailable);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_THAT(err, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_GE(seconds, 0.6);
  EXPECT_LT(seconds, 2.0);
}

// A server that keeps its checks (--store) gives each verdict an id: check
// prints it on stderr, where the Slurm hook reads it, once, and a new one
// for each check; a server without a store gives none, and check prints no
// such line.
TEST_F(CheckCommandTest, CheckIdLineFromAServerThatKeepsItsChecks) {
  server::ServerOptions options;
  options.grpc_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.service.log_requests = false;
  options.store_url = absl::StrCat("sqlite:", dir_, "/checks.db");
  absl::StatusOr<std::unique_ptr<server::Server>> keeping = server::Server::Start(options);
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  std::vector<std::string> args = {"--server", absl::StrCat("127.0.0.1:", (*keeping)->grpc_port()),
                                   "--gpu",    "H100",
                                   "--gpus",   "8",
                                   "--preset", "llama3-8b",
                                   "--"};
  for (const std::string& a : Split(kFitsArgs)) args.push_back(a);
  const ::testing::Matcher<std::string> one_id_line =
      ::testing::MatchesRegex("oomguard check: check-id: [0-9a-f]{32}\n");
  std::string out, err;
  ASSERT_EQ(RunCheckCommand(args, out, err), kCheckFits) << err;
  EXPECT_THAT(err, one_id_line);
  std::string out2, err2;
  ASSERT_EQ(RunCheckCommand(args, out2, err2), kCheckFits) << err2;
  EXPECT_THAT(err2, one_id_line);
  EXPECT_NE(err, err2);
  EXPECT_EQ(out, out2);  // The verdict itself is the same.

  args.erase(args.begin(), args.begin() + 2);
  EXPECT_EQ(Run(args), kCheckFits) << err_;
  EXPECT_THAT(err_, Not(HasSubstr("check-id")));
}

// --rl-config: the RL job's verdict on its binding phase, a line per phase;
// without --gpu, H100-SXM-80GB, noted on stderr; --json has every phase.
TEST_F(CheckCommandTest, RlConfig) {
  const std::string config = File("verl.yaml", testing::VerlQwen3Yaml());
  const int code = Run({"--rl-config", config, "--preset", "qwen3-8b", "--gpu", "H100"});
  ASSERT_TRUE(code == kCheckFits || code == kCheckDoesNotFit) << code << err_;
  EXPECT_THAT(out_, StartsWith(code == kCheckFits ? "oomguard: Fits: " : "oomguard: Does not fit"));
  EXPECT_THAT(out_, HasSubstr("\noomguard: phase generate: "));
  EXPECT_THAT(out_, HasSubstr(" (binding)\n"));
  EXPECT_EQ(err_, "");
  EXPECT_EQ(Run({"--rl-config", config, "--preset", "qwen3-8b"}), code) << err_;
  EXPECT_THAT(err_, HasSubstr("note: no --gpu given: the RL step is checked on H100-SXM-80GB"));
  EXPECT_EQ(Run({"--rl-config", config, "--preset", "qwen3-8b", "--json"}), code) << err_;
  v1::CheckResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &response).ok()) << out_;
  EXPECT_FALSE(response.rl_step().phases().empty());
  EXPECT_TRUE(response.rl_step().has_actor_update());
  EXPECT_EQ(Run({"--rl-config", File("bad.yaml", "actor_rollout_ref: [unclosed\n"), "--preset",
                 "qwen3-8b"}),
            kCheckUsage);
  EXPECT_EQ(Run({"--rl-config", "/nonexistent.yaml"}), kCheckUsage);
  EXPECT_THAT(err_, HasSubstr("--rl-config"));
}

}  // namespace
}  // namespace oomguard
