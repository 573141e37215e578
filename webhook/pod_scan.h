// One pod template of a Kubernetes workload, read for the admission webhook:
// which container launches Megatron-LM (its `command` + `args` after
// Kubernetes' `$(VAR)` expansion with the container's literal `env`, read
// by jobscript/job_script.h; `bash -c SCRIPT` sees that env exported), the
// GPUs it and the whole pod request (`resources.limits["nvidia.com/gpu"]`,
// else `requests`), and the GPU product the pod is pinned to (nodeSelector
// nvidia.com/gpu.product, else a required node affinity `In` on that label
// with one value). Init containers never count.
#ifndef OOMGUARD_WEBHOOK_POD_SCAN_H_
#define OOMGUARD_WEBHOOK_POD_SCAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/deadline.h"
#include "jobscript/job_script.h"
#include "webhook/json_node.h"

namespace oomguard::webhook {

inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
inline constexpr char kGpuResource[] = "nvidia.com/gpu";

// Most GPUs one container (or one node) may ask for; far above any real
// one, it keeps the world size arithmetic exact.
inline constexpr uint64_t kMaxGpusPerContainer = 4096;

// What one pod template says.
struct PodScan {
  // A container launches Megatron-LM; the first one (in `containers`
  // order) is read.
  bool launch = false;
  ScriptJob script;
  // Where: `spec.containers[0] ("trainer")`.
  std::string container;
  // The launching container's literal env values.
  std::map<std::string, std::string> env;
  // nvidia.com/gpu of the launching container, and of all containers.
  uint64_t launch_gpus = 0;
  uint64_t total_gpus = 0;
  // Containers that launch Megatron-LM.
  int launches = 0;
  // From the node selector or affinity; empty when neither pins one.
  std::string gpu_product;
  std::string gpu_product_source;

  // JSON Pointers (json_node.h) of the launching container and of the
  // containers that request GPUs, in `containers` order.
  std::string launch_pointer;
  std::vector<std::string> gpu_container_pointers;

  // The GPUs of one pod that are training ranks: the launching
  // container's when there is one (sidecars are not ranks), else all.
  uint64_t PodGpus() const { return launch ? launch_gpus : total_gpus; }
  // The containers those GPUs belong to (JSON Pointers), by the same rule.
  std::vector<std::string> TrainingContainers() const {
    return launch ? std::vector<std::string>{launch_pointer} : gpu_container_pointers;
  }
};

// Reads a PodSpec. InvalidArgument naming the field path and value for a
// field of the wrong type, a GPU quantity that is not a whole number, or
// command/args the job script reader refuses; the reader's ResourceExhausted /
// DeadlineExceeded (jobscript/job_script.h) for a launch it cannot read within
// its bounds or before `deadline`.
absl::StatusOr<PodScan> ScanPodSpec(const JsonNode& spec, const Deadline& deadline = Deadline());

// How many bytes the `$(NAME)` expansions of one container may produce, its
// env values and command words together: 1 MiB, the limit on the words the
// job script reader takes (kMaxCommandBytes, jobscript/job_script.h). Each value references
// the ones before it, so a few hundred bytes of doubling references would
// otherwise grow without bound; the expansion stops as it passes the limit,
// its work linear in what it produced.
inline constexpr size_t kMaxExpandedBytes = kMaxCommandBytes;

// Kubernetes' expansion of `$(NAME)` in command, args and env values:
// references to names in `env` are replaced, `$$` is a literal `$`, anything
// else stays as written. What it produces is taken from `budget`;
// InvalidArgument (naming the limit) once the expansion would pass it.
// `replaced` (when not null) gets the name of each reference it replaced
// ("WANDB_API_KEY" for `$(WANDB_API_KEY)`), once, in order.
absl::StatusOr<std::string> ExpandKubernetesReferences(
    absl::string_view text, const std::map<std::string, std::string>& env, size_t& budget,
    std::vector<std::string>* replaced = nullptr);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_POD_SCAN_H_
