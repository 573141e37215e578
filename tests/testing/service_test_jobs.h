// Jobs the service tests send, each as a JobSource the way clients send it.
#ifndef OOMGUARD_TESTS_SERVICE_TEST_JOBS_H_
#define OOMGUARD_TESTS_SERVICE_TEST_JOBS_H_

#include <string>

#include "oomguard/v1/admission.pb.h"
#include "tests/testing/examples.h"

namespace oomguard::testing {

inline v1::JobSource MegatronSource(const std::string& preset, const std::string& args,
                                    uint32_t num_gpus) {
  v1::JobSource source;
  v1::MegatronJob* job = source.mutable_megatron();
  if (!preset.empty()) job->set_preset(preset);
  job->set_args(args);
  job->set_num_gpus(num_gpus);
  return source;
}

// Llama-3-8B on 8 GPUs, TP1 PP1 DP8, distributed optimizer, seq 4096,
// micro-batch 1, full recompute: obviously fits on an 80 GB GPU.
inline v1::JobSource Llama3With8GpusFits() {
  return MegatronSource("llama3-8b",
                        "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
                        "--use-distributed-optimizer --seq-length 4096 --micro-batch-size 1 "
                        "--global-batch-size 128 --recompute-granularity full "
                        "--recompute-method uniform --recompute-num-layers 1",
                        8);
}

// A Check of that job on an H100-SXM-80GB, without the per-rank report
// unless `omit_report` is false:
// what the feedback tests check before reporting on it.
inline v1::CheckRequest Llama3With8GpusCheck(bool omit_report = true) {
  v1::CheckRequest request;
  *request.mutable_job() = Llama3With8GpusFits();
  request.set_gpu_name("H100-SXM-80GB");
  request.set_omit_report(omit_report);
  return request;
}

// The same job as its whole Megatron-LM command line (no preset).
inline std::string Llama3With8GpusCommandLine() {
  return "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
         "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
         "--max-position-embeddings 8192 --position-embedding-type rope "
         "--normalization RMSNorm --swiglu --disable-bias-linear "
         "--untie-embeddings-and-output-weights --vocab-size 128256 --bf16 "
         "--attention-dropout 0.0 --hidden-dropout 0.0 "
         "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
         "--use-distributed-optimizer --seq-length 4096 --micro-batch-size 1 "
         "--global-batch-size 128 --recompute-granularity full --recompute-method uniform "
         "--recompute-num-layers 1";
}

// DeepSeek-V3 (671B) on 8 GPUs: obviously does not fit anywhere.
inline v1::JobSource DeepSeekV3With8Gpus() {
  return MegatronSource("deepseek-v3",
                        "--expert-model-parallel-size 8 --seq-length 4096 "
                        "--micro-batch-size 1 --use-distributed-optimizer",
                        8);
}

// A realistic DeepSeek-V3 pre-training job (1024 GPUs, TP2 PP16 VPP2 EP64,
// selective recompute), without expandable segments: the shipped example.
inline std::string DeepSeekV3With1024GpusArgs() { return ExampleArgsLine(kDeepSeekV3With1024Gpus); }

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_SERVICE_TEST_JOBS_H_
