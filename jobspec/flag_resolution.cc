#include "jobspec/flag_resolution.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

constexpr size_t kMaxNotes = 64;

constexpr uint32_t kGpt2VocabSize = 50257;
constexpr uint32_t kLlama2VocabSize = 32000;
constexpr uint32_t kBertVocabSize = 30522;

// --num-query-groups counts only with --group-query-attention on a whole
// command line; an override sets it as given.
void ResolveQueryGroups(ParseState& s) {
  v1::ModelSpec* model = s.job->mutable_model();
  if (s.mode == ArgsMode::kOverrides) {
    if (s.num_query_groups.has_value()) {
      model->set_num_query_groups(*s.num_query_groups);
    }
    return;
  }
  if (s.group_query_attention) {
    // Megatron's --num-query-groups default is 1 (MQA).
    model->set_num_query_groups(s.num_query_groups.value_or(1));
    return;
  }
  model->clear_num_query_groups();
  if (s.num_query_groups.has_value()) {
    s.Note(absl::StrCat("--num-query-groups ", *s.num_query_groups,
                        " has no effect without --group-query-attention; "
                        "one KV group per head (MHA) assumed"));
  }
}

// The vocabulary size: --vocab-size (plus one with NullTokenizer), else the
// --tokenizer-type's own on a whole command line.
absl::Status ResolveVocab(ParseState& s) {
  v1::ModelSpec* model = s.job->mutable_model();
  const std::string tokenizer = s.tokenizer_type.value_or("");
  if (tokenizer == "NullTokenizer") {
    if (!s.vocab_size_given) {
      return absl::InvalidArgumentError("--tokenizer-type NullTokenizer requires --vocab-size");
    }
    if (model->vocab_size() == std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError("--vocab-size: too large");
    }
    // Megatron's NullTokenizer adds an end-of-document id after the
    // --vocab-size ids.
    model->set_vocab_size(model->vocab_size() + 1);
    s.Note(absl::StrCat("NullTokenizer: vocab size ", model->vocab_size(),
                        " (--vocab-size plus the end-of-document id)"));
    return absl::OkStatus();
  }
  if (s.vocab_size_given || s.mode == ArgsMode::kOverrides) {
    return absl::OkStatus();
  }
  if (tokenizer == "GPT2BPETokenizer") {
    model->set_vocab_size(kGpt2VocabSize);
  } else if (tokenizer == "Llama2Tokenizer") {
    model->set_vocab_size(kLlama2VocabSize);
    s.Note(
        "vocab size not given by --vocab-size; assumed 32000 (Llama-2 "
        "tokenizer); pass --vocab-size for exact logits memory");
  } else if (tokenizer == "BertWordPieceLowerCase" || tokenizer == "BertWordPieceCase") {
    model->set_vocab_size(kBertVocabSize);
    s.Note(
        "vocab size not given by --vocab-size; assumed 30522 (BERT "
        "WordPiece); pass --vocab-size for exact logits memory");
  } else {
    model->set_vocab_size(kGpt2VocabSize);
    s.Note(
        "vocab size not given by --vocab-size; assumed 50257 (GPT-2 BPE, "
        "Megatron's test default); pass --vocab-size for exact logits "
        "memory");
  }
  return absl::OkStatus();
}

// --bf16 and --fp16; neither means fp32 parameters on a whole command line.
absl::Status ResolvePrecisionFlags(ParseState& s) {
  if (s.bf16 && s.fp16) {
    return absl::InvalidArgumentError("--bf16 and --fp16 cannot both be given");
  }
  if (!s.bf16 && !s.fp16 && s.mode == ArgsMode::kFullCommandLine) {
    s.job->mutable_precision()->set_params_dtype(v1::DTYPE_FP32);
  }
  return absl::OkStatus();
}

// The gradient buffer's dtype, as Megatron-LM derives it: validate_args
// (training/arguments.py) sets accumulate_allreduce_grads_in_fp32 for bf16
// parameters unless --grad-reduce-in-bf16, or when --main-grads-dtype is
// its default fp32, and training.py passes it to the DDP config as
// grad_reduce_in_fp32, which alone sizes the buffer
// (distributed/param_and_grad_buffer.py group_params_for_buffers: fp32,
// else the parameter's dtype). --main-grads-dtype sizes nothing else (the
// optimizer config only checks it), so written at its default it changes
// nothing.
absl::Status ResolveGradBufferDtype(ParseState& s) {
  if (!s.grad_reduce_in_bf16 && !s.accumulate_allreduce_grads_in_fp32 &&
      !s.main_grads_dtype.has_value()) {
    return absl::OkStatus();
  }
  v1::PrecisionSpec* precision = s.job->mutable_precision();
  v1::Dtype params = precision->params_dtype();
  if (s.bf16) params = v1::DTYPE_BF16;
  if (s.fp16) params = v1::DTYPE_FP16;
  if (params == v1::DTYPE_UNSPECIFIED) params = v1::DTYPE_BF16;
  const v1::Dtype main = s.main_grads_dtype.value_or(v1::DTYPE_FP32);
  bool fp32_buffer = s.accumulate_allreduce_grads_in_fp32;
  if (params == v1::DTYPE_BF16) {
    if (s.accumulate_allreduce_grads_in_fp32 && main != v1::DTYPE_FP32) {
      return absl::InvalidArgumentError(
          "--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set");
    }
    fp32_buffer = !s.grad_reduce_in_bf16 && (fp32_buffer || main == v1::DTYPE_FP32);
  }
  if (params == v1::DTYPE_FP32) fp32_buffer = true;
  precision->set_main_grads_dtype(fp32_buffer ? v1::DTYPE_FP32 : params);
  return absl::OkStatus();
}

