#include "jobscript/check_request.h"

#include "common/valid_utf8.h"

namespace oomguard {

v1::CheckRequest BuildCheckRequest(const LaunchCheck& launch) {
  v1::CheckRequest request;
  if (!launch.gpu_name.empty()) {
    request.set_gpu_name(launch.gpu_name);
  } else {
    request.set_gpu_memory_bytes(launch.gpu_memory_bytes);
  }
  v1::JobSource* source = request.mutable_job();
  v1::MegatronJob* megatron = source->mutable_megatron();
  if (!launch.preset.empty()) megatron->set_preset(launch.preset);
  megatron->mutable_argv()->Assign(launch.megatron_args.begin(), launch.megatron_args.end());
  for (size_t i = 0; i < launch.megatron_arg_sources.size(); ++i) {
    if (!launch.megatron_arg_sources[i].empty()) {
      (*megatron->mutable_argv_sources())[static_cast<uint32_t>(i)] =
          ValidUtf8(launch.megatron_arg_sources[i]);
    }
  }
  megatron->set_num_gpus(launch.num_gpus);
  source->set_gpus_per_node(launch.gpus_per_node);
  for (const auto& [name, value] : launch.env) {
    (*source->mutable_env())[ValidUtf8(name)] = ValidUtf8(value);
  }
  if (launch.safety_margin.has_value()) {
    request.mutable_policy()->set_safety_margin(*launch.safety_margin);
  }
  // A script's or a command line's words are bytes; the request's strings
  // must be UTF-8 (common/valid_utf8.h): the maps' above, the others here.
  MakeStringsValidUtf8(request);
  return request;
}

}  // namespace oomguard
