#include "estimator/fp8_memory.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "estimator/software_versions.h"

namespace oomguard {
namespace {

using Recipe = v1::PrecisionSpec::Fp8Recipe;

// TE 2.7 adds NVFP4BlockScaling (Megatron-LM validate_args refuses
// --fp4-format before it); Megatron-Core 0.15 adds --fp4-format, 0.13
// --reuse-grad-buf-for-mxfp8-param-ag (arguments.py of core_v0.15.0 and
// core_v0.13.0).
constexpr SoftwareVersion kFirstTeWithNvfp4{2, 7};
constexpr SoftwareVersion kFirstMegatronCoreWithFp4{0, 15};
constexpr SoftwareVersion kFirstMegatronCoreWithGradBufferParamGather{0, 13};

std::string VersionText(SoftwareVersion v) { return absl::StrCat(v.major, ".", v.minor); }

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

// The TE tensor class a job's linears quantize to (fp8_memory.h).
enum class Quantized { kNone, kFloat8, kFloat8Blockwise, kMxfp8, kNvfp4 };

Quantized QuantizedOf(const ValidatedJob& j) {
  if (j.precision.fp4) return Quantized::kNvfp4;
  if (!j.precision.fp8) return Quantized::kNone;
  switch (j.precision.fp8_recipe) {
    case v1::PrecisionSpec::FP8_RECIPE_BLOCKWISE:
      return Quantized::kFloat8Blockwise;
    case v1::PrecisionSpec::FP8_RECIPE_MXFP8:
      return Quantized::kMxfp8;
    default:
      return Quantized::kFloat8;
  }
}

// Bytes per element of the data of one copy, without scales.
double DataBytes(Quantized q) { return q == Quantized::kNvfp4 ? 0.5 : 1; }

// Bytes per element of one copy (rowwise or columnwise) of an activation,
// scales included.
double ActivationCopyBytes(Quantized q) {
  switch (q) {
    case Quantized::kNone:
      return 0;
    case Quantized::kFloat8Blockwise:
      return 1 + 4.0 / 128;
    case Quantized::kMxfp8:
      return 1 + 1.0 / 32;
    case Quantized::kNvfp4:
      return 0.5 + 1.0 / 16;
    case Quantized::kFloat8:
      break;
  }
  return 1;
}

// Bytes per element of one copy of a weight: as activations, except that
// blockwise weights use 128x128 blocks (w_block_scaling_dim 2).
double WeightCopyBytes(Quantized q) {
  if (q == Quantized::kFloat8Blockwise) return 1 + 4.0 / (128 * 128);
  return ActivationCopyBytes(q);
}

// Whether TE keeps a columnwise copy of a weight beside the rowwise one: a
// Float8Tensor only on Hopper (the transpose of its TN-only GEMMs).
bool KeepsColumnwiseCopy(const ValidatedJob& j, Quantized q) {
  return q != Quantized::kFloat8 || j.runtime.gpu_architecture != v1::GPU_ARCHITECTURE_BLACKWELL;
}

bool QuantizedParams(const ValidatedJob& j) {
  return j.precision.fp8_param_gather || j.precision.fp4_param_gather;
}

absl::Status ResolveFp4(const v1::PrecisionSpec& p, ValidatedJob& j) {
  PrecisionSettings& precision = j.precision;
  precision.fp4 = p.fp4_format() != v1::PrecisionSpec::FP4_FORMAT_UNSPECIFIED;
  precision.fp4_param_gather = p.fp4_param_gather();
  // megatron/training/arguments.py validate_args and TransformerConfig.__post_init__.
  if (precision.fp4_param_gather && !precision.fp4) {
    return Bad("precision.fp4_param_gather", "true",
               "needs precision.fp4_format (--fp4-format); Megatron-LM refuses "
               "--fp4-param-gather without it");
  }
  if (!precision.fp4) return absl::OkStatus();
  if (precision.fp8) {
    return Bad("precision.fp4_format", v1::PrecisionSpec::Fp4Format_Name(p.fp4_format()),
               "cannot be used with precision.fp8 (--fp8-format); Megatron-LM refuses FP4 and "
               "FP8 together");
  }
  if (j.runtime.megatron_core < kFirstMegatronCoreWithFp4) {
    return Bad("precision.fp4_format", v1::PrecisionSpec::Fp4Format_Name(p.fp4_format()),
               absl::StrCat("needs Megatron-Core 0.15 or newer (--fp4-format); "
                            "runtime.megatron_core_version is ",
                            VersionText(j.runtime.megatron_core)));
  }
  if (j.runtime.transformer_engine < kFirstTeWithNvfp4) {
    return Bad("precision.fp4_format", v1::PrecisionSpec::Fp4Format_Name(p.fp4_format()),
               absl::StrCat("needs Transformer Engine 2.7 or newer (NVFP4BlockScaling); "
                            "runtime.transformer_engine_version is ",
                            VersionText(j.runtime.transformer_engine)));
  }
  if (!j.training.transformer_engine) {
    return Bad("precision.fp4_format", v1::PrecisionSpec::Fp4Format_Name(p.fp4_format()),
               "NVFP4 runs in Transformer Engine's linears only; training.transformer_impl "
               "LOCAL does not run it");
  }
  return absl::OkStatus();
}

// UNSPECIFIED: Blackwell for the recipes only Blackwell runs, else Hopper
// (the architecture of the calibration). An architecture that cannot run
// the recipe is refused, naming the recipe's field.
absl::Status ResolveGpuArchitecture(const v1::PrecisionSpec& p, v1::GpuArchitecture arch,
                                    ValidatedJob& j) {
  const PrecisionSettings& precision = j.precision;
  const bool mxfp8 = precision.fp8 && precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_MXFP8;
  const bool blackwell_only = mxfp8 || precision.fp4;
  if (arch == v1::GPU_ARCHITECTURE_UNSPECIFIED) {
    arch = blackwell_only ? v1::GPU_ARCHITECTURE_BLACKWELL : v1::GPU_ARCHITECTURE_HOPPER;
  }
  j.runtime.gpu_architecture = arch;
  if (blackwell_only && arch != v1::GPU_ARCHITECTURE_BLACKWELL) {
    // TE quantization.py check_mxfp8_support / check_nvfp4_support:
    // compute capability 10.0 or higher.
    const std::string why = absl::StrCat(
        "runs on Blackwell GPUs only (compute capability 10; Transformer Engine "
        "refuses it elsewhere); runtime.gpu_architecture is ",
        v1::GpuArchitecture_Name(arch));
    if (precision.fp4) {
      return Bad("precision.fp4_format", v1::PrecisionSpec::Fp4Format_Name(p.fp4_format()), why);
    }
    return Bad("precision.fp8_recipe", v1::PrecisionSpec::Fp8Recipe_Name(precision.fp8_recipe),
               why);
  }
  return absl::OkStatus();
}

absl::Status ResolveBf16Layers(const v1::PrecisionSpec& p, ValidatedJob& j) {
  PrecisionSettings& precision = j.precision;
  precision.bf16_layers_at_start = precision.bf16_layers_at_end = 0;
  if (!p.first_last_layers_bf16()) return absl::OkStatus();
  precision.bf16_layers_at_start =
      p.has_num_layers_at_start_in_bf16() ? p.num_layers_at_start_in_bf16() : 1;
  precision.bf16_layers_at_end =
      p.has_num_layers_at_end_in_bf16() ? p.num_layers_at_end_in_bf16() : 1;
  // TransformerConfig.__post_init__ checks these for FP8 only (FP4 keeps
  // every layer its counts name, fp4_utils.get_fp4_context): delayed
  // scaling does not support first / last layers in bf16; each count is at
  // most num_layers // PP.
  if (!precision.fp8) return absl::OkStatus();
  if (precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_DELAYED) {
    return Bad("precision.first_last_layers_bf16", "true",
               "Megatron refuses it with precision.fp8_recipe delayed (the default)");
  }
  const int64_t limit = j.model.num_layers / j.parallelism.pp;
  if (precision.bf16_layers_at_start > limit) {
    return Bad("precision.num_layers_at_start_in_bf16", precision.bf16_layers_at_start,
               absl::StrCat("exceeds the ", limit, " layers per pipeline stage (num_layers / PP)"));
  }
  if (precision.bf16_layers_at_end > limit) {
    return Bad("precision.num_layers_at_end_in_bf16", precision.bf16_layers_at_end,
               absl::StrCat("exceeds the ", limit, " layers per pipeline stage (num_layers / PP)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveFp8(const v1::PrecisionSpec& p, v1::GpuArchitecture arch, ValidatedJob& j,
                        std::vector<std::string>* notes) {
  PrecisionSettings& precision = j.precision;
  OOMGUARD_RETURN_IF_ERROR(ResolveFp4(p, j));
  // distributed/distributed_data_parallel_config.py __post_init__. Megatron-FSDP
  // turns it off (arguments.py validate_args): its own buffers gather the
  // weights (fsdp_memory.h).
  precision.param_gather_in_grad_buffer =
      p.reuse_grad_buf_for_mxfp8_param_ag() && !j.fsdp.megatron();
  if (precision.param_gather_in_grad_buffer && !precision.fp8_param_gather) {
    return Bad("precision.reuse_grad_buf_for_mxfp8_param_ag", "true",
               "needs precision.fp8_param_gather (--fp8-param-gather); Megatron-Core refuses it "
               "without");
  }
  if (precision.param_gather_in_grad_buffer &&
      j.runtime.megatron_core < kFirstMegatronCoreWithGradBufferParamGather) {
    return Bad("precision.reuse_grad_buf_for_mxfp8_param_ag", "true",
               absl::StrCat("needs Megatron-Core 0.13 or newer; runtime.megatron_core_version is ",
                            VersionText(j.runtime.megatron_core)));
  }
  if (!precision.fp8) {
    if (p.fp8_format() != v1::PrecisionSpec::FP8_FORMAT_UNSPECIFIED) {
      return Bad("precision.fp8_format", v1::PrecisionSpec::Fp8Format_Name(p.fp8_format()),
                 "needs precision.fp8");
    }
    // precision.fp8_recipe without FP8 changes no FP8 memory: Megatron
    // accepts it (only the precision-aware optimizer reads it then,
    // validated_job.cc ResolveOptimizerState).
    if (!precision.fp4) {
      if (p.first_last_layers_bf16()) {
        return Bad("precision.first_last_layers_bf16", "true",
                   "needs precision.fp8 (--fp8-format) or precision.fp4_format (--fp4-format)");
      }
      if (p.moe_router_padding_for_fp8()) {
        return Bad("precision.moe_router_padding_for_fp8", "true",
                   "needs precision.fp8 (--fp8-format) or precision.fp4_format (--fp4-format); "
                   "Megatron refuses it without FP8 or FP4");
      }
    }
  } else {
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
    // param_and_grad_buffer.py maps each quantized parameter into the
    // parameter buffer with TE's replace_raw_data, which raises for an
    // MXFP8Tensor; only the gradient-buffer all-gather serves MXFP8 weights.
    // Megatron-FSDP keeps MXFP8 weights in its own buffers (a transpose
    // buffer beside the rowwise one: ParamAndGradBuffer's
    // transpose_weight_buffer).
    if (precision.fp8_param_gather && precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_MXFP8 &&
        !precision.param_gather_in_grad_buffer && !j.fsdp.megatron()) {
      return Bad("precision.reuse_grad_buf_for_mxfp8_param_ag", "false",
                 "MXFP8 weights (precision.fp8_param_gather with precision.fp8_recipe "
                 "FP8_RECIPE_MXFP8) need --reuse-grad-buf-for-mxfp8-param-ag: Transformer "
                 "Engine cannot map an MXFP8Tensor into Megatron's parameter buffer "
                 "(replace_raw_data raises)");
    }
  }
  OOMGUARD_RETURN_IF_ERROR(ResolveGpuArchitecture(p, arch, j));
  if (precision.fp8 && precision.fp8_recipe == v1::PrecisionSpec::FP8_RECIPE_MXFP8 &&
      arch == v1::GPU_ARCHITECTURE_UNSPECIFIED && notes != nullptr) {
    notes->push_back(
        "precision.fp8_recipe = FP8_RECIPE_MXFP8 runs on Blackwell GPUs only (Megatron and "
        "Transformer Engine refuse it on Hopper); modelled as TE's MXFP8Tensor");
  }
  if (precision.fp4 && arch == v1::GPU_ARCHITECTURE_UNSPECIFIED && notes != nullptr) {
    notes->push_back(
        "precision.fp4_format = FP4_FORMAT_E2M1 runs on Blackwell GPUs only (Transformer Engine "
        "refuses NVFP4 elsewhere); modelled as TE's NVFP4Tensor");
  }
  if (!precision.fp8 && !precision.fp4) return absl::OkStatus();
  OOMGUARD_RETURN_IF_ERROR(ResolveBf16Layers(p, j));
  precision.moe_router_padding_for_fp8 = p.moe_router_padding_for_fp8();
  return absl::OkStatus();
}

bool KeptInBf16(const ValidatedJob& j, int64_t layer) {
  return (j.precision.fp8 || j.precision.fp4) &&
         (layer < j.precision.bf16_layers_at_start ||
          layer >= j.model.num_layers - j.precision.bf16_layers_at_end);
}

double Fp8SavedInputBytesPerElement(const ValidatedJob& j) {
  return ActivationCopyBytes(QuantizedOf(j));
}

double Fp8NormLinearSavedInputBytesPerElement(const ValidatedJob& j) {
  const Quantized q = QuantizedOf(j);
  const bool both_copies = q == Quantized::kNvfp4 && j.parallelism.sp;
  return (both_copies ? 2 : 1) * ActivationCopyBytes(q);
}

double Fp8LinearParamBytesPerElement(const ValidatedJob& j) {
  if (!QuantizedParams(j)) return j.precision.param_bytes;
  const Quantized q = QuantizedOf(j);
  return q == Quantized::kMxfp8 ? 0 : DataBytes(q);
}

double ParamAllGatherBytesPerElement(const ValidatedJob& j) {
  if (!QuantizedParams(j) || j.precision.param_gather_in_grad_buffer) {
    return j.precision.param_bytes;
  }
  return DataBytes(QuantizedOf(j));
}

double Fp8WeightCacheBytesPerElement(const ValidatedJob& j) {
  const Quantized q = QuantizedOf(j);
  if (q == Quantized::kNone) return 0;
  const double copy = WeightCopyBytes(q);
  const double copies = KeepsColumnwiseCopy(j, q) ? 2 * copy : copy;
  // With quantized parameters mapped into the parameter buffer their
  // rowwise data is the buffer itself (Fp8LinearParamBytesPerElement); with
  // the gradient-buffer all-gather they keep all their copies (and a
  // non-MXFP8 parameter buffer is still allocated beside them).
  const bool in_param_buffer = QuantizedParams(j) && !j.precision.param_gather_in_grad_buffer;
  return in_param_buffer ? copies - Fp8LinearParamBytesPerElement(j) : copies;
}

WeightCacheTerm Fp8WeightCacheTerm(const ValidatedJob& j) {
  if (j.precision.fp4) {
    if (j.precision.fp4_param_gather) {
      return {"fp4_param_columnwise_copy",
              "Transformer Engine keeps the scales and columnwise copy of each NVFP4 parameter "
              "beside the packed rowwise data in the parameter buffer (--fp4-param-gather): "
              "E2M1 two per byte and an E4M3 scale per 16 elements"};
    }
    return {"fp4_weight_workspace",
            "Transformer Engine keeps NVFP4 copies of each NVFP4 linear's weight for the whole "
            "step: the quantize_weight workspace cached across micro-batches "
            "(is_first_microbatch), rowwise + columnwise, E2M1 two per byte and an E4M3 scale per "
            "16 elements"};
  }
  if (j.precision.param_gather_in_grad_buffer) {
    return {"fp8_param_own_storage",
            "--reuse-grad-buf-for-mxfp8-param-ag: each FP8 parameter keeps its own rowwise and "
            "columnwise copies (all-gathered through the gradient buffer, no parameter buffer)"};
  }
  if (j.precision.fp8_param_gather) {
    return {"fp8_param_columnwise_copy",
            "Transformer Engine keeps the columnwise copy and scale-inverse of each FP8 parameter "
            "beside its rowwise data in the parameter buffer (--fp8-param-gather); none for "
            "delayed or tensorwise scaling on Blackwell, whose FP8 GEMMs read the rowwise data"};
  }
  return {"fp8_weight_workspace",
          "Transformer Engine keeps FP8 copies of each FP8 linear's weight for the whole step: "
          "the quantize_weight workspace cached across micro-batches (is_first_microbatch), "
          "rowwise + columnwise (Float8Tensor transpose on Hopper, none on Blackwell)"};
}

double Fp8PaddingTokensPerExpert(const ValidatedJob& j) {
  switch (QuantizedOf(j)) {
    case Quantized::kNone:
      return 0;
    case Quantized::kMxfp8:
      return 31;
    case Quantized::kNvfp4:
      return 127;
    default:
      return 15;
  }
}

}  // namespace oomguard
