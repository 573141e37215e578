// FP8 training memory as Megatron-Core + Transformer Engine (TE) run it:
// which decoder layers run under TE's FP8 autocast, and the bytes of each
// FP8 copy TE keeps per recipe (data + scale-inverse):
//  - activations: a TE linear saves its input for the weight gradient as an
//    FP8 copy instead of bf16 (TE module/linear.py _Linear.forward:
//    `inputmat.update_usage(rowwise_usage=False, columnwise_usage=True)`,
//    or the rowwise copy when the sequence-parallel all-gather supports only
//    rowwise data, Float8Quantizer.supports_only_rowwise_all_gather);
//  - static: the FP8 weight workspace TE caches across micro-batches
//    (module/base.py quantize_weight with cache=True, because Megatron's
//    TELinear passes is_first_microbatch), rowwise + columnwise (Hopper's
//    FP8 GEMMs are TN only: the Float8Tensor keeps a transpose);
//  - `--fp8-param-gather` (TE quantized_model_init): the weight itself is
//    FP8 in Megatron's uint8 parameter buffer (distributed/
//    param_and_grad_buffer.py: param_dtype = torch.uint8), its columnwise
//    copy and scales beside it; the fp32 main copy stays in the distributed
//    optimizer, as for bf16.
// What is small and not counted: the delayed recipe's amax history (fp32
// [amax_history_len, 3] per GEMM; Megatron's default length is 1) and the
// per-tensor fp32 scales of the delayed and tensorwise recipes.
#ifndef OOMGUARD_ESTIMATOR_FP8_MEMORY_H_
#define OOMGUARD_ESTIMATOR_FP8_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Validates the FP8 fields of `p` (JobSpec.precision) against the resolved
// model, parallelism and training of `j` and fills j.precision's FP8
// settings. Call after j.precision.fp8 is set. Notes about assumptions are
// appended to `notes` when not null.
absl::Status ResolveFp8(const v1::PrecisionSpec& p, ValidatedJob& j,
                        std::vector<std::string>* notes);

// Whether global decoder layer `layer` of an FP8 job runs in bf16 because of
// `--first-last-layers-bf16` (Megatron fp8_utils.is_first_last_bf16_layer).
// False for every layer of a job without FP8.
bool KeptInBf16(const ValidatedJob& j, int64_t layer);

// Bytes per element of the input an FP8 TE linear saves for backward: one
// FP8 copy with its scale-inverse (delayed/tensorwise: 1; blockwise: 1 +
// one fp32 per 1x128 block; mxfp8: 1 + one E8M0 byte per 32). 0 without FP8.
double Fp8SavedInputBytesPerElement(const ValidatedJob& j);

// Bytes per element of an FP8 linear's weight in Megatron's parameter
// buffer: 1 with --fp8-param-gather (uint8 buffer), else the bf16 weight.
double Fp8LinearParamBytesPerElement(const ValidatedJob& j);

// Bytes per element of an FP8 linear's weight that TE keeps beside the
// parameter buffer for the whole step: the quantize_weight workspace
// (rowwise + columnwise FP8 copies) or, with --fp8-param-gather, the FP8
// parameter's scale-inverse and columnwise copy. 0 without FP8.
double Fp8WeightCacheBytesPerElement(const ValidatedJob& j);

// Extra routed tokens per local expert and micro-batch, at most, from
// padding each expert's tokens to the FP8 GEMM alignment (Megatron
// fp8_utils.get_fp8_align_size: 32 for mxfp8, else 16). The router pads
// with --moe-router-padding-for-fp8, TEGroupedMLP's Fp8Padding without it:
// the same count either way. 0 without FP8.
double Fp8PaddingTokensPerExpert(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_FP8_MEMORY_H_
