#include "estimator/fp8_memory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oomguard {
namespace {

using Recipe = v1::PrecisionSpec::Fp8Recipe;

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

// Bytes per element of one FP8 copy (rowwise or columnwise) of an
// activation, scale-inverse included. delayed (DelayedScaling) and
// tensorwise (Float8CurrentScaling): TE Float8Tensor, 1 byte and one fp32
// scale per tensor. blockwise (Float8BlockScaling, x_block_scaling_dim 1):
// TE Float8BlockwiseQTensor, one fp32 scale per 1x128 block. mxfp8: TE
// MXFP8Tensor, one E8M0 byte per 32 elements.
double ActivationCopyBytes(Recipe recipe) {
  switch (recipe) {
    case v1::PrecisionSpec::FP8_RECIPE_BLOCKWISE:
      return 1 + 4.0 / 128;
    case v1::PrecisionSpec::FP8_RECIPE_MXFP8:
      return 1 + 1.0 / 32;
    default:
      return 1;
  }
}

// Bytes per element of one FP8 copy of a weight: as activations, except
// that blockwise weights use 128x128 blocks (w_block_scaling_dim 2).
double WeightCopyBytes(Recipe recipe) {
  if (recipe == v1::PrecisionSpec::FP8_RECIPE_BLOCKWISE) return 1 + 4.0 / (128 * 128);
  return ActivationCopyBytes(recipe);
}

}  // namespace

absl::Status ResolveFp8(const v1::PrecisionSpec& p, ValidatedJob& j,
                        std::vector<std::string>* notes) {
  PrecisionSettings& precision = j.precision;
  if (!precision.fp8) {
    if (p.fp8_format() != v1::PrecisionSpec::FP8_FORMAT_UNSPECIFIED) {
      return Bad("precision.fp8_format", v1::PrecisionSpec::Fp8Format_Name(p.fp8_format()),
                 "needs precision.fp8");
    }
    // precision.fp8_recipe without FP8 changes no FP8 memory: Megatron
    // accepts it (only the precision-aware optimizer reads it then,
    // validated_job.cc ResolveOptimizerState).
    if (p.first_last_layers_bf16()) {
      return Bad("precision.first_last_layers_bf16", "true", "needs precision.fp8 (--fp8-format)");
    }
    if (p.moe_router_padding_for_fp8()) {
      return Bad("precision.moe_router_padding_for_fp8", "true",
                 "needs precision.fp8 (--fp8-format); Megatron refuses it without FP8 or FP4");
    }
    return absl::OkStatus();
  }
  // FP8 runs only inside Transformer Engine's modules: with the local
  // implementation the GEMMs would run in bf16, which this model would
  // count as FP8.
  if (!j.training.transformer_engine) {
    return Bad("precision.fp8", "true",
               "FP8 runs in Transformer Engine's linears only; the memory of FP8 with "
               "training.transformer_impl LOCAL is not modelled");
  }
  // Megatron arguments.py: --fp8-param-gather needs the distributed
  // optimizer (or FSDP), which keeps the fp32 main copy of the FP8 weights.
  if (precision.fp8_param_gather && !precision.distributed_optimizer) {
    return Bad("precision.fp8_param_gather", "true", "needs precision.use_distributed_optimizer");
  }
  precision.fp8_recipe = p.fp8_recipe() == v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED
                             ? v1::PrecisionSpec::FP8_RECIPE_DELAYED
                             : p.fp8_recipe();
  if (precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_MXFP8 && notes != nullptr) {
    notes->push_back(
        "precision.fp8_recipe = FP8_RECIPE_MXFP8 runs on Blackwell GPUs only (Megatron and "
        "Transformer Engine refuse it on Hopper); modelled as TE's MXFP8Tensor");
  }
  precision.bf16_layers_at_start = precision.bf16_layers_at_end = 0;
  if (p.first_last_layers_bf16()) {
    // TransformerConfig.__post_init__: delayed scaling does not support
    // first / last layers in bf16; each count is at most num_layers // PP.
    if (precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_DELAYED) {
      return Bad("precision.first_last_layers_bf16", "true",
                 "Megatron refuses it with precision.fp8_recipe delayed (the default)");
    }
    const int64_t limit = j.model.num_layers / j.parallelism.pp;
    precision.bf16_layers_at_start =
        p.has_num_layers_at_start_in_bf16() ? p.num_layers_at_start_in_bf16() : 1;
    precision.bf16_layers_at_end =
        p.has_num_layers_at_end_in_bf16() ? p.num_layers_at_end_in_bf16() : 1;
    if (precision.bf16_layers_at_start > limit) {
      return Bad(
          "precision.num_layers_at_start_in_bf16", precision.bf16_layers_at_start,
          absl::StrCat("exceeds the ", limit, " layers per pipeline stage (num_layers / PP)"));
    }
    if (precision.bf16_layers_at_end > limit) {
      return Bad(
          "precision.num_layers_at_end_in_bf16", precision.bf16_layers_at_end,
          absl::StrCat("exceeds the ", limit, " layers per pipeline stage (num_layers / PP)"));
    }
  }
  precision.moe_router_padding_for_fp8 = p.moe_router_padding_for_fp8();
  return absl::OkStatus();
}

bool KeptInBf16(const ValidatedJob& j, int64_t layer) {
  return j.precision.fp8 && (layer < j.precision.bf16_layers_at_start ||
                             layer >= j.model.num_layers - j.precision.bf16_layers_at_end);
}

double Fp8SavedInputBytesPerElement(const ValidatedJob& j) {
  return j.precision.fp8 ? ActivationCopyBytes(j.precision.fp8_recipe) : 0;
}

double Fp8LinearParamBytesPerElement(const ValidatedJob& j) {
  return j.precision.fp8_param_gather ? 1 : j.precision.param_bytes;
}

double Fp8WeightCacheBytesPerElement(const ValidatedJob& j) {
  if (!j.precision.fp8) return 0;
  const double copy = WeightCopyBytes(j.precision.fp8_recipe);
  // quantize_weight workspace: rowwise + columnwise copies. With FP8
  // parameters the rowwise data (1 byte) is the parameter buffer itself.
  return j.precision.fp8_param_gather ? 2 * copy - 1 : 2 * copy;
}

double Fp8PaddingTokensPerExpert(const ValidatedJob& j) {
  if (!j.precision.fp8) return 0;
  return j.precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_MXFP8 ? 31 : 15;
}

}  // namespace oomguard