// --cross-entropy-loss-fusion turns the fusion on and
// --cross-entropy-fusion-impl chooses it; an implementation alone changes a
// fusion already on (a preset's).
void ResolveCrossEntropyFusion(ParseState& s) {
  v1::TrainingSpec* training = s.job->mutable_training();
  const v1::CrossEntropyFusion impl =
      s.cross_entropy_fusion_impl.value_or(v1::CROSS_ENTROPY_FUSION_NATIVE);
  const bool fused_before = training->cross_entropy_fusion() == v1::CROSS_ENTROPY_FUSION_NATIVE ||
                            training->cross_entropy_fusion() == v1::CROSS_ENTROPY_FUSION_TE;
  if (s.cross_entropy_loss_fusion || (fused_before && s.cross_entropy_fusion_impl.has_value())) {
    training->set_cross_entropy_fusion(impl);
  }
}

// A batch-size schedule's final size, unless --global-batch-size is given.
void ResolveBatchSchedule(ParseState& s) {
  if (s.final_scheduled_batch_size.has_value() && !s.global_batch_size_given) {
    s.job->mutable_training()->set_global_batch_size(*s.final_scheduled_batch_size);
  }
}

// Megatron-LM refuses the two FSDP implementations together: validate_args
// asserts --ckpt-format torch_dist or torch_dcp for Torch FSDP2 and
// fsdp_dtensor for Megatron-FSDP.
absl::Status CheckOneFsdp(const ParseState& s) {
  if (s.megatron_fsdp && s.torch_fsdp2) {
    return absl::InvalidArgumentError(
        "--use-megatron-fsdp with --use-torch-fsdp2: Megatron-LM refuses the pair (Torch FSDP2 "
        "needs --ckpt-format torch_dist or torch_dcp, Megatron-FSDP fsdp_dtensor); choose one");
  }
  return absl::OkStatus();
}

// validate_args asserts that the deprecated --hybrid-override-pattern and
// --hybrid-layer-pattern are not both given.
absl::Status CheckOneHybridPattern(const ParseState& s) {
  if (s.hybrid_layer_pattern && s.hybrid_override_pattern) {
    return absl::InvalidArgumentError(
        "--hybrid-override-pattern with --hybrid-layer-pattern: Megatron-LM refuses the pair "
        "(--hybrid-override-pattern is the deprecated spelling of --hybrid-layer-pattern); "
        "give --hybrid-layer-pattern only");
  }
  return absl::OkStatus();
}

// hybrid_builders.py builds a HybridModel from the hybrid stack spec and
// --hybrid-layer-pattern; without a pattern, parse_hybrid_pattern
// (hybrid_layer_allocation.py) gives it no layers. The pattern may come from
// a preset the flags override, so the job's field is read.
absl::Status CheckHybridSpecPattern(const ParseState& s) {
  if (s.hybrid_stack_spec && s.job->model().hybrid_layer_pattern().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--spec ", *s.spec,
        " builds a hybrid model from --hybrid-layer-pattern, which is not given (Megatron-LM's "
        "HybridModel would have no layers); give --hybrid-layer-pattern"));
  }
  return absl::OkStatus();
}

}  // namespace

void ParseState::Note(std::string text) {
  if (notes == nullptr || notes_added > kMaxNotes) return;
  const auto ours = notes->end() - static_cast<ptrdiff_t>(notes_added);
  if (std::find(ours, notes->end(), text) != notes->end()) return;
  ++notes_added;
  notes->push_back(notes_added > kMaxNotes ? "further notes omitted" : std::move(text));
}

void ParseState::Unmodelled(std::string flag, absl::string_view value, absl::string_view reason) {
  constexpr int kMaxUnmodelledSettings = 64;
  for (const v1::UnmodelledSetting& seen : job->unmodelled_settings()) {
    if (seen.flag() == flag && seen.value() == value) return;
  }
  if (job->unmodelled_settings_size() >= kMaxUnmodelledSettings) return;
  v1::UnmodelledSetting* setting = job->add_unmodelled_settings();
  setting->set_flag(std::move(flag));
  setting->set_value(std::string(value));
  setting->set_reason(std::string(reason));
}

absl::Status ResolveFlags(ParseState& s) {
  OOMGUARD_RETURN_IF_ERROR(CheckOneFsdp(s));
  OOMGUARD_RETURN_IF_ERROR(CheckOneHybridPattern(s));
  OOMGUARD_RETURN_IF_ERROR(CheckHybridSpecPattern(s));
  ResolveQueryGroups(s);
  OOMGUARD_RETURN_IF_ERROR(ResolveVocab(s));
  OOMGUARD_RETURN_IF_ERROR(ResolvePrecisionFlags(s));
  OOMGUARD_RETURN_IF_ERROR(ResolveGradBufferDtype(s));
  ResolveCrossEntropyFusion(s);
  ResolveBatchSchedule(s);
  return absl::OkStatus();
}

}  // namespace oomguard
