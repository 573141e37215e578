// Reads a HuggingFace `config.json` into a ModelSpec.
//
// Supported families (by `model_type`): llama, mistral, mixtral, qwen2,
// qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, kimi_k2 (and
// Moonlight, which is deepseek_v3). Vision-language configs fall back to
// their `text_config`. Malformed JSON, a missing required key or an
// unsupported model_type is an InvalidArgument naming the key and value.
// The text is read in linear time within the bounds of config_json.h (4 MiB,
// 64 levels of nesting).
#ifndef OOMGUARD_JOBSPEC_HF_CONFIG_H_
#define OOMGUARD_JOBSPEC_HF_CONFIG_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Parses config.json text. The result sets every model field the config
// determines, including what Megatron-Bridge sets for the family (SwiGLU,
// RMSNorm, no linear bias, RoPE, dropout 0, qk-layernorm for Qwen3, MLA for
// DeepSeek, grouped GEMM + alltoall for MoE, the MoE layer pattern from
// first_k_dense_replace, mtp_num_layers from num_nextn_predict_layers).
absl::StatusOr<v1::ModelSpec> ParseHfConfig(std::string_view json);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_HF_CONFIG_H_
