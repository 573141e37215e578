#include "jobspec/environment.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

// Applies the PyTorch allocator configuration ("key:value,key:value") held
// by the variable `name`. PyTorch's parser (c10/core/AllocatorConfig.cpp,
// AcceleratorAllocatorConfig::parseArgs; c10/cuda/CUDAAllocatorConfig.cpp
// before 2.9) refuses an expandable_segments value other than True or False
// at start-up ("Expected a single True/False argument for
// expandable_segments"), so such a value is refused here too. PyTorch
// compares case-sensitively; "true" and "TRUE" are read here as meant. Other
// keys do not change what oomguard models and are not checked.
absl::Status ApplyAllocatorConfig(absl::string_view name, absl::string_view config,
                                  v1::RuntimeSpec* runtime) {
  for (absl::string_view option : absl::StrSplit(config, ',')) {
    std::pair<absl::string_view, absl::string_view> key_value =
        absl::StrSplit(option, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(key_value.first) != "expandable_segments") {
      continue;
    }
    const absl::string_view value = absl::StripAsciiWhitespace(key_value.second);
    if (absl::EqualsIgnoreCase(value, "true")) {
      runtime->set_expandable_segments(true);
    } else if (absl::EqualsIgnoreCase(value, "false")) {
      runtime->set_expandable_segments(false);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": expandable_segments must be True or False, got ", Quote(value),
                       " (PyTorch refuses it at start-up)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyEnvironment(const std::map<std::string, std::string>& env, v1::JobSpec* job) {
  if (job == nullptr) return absl::InvalidArgumentError("job is null");
  // PyTorch >= 2.9 reads PYTORCH_ALLOC_CONF first and falls back to the
  // older PYTORCH_CUDA_ALLOC_CONF.
  auto config = env.find("PYTORCH_ALLOC_CONF");
  if (config == env.end()) config = env.find("PYTORCH_CUDA_ALLOC_CONF");
  if (config != env.end()) {
    OOMGUARD_RETURN_IF_ERROR(
        ApplyAllocatorConfig(config->first, config->second, job->mutable_runtime()));
  }
  if (auto nccl = env.find("NCCL_GRAPH_REGISTER"); nccl != env.end()) {
    job->mutable_runtime()->set_nccl_graph_register_disabled(
        absl::StripAsciiWhitespace(nccl->second) == "0");
  }
  if (auto core = env.find("OOMGUARD_MEGATRON_CORE_VERSION"); core != env.end()) {
    job->mutable_runtime()->set_megatron_core_version(
        std::string(absl::StripAsciiWhitespace(core->second)));
  }
  if (auto te = env.find("OOMGUARD_TRANSFORMER_ENGINE_VERSION"); te != env.end()) {
    job->mutable_runtime()->set_transformer_engine_version(
        std::string(absl::StripAsciiWhitespace(te->second)));
  }
  if (auto arch = env.find("OOMGUARD_GPU_ARCHITECTURE"); arch != env.end()) {
    const absl::string_view value = absl::StripAsciiWhitespace(arch->second);
    if (value == "hopper") {
      job->mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_HOPPER);
    } else if (value == "blackwell") {
      job->mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_BLACKWELL);
    } else if (value == "volta" || value == "turing") {
      job->mutable_runtime()->set_gpu_architecture(v1::GPU_ARCHITECTURE_VOLTA_TURING);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "OOMGUARD_GPU_ARCHITECTURE: expected hopper, blackwell, volta or turing, got ",
          Quote(value)));
    }
  }
  if (auto adam = env.find("OOMGUARD_OPTIMIZER_IMPLEMENTATION"); adam != env.end()) {
    const absl::string_view value = absl::StripAsciiWhitespace(adam->second);
    if (value == "fused") {
      job->mutable_runtime()->set_optimizer_implementation(v1::OPTIMIZER_IMPLEMENTATION_FUSED);
    } else if (value == "torch") {
      job->mutable_runtime()->set_optimizer_implementation(v1::OPTIMIZER_IMPLEMENTATION_TORCH);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "OOMGUARD_OPTIMIZER_IMPLEMENTATION: expected fused or torch, got ", Quote(value)));
    }
  }
  // deep_ep HybridEPBuffer reads it with int(), which refuses anything but a
  // whole number.
  if (auto ranks = env.find("NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN"); ranks != env.end()) {
    const absl::string_view value = absl::StripAsciiWhitespace(ranks->second);
    uint32_t count = 0;
    if (!absl::SimpleAtoi(value, &count)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN: expected a whole number of ranks, got ",
          Quote(value)));
    }
    job->mutable_runtime()->set_hybrid_ep_ranks_per_nvlink_domain(count);
  }
  return absl::OkStatus();
}

absl::Status ApplyEnvironment(const std::map<std::string, std::string>& env, v1::RlJobSpec* job) {
  if (job == nullptr) return absl::InvalidArgumentError("job is null");
  OOMGUARD_RETURN_IF_ERROR(ApplyEnvironment(env, job->mutable_actor()));
  if (job->has_critic()) {
    OOMGUARD_RETURN_IF_ERROR(ApplyEnvironment(env, job->mutable_critic()->mutable_job()));
  }
  return absl::OkStatus();
}

}  // namespace oomguard
