// `--tp-comm-overlap` (Transformer Engine's userbuffers overlap the TP
// all-gathers and reduce-scatters with the GEMMs they feed), in one place:
// Megatron-LM's rule for it (admission flags a job that breaks it; the
// planner keeps the flag only where it holds) and the memory TE registers for
// it (estimator/overheads.cc adds it to the rank).
#ifndef OOMGUARD_ESTIMATOR_TP_COMM_OVERLAP_H_
#define OOMGUARD_ESTIMATOR_TP_COMM_OVERLAP_H_

#include <optional>
#include <string>

#include "estimator/validated_job.h"

namespace oomguard {

// Why Megatron-LM refuses `--tp-comm-overlap` for `j`, or nullopt when `j`
// does not set it or it is accepted: validate_args (megatron/training/
// arguments.py) asserts sequence parallelism, which it turns off at TP 1.
std::optional<std::string> TpCommOverlapConflict(const ValidatedJob& j);

// Whether Megatron-LM accepts `j`'s `--tp-comm-overlap` (true without it):
// the same rule without the sentence (the planner asks it of every setting).
bool TpCommOverlapAccepted(const ValidatedJob& j);

// The userbuffers Transformer Engine registers for the overlap, per GPU, in
// bytes (0 without the flag): one communicator per overlapped GEMM
// (initialize_ub in transformer_engine/pytorch/module/base.py, called by
// Megatron-LM's _initialize_tp_communicators with the shape
// [seq x micro-batch / CP, hidden]), each with a buffer of that shape
// (CommOverlapBase / CommOverlapP2PBase::initialize in transformer_engine/
// common/comm_gemm_overlap/comm_gemm_overlap.cpp; the default ring-exchange
// GEMMs are all all-gathers, so none takes the 2 TP - 1 chunks of a
// ring-exchange reduce-scatter). Ten GEMMs before TE 2.7, twelve from it
// (proj_wgrad and fc2_wgrad); the all-gather ones (six, then eight) hold
// 1-byte FP8 data in an FP8 run, the rest bf16. With
// `--first-last-layers-bf16` an FP8 run registers a second, bf16 set. The
// buffers are registered outside PyTorch's caching allocator
// (register_user_buffer_collective).
double TpCommOverlapUserbufferBytes(const ValidatedJob& j);

// The cuBLAS workspace the overlapped GEMMs use, one per userbuffers stream
// (get_cublas_workspace with ub=True: _NUM_MAX_UB_STREAMS = 3 workspaces of
// 32 MiB on Hopper, in transformer_engine/pytorch/cpp_extensions/gemm.py),
// inside PyTorch's allocator; 0 without the flag.
double TpCommOverlapWorkspaceBytes(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_TP_COMM_OVERLAP_H_
