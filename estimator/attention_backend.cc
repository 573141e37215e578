#include "estimator/attention_backend.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

constexpr absl::string_view kComputeCapability7 =
    "runtime.gpu_architecture is GPU_ARCHITECTURE_VOLTA_TURING (compute capability 7: V100, T4)";

constexpr absl::string_view kNoBf16 =
    "BF16 needs compute capability 8.0 or newer (Transformer Engine is_bf16_available); ";

v1::Dtype ParamsDtype(const v1::JobSpec& job) {
  const v1::Dtype d = job.precision().params_dtype();
  return d == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : d;
}

// What compute capability 7 cannot run at all: BF16 weights or logits (TE utils.py
// is_bf16_compatible: 8.0 or newer; cuBLAS has no BF16 tensor-core GEMM on
// Volta/Turing) and FP8 (TE check_fp8_support: 8.9 or newer; MXFP8 and NVFP4
// are refused earlier, estimator/fp8_memory.h).
absl::Status CheckDtypesRun(const v1::JobSpec& job, const ValidatedJob& j) {
  if (j.runtime.gpu_architecture != v1::GPU_ARCHITECTURE_VOLTA_TURING) return absl::OkStatus();
  if (ParamsDtype(job) == v1::DTYPE_BF16) {
    return Bad("precision.params_dtype", "DTYPE_BF16",
               absl::StrCat(kNoBf16, kComputeCapability7, "; train in FP16 (--fp16) instead"));
  }
  if (job.training().output_logit_dtype() == v1::DTYPE_BF16) {
    return Bad("training.output_logit_dtype", "DTYPE_BF16",
               absl::StrCat(kNoBf16, kComputeCapability7));
  }
  if (j.precision.fp8) {
    return Bad("precision.fp8_format",
               v1::PrecisionSpec::Fp8Format_Name(job.precision().fp8_format()),
               absl::StrCat("FP8 needs compute capability 8.9 or newer (Transformer Engine "
                            "check_fp8_support); ",
                            kComputeCapability7));
  }
  return absl::OkStatus();
}

// Transformer Engine's FusedScaleMaskSoftmax.is_kernel_available
// (attention/dot_product_attention/softmax.py) for a causal self-attention
// with s_q = s_k = s: 16-bit input, 16 < s < 16384, s % 8 == 0 (which also
// meets the kernel's batches per block, 4 for s > 128 and 8 below) and
// b x heads/TP % 4 == 0; NVTE_MASKED_SOFTMAX_FUSION is on by default.
bool TeSoftmaxFused(const ValidatedJob& j, bool sixteen_bit) {
  const int64_t s = j.training.seq;
  return sixteen_bit && s > 16 && s < 16384 && s % 8 == 0 &&
         (j.training.micro_batch * j.model.heads / j.parallelism.tp) % 4 == 0;
}

// Megatron-Core's FusedScaleMaskSoftmax.is_kernel_available
// (megatron/core/fusions/fused_softmax.py), behind --no-masked-softmax-fusion.
bool MegatronSoftmaxFused(const v1::TrainingSpec& t, const ValidatedJob& j, bool sixteen_bit) {
  const int64_t s = j.training.seq;
  return (t.has_masked_softmax_fusion() ? t.masked_softmax_fusion() : true) && sixteen_bit &&
         s > 16 && s <= 16384 && s % 4 == 0 &&
         (j.training.micro_batch * j.model.heads / j.parallelism.tp) % 4 == 0;
}

}  // namespace

absl::Status ResolveAttentionBackend(const v1::JobSpec& job, ValidatedJob& j) {
  OOMGUARD_RETURN_IF_ERROR(CheckDtypesRun(job, j));
  TrainingSettings& training = j.training;
  const v1::AttentionBackend ab = job.training().attention_backend();
  const bool sixteen_bit = ParamsDtype(job) != v1::DTYPE_FP32;
  // The local spec has no fused attention: Megatron's DotProductAttention
  // (megatron/core/transformer/dot_product_attention.py), as with `local`.
  training.local_attention = ab == v1::ATTENTION_BACKEND_LOCAL ||
                             (!training.transformer_engine && ab != v1::ATTENTION_BACKEND_FLASH);
  if (training.local_attention) {
    training.flash_attention = false;
    training.fused_softmax = MegatronSoftmaxFused(job.training(), j, sixteen_bit);
    if (j.parallelism.cp > 1) {
      // DotProductAttention.__init__ asserts context_parallel_size == 1.
      return Bad("parallelism.context_parallel_size", j.parallelism.cp,
                 "Megatron's local DotProductAttention (training.attention_backend LOCAL or "
                 "training.transformer_impl LOCAL) runs no context parallelism; only "
                 "Transformer Engine's attention does");
    }
    return absl::OkStatus();
  }
  // TE get_attention_backend (attention/dot_product_attention/utils.py):
  // flash attention 2/3/4 and cuDNN fused attention need compute capability
  // 8.0 or newer and FP16/BF16 q/k/v; UnfusedDotProductAttention runs
  // anywhere. Megatron's --attention-backend flash / fused turns the others
  // off (LanguageModule._set_attention_backend's NVTE_* variables), so TE
  // finds no backend and fails where the chosen one cannot run.
  const bool kernels_run =
      sixteen_bit && j.runtime.gpu_architecture != v1::GPU_ARCHITECTURE_VOLTA_TURING;
  if (!kernels_run && (ab == v1::ATTENTION_BACKEND_FLASH || ab == v1::ATTENTION_BACKEND_FUSED)) {
    return Bad(
        "training.attention_backend", v1::AttentionBackend_Name(ab),
        absl::StrCat("Transformer Engine runs flash and cuDNN fused attention only in FP16/BF16 on "
                     "compute capability 8.0 or newer (get_attention_backend); ",
                     sixteen_bit ? std::string(kComputeCapability7)
                                 : std::string("precision.params_dtype is DTYPE_FP32"),
                     "; use --attention-backend unfused or auto"));
  }
  training.flash_attention = kernels_run && ab != v1::ATTENTION_BACKEND_UNFUSED;
  if (training.flash_attention) return absl::OkStatus();
  training.fused_softmax = TeSoftmaxFused(j, sixteen_bit);
  if (j.parallelism.cp > 1) {
    // get_attention_backend: "Disabling UnfusedDotProductAttention as it
    // does not support context parallelism".
    return Bad("parallelism.context_parallel_size", j.parallelism.cp,
               absl::StrCat("Transformer Engine's UnfusedDotProductAttention runs no context "
                            "parallelism, and attention is unfused here (",
                            ab == v1::ATTENTION_BACKEND_UNFUSED
                                ? "training.attention_backend ATTENTION_BACKEND_UNFUSED"
                            : sixteen_bit ? std::string(kComputeCapability7)
                                          : "precision.params_dtype DTYPE_FP32",
                            ")"));
  }
  return absl::OkStatus();
}

}  // namespace oomguard
