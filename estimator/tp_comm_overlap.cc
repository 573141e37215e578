// `--tp-comm-overlap`: Megatron-LM's rule and TE's userbuffers (see
// tp_comm_overlap.h).
#include "estimator/tp_comm_overlap.h"

#include "estimator/software_versions.h"

namespace oomguard {
namespace {

// The first TE release with the wgrad all-gather userbuffers (proj_wgrad,
// fc2_wgrad: "Use userbuffers for MXFP8 wgrad all-gather overlap", TE #1982)
// and with initialize_ub's quantization_modes (one set of buffers per mode).
constexpr SoftwareVersion kFirstTeWithWgradUserbuffers{2, 7};

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

bool TpCommOverlapAccepted(const ValidatedJob& j) {
  return !j.parallelism.tp_comm_overlap || j.parallelism.sp;
}

std::optional<std::string> TpCommOverlapConflict(const ValidatedJob& j) {
  if (TpCommOverlapAccepted(j)) return std::nullopt;
  return "it needs sequence parallelism: TP > 1 and --sequence-parallel";
}

double TpCommOverlapUserbufferBytes(const ValidatedJob& j) {
  if (!j.parallelism.tp_comm_overlap) return 0;
  const bool wgrad = j.runtime.transformer_engine >= kFirstTeWithWgradUserbuffers;
  const double all_gather = wgrad ? 8 : 6;  // layers_all_gather_overlap
  const double reduce_scatter = 4;          // layers_reduce_scatter_overlap
  const double elements = static_cast<double>(j.training.micro_batch * j.training.seq) /
                          static_cast<double>(j.parallelism.cp) *
                          static_cast<double>(j.model.hidden);
  const bool fp8 = j.precision.fp8;
  double set_bytes = (all_gather * (fp8 ? 1 : 2) + reduce_scatter * 2) * elements;
  // Megatron-LM adds a bf16 set (UserBufferQuantizationMode.NONE) for the
  // layers --first-last-layers-bf16 keeps out of FP8.
  if (fp8 && wgrad && j.precision.bf16_layers_at_start + j.precision.bf16_layers_at_end > 0) {
    set_bytes += (all_gather + reduce_scatter) * 2 * elements;
  }
  return set_bytes;
}

double TpCommOverlapWorkspaceBytes(const ValidatedJob& j) {
  return j.parallelism.tp_comm_overlap ? 3 * 32 * kMiB : 0;
}

}  // namespace oomguard
