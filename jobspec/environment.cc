#include "jobspec/environment.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace oomguard {
namespace {

// Applies a PyTorch allocator configuration ("key:value,key:value").
void ApplyAllocatorConfig(absl::string_view config, v1::RuntimeSpec* runtime) {
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
    }
  }
}

}  // namespace

void ApplyEnvironment(const std::map<std::string, std::string>& env, v1::JobSpec* job) {
  if (job == nullptr) return;
  // PyTorch >= 2.9 reads PYTORCH_ALLOC_CONF first and falls back to the
  // older PYTORCH_CUDA_ALLOC_CONF.
  auto config = env.find("PYTORCH_ALLOC_CONF");
  if (config == env.end()) config = env.find("PYTORCH_CUDA_ALLOC_CONF");
  if (config != env.end()) {
    ApplyAllocatorConfig(config->second, job->mutable_runtime());
  }
  if (auto nccl = env.find("NCCL_GRAPH_REGISTER"); nccl != env.end()) {
    job->mutable_runtime()->set_nccl_graph_register_disabled(
        absl::StripAsciiWhitespace(nccl->second) == "0");
  }
}

}  // namespace oomguard
