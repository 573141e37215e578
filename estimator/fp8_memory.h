// FP8 and NVFP4 training memory as Megatron-Core + Transformer Engine (TE)
// run it: which decoder layers run under TE's quantized autocast, and the
// bytes of each quantized copy TE keeps per recipe (data + scales):
//  - activations: a TE linear saves its input for the weight gradient as a
//    quantized copy instead of bf16 (TE module/linear.py _Linear.forward:
//    `inputmat.update_usage(rowwise_usage=False, columnwise_usage=True)`,
//    or the rowwise copy when the sequence-parallel all-gather supports only
//    rowwise data, Float8Quantizer.supports_only_rowwise_all_gather);
//  - static: the weight workspace TE caches across micro-batches
//    (module/base.py quantize_weight with cache=True, because Megatron's
//    TELinear passes is_first_microbatch), rowwise + columnwise where the
//    GPU needs a columnwise copy (below);
//  - `--fp8-param-gather` / `--fp4-param-gather` (TE quantized_model_init):
//    the weight itself is quantized; its rowwise data lives in Megatron's
//    uint8 parameter buffer (distributed/param_and_grad_buffer.py
//    group_params_for_buffers: param_dtype = torch.uint8; NVFP4 packed two
//    per byte, _compute_nvfp4_packed_layout), its scales and columnwise copy
//    beside it (TE tensor/utils.py post_all_gather_processing creates them
//    after each all-gather and they stay for the step); the fp32 main copy
//    stays in the optimizer, as for bf16. With
//    `--reuse-grad-buf-for-mxfp8-param-ag` the quantized weights keep their
//    own storage and are all-gathered through the gradient buffer
//    (_ParamAndGradBuffer: MXFP8 buckets share one buffer, param_data is a
//    view of grad_data), so no parameter buffer holds them.
//
// Bytes per element of one quantized copy (TE's storage classes):
//  - Float8Tensor (delayed, tensorwise): 1 byte, one fp32 scale per tensor.
//    Hopper's FP8 GEMMs take TN layouts only, so the columnwise copy is a
//    transpose of 1 byte more; Blackwell runs any layout from the rowwise
//    data and keeps no transpose (TE utils.is_non_tn_fp8_gemm_supported,
//    Float8TensorStorage.update_usage, quantizer.cpp create_tensor).
//  - Float8BlockwiseQTensor (blockwise): 1 byte, an fp32 scale per 1x128
//    block (activations) or 128x128 block (weights); rowwise and columnwise
//    copies on every GPU.
//  - MXFP8Tensor: 1 byte and an E8M0 byte per 32; rowwise and columnwise
//    copies, each quantized from the high-precision tensor.
//  - NVFP4Tensor (NVFP4BlockScaling): E2M1 packed two per byte (0.5) and an
//    E4M3 byte per 16 elements (NVFP4Quantizer.get_scale_shape; weights'
//    16x16 blocks use the same scale layout); rowwise and columnwise copies.
//
// What is small and not counted: the delayed recipe's amax history (fp32
// [amax_history_len, 3] per GEMM; Megatron's default length is 1), the
// per-tensor fp32 scales and amaxes, the scale tensors' padding to 128 rows
// and 4 columns, and NVFP4's random Hadamard transform matrix (16 x 16).
#ifndef OOMGUARD_ESTIMATOR_FP8_MEMORY_H_
#define OOMGUARD_ESTIMATOR_FP8_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Validates the FP8 and FP4 fields of `p` (JobSpec.precision) and
// runtime.gpu_architecture `arch` against the resolved model, parallelism,
// training and runtime of `j`, refusing what Megatron-LM and TE refuse, and
// fills j.precision's quantization settings and j.runtime.gpu_architecture.
// Call after j.precision.fp8 and j.runtime are set. Notes about assumptions
// are appended to `notes` when not null.
absl::Status ResolveFp8(const v1::PrecisionSpec& p, v1::GpuArchitecture arch, ValidatedJob& j,
                        std::vector<std::string>* notes);

// Whether global decoder layer `layer` of an FP8 or NVFP4 job runs in bf16
// because of `--first-last-layers-bf16` (Megatron
// fp8_utils.is_first_last_bf16_layer, fp4_utils.get_fp4_context). False
// for every layer of a job without FP8 or NVFP4.
bool KeptInBf16(const ValidatedJob& j, int64_t layer);

// Bytes per element of the input a quantized TE linear saves for backward:
// one copy with its scales (delayed/tensorwise: 1; blockwise: 1 + one fp32
// per 1x128 block; mxfp8: 1 + one E8M0 byte per 32; nvfp4: 0.5 + one E4M3
// byte per 16). 0 without FP8 or NVFP4.
double Fp8SavedInputBytesPerElement(const ValidatedJob& j);

// Bytes per element of the norm output a TE LayerNormLinear saves: as
// Fp8SavedInputBytesPerElement, except NVFP4 with sequence parallelism,
// where it keeps both the rowwise copy (for the all-gather in backward) and
// the columnwise one (TE module/layernorm_linear.py drops the rowwise usage
// only for MXFP8 and blockwise tensors or without the gather).
double Fp8NormLinearSavedInputBytesPerElement(const ValidatedJob& j);

// Bytes per element of a quantized linear's weight in Megatron's parameter
// buffer: 1 with --fp8-param-gather (uint8 buffer; 0 for MXFP8, whose
// all-gather uses the gradient buffer), 0.5 with --fp4-param-gather (packed
// NVFP4), else the bf16 weight.
double Fp8LinearParamBytesPerElement(const ValidatedJob& j);

// Bytes per element of a quantized linear's weight that the data-parallel
// parameter all-gather moves: the quantized data (1 with
// --fp8-param-gather, 0.5 with --fp4-param-gather), or the weight's own
// dtype where the all-gather runs through the gradient buffer
// (--reuse-grad-buf-for-mxfp8-param-ag: param_and_grad_buffer.py
// start_param_sync views grad_data as the parameters' dtype, bf16, and
// _post_param_sync quantizes after) or the weights are not quantized.
double ParamAllGatherBytesPerElement(const ValidatedJob& j);

// Bytes per element of a quantized linear's weight that TE keeps beside
// the parameter buffer for the whole step: the quantize_weight workspace
// (rowwise + columnwise copies), or with quantized parameters their scales,
// columnwise copy and, when no parameter buffer holds it, their rowwise
// data. 0 without FP8 or NVFP4.
double Fp8WeightCacheBytesPerElement(const ValidatedJob& j);

// The name and meaning of the report's term for Fp8WeightCacheBytesPerElement.
struct WeightCacheTerm {
  const char* name;
  const char* description;
};
WeightCacheTerm Fp8WeightCacheTerm(const ValidatedJob& j);

// Extra routed tokens per local expert and micro-batch, at most, from
// padding each expert's tokens to the quantized GEMM alignment (Megatron
// moe_utils.get_align_size_for_quantization: fp8_utils.get_fp8_align_size,
// 32 for mxfp8, else 16; fp4_utils.get_fp4_align_size, 128). The router pads
// with --moe-router-padding-for-quantization, TEGroupedMLP's padding without
// it: the same count either way. 0 without FP8 or NVFP4.
double Fp8PaddingTokensPerExpert(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_FP8_MEMORY_H_
