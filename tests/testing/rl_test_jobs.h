// RL jobs the service, server and HTTP tests send: a veRL config (Megatron
// workers, vLLM colocated) for Qwen3-8B on one node of 8 GPUs, as the
// JobSource clients send.
#ifndef OOMGUARD_TESTS_TESTING_RL_TEST_JOBS_H_
#define OOMGUARD_TESTS_TESTING_RL_TEST_JOBS_H_

#include <string>

#include "oomguard/v1/admission.pb.h"

namespace oomguard::testing {

// veRL's resolved config: actor TP 2, vLLM TP 2 at gpu_memory_utilization
// `fraction`, 8192-token training and log-prob budgets, prompts of 1024 and
// responses of 3072 tokens, the reference offloaded; `comment` is a YAML
// comment line (a config that differs only there is the same job).
inline std::string VerlQwen3Yaml(const std::string& fraction = "0.5",
                                 const std::string& comment = "# a veRL run") {
  return comment + R"(
actor_rollout_ref:
  hybrid_engine: true
  model:
    path: Qwen/Qwen3-8B
  actor:
    strategy: megatron
    use_dynamic_bsz: true
    ppo_max_token_len_per_gpu: 8192
    megatron:
      tensor_model_parallel_size: 2
      pipeline_model_parallel_size: 1
      param_offload: false
      grad_offload: false
      optimizer_offload: false
  rollout:
    name: vllm
    gpu_memory_utilization: )" +
         fraction + R"(
    tensor_model_parallel_size: 2
    log_prob_max_token_len_per_gpu: 8192
  ref:
    megatron:
      param_offload: true
data:
  max_prompt_length: 1024
  max_response_length: 3072
trainer:
  n_gpus_per_node: 8
  nnodes: 1
)";
}

// That config as JobSource.rl, the model from the qwen3-8b preset.
inline v1::JobSource VerlQwen3Source(const std::string& fraction = "0.5",
                                     const std::string& comment = "# a veRL run") {
  v1::JobSource source;
  source.mutable_rl()->set_config_yaml(VerlQwen3Yaml(fraction, comment));
  source.mutable_rl()->set_preset("qwen3-8b");
  return source;
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_RL_TEST_JOBS_H_
