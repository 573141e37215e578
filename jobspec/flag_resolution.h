// What one pass over a Megatron-LM argument line has seen, and the
// resolution at its end of the flags whose meaning depends on other flags or
// on Megatron-LM's defaults (--num-query-groups needs
// --group-query-attention, the vocabulary follows --tokenizer-type, ...), so
// that the order of the flags does not matter.
#ifndef OOMGUARD_JOBSPEC_FLAG_RESOLUTION_H_
#define OOMGUARD_JOBSPEC_FLAG_RESOLUTION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

struct ParseState {
  ArgsMode mode = ArgsMode::kFullCommandLine;
  v1::JobSpec* job = nullptr;
  std::vector<std::string>* notes = nullptr;

  // Flags recorded for the resolution.
  bool bf16 = false;
  bool fp16 = false;
  bool grad_reduce_in_bf16 = false;
  bool accumulate_allreduce_grads_in_fp32 = false;
  std::optional<v1::Dtype> main_grads_dtype = std::nullopt;  // --main-grads-dtype.
  bool group_query_attention = false;
  std::optional<uint32_t> num_query_groups = std::nullopt;
  bool cross_entropy_loss_fusion = false;
  std::optional<v1::CrossEntropyFusion> cross_entropy_fusion_impl = std::nullopt;
  std::optional<std::string> tokenizer_type = std::nullopt;
  bool vocab_size_given = false;
  bool global_batch_size_given = false;
  std::optional<uint32_t> final_scheduled_batch_size = std::nullopt;
  bool megatron_fsdp = false;            // --use-megatron-fsdp.
  bool torch_fsdp2 = false;              // --use-torch-fsdp2.
  bool hybrid_layer_pattern = false;     // --hybrid-layer-pattern.
  bool hybrid_override_pattern = false;  // --hybrid-override-pattern (its older spelling).
  // --spec: its values joined by a space, and whether they name the hybrid
  // stack spec (the spec oomguard models, megatron_flags.cc ApplySpec).
  std::optional<std::string> spec = std::nullopt;
  bool hybrid_stack_spec = false;

  size_t notes_added = 0;

  // Adds a note once; a hostile argument line cannot add more than 64 of
  // them.
  void Note(std::string text);

  // Records a setting oomguard does not model in job->unmodelled_settings
  // (`flag` as Megatron-LM spells it, with "--"; `value` a choice value, or
  // empty), once; at most 64 of them (one is enough for the job not to be
  // judged).
  void Unmodelled(std::string flag, absl::string_view value, absl::string_view reason);
};

// Sets the JobSpec fields of the recorded flags: the query groups, the
// vocabulary size, the parameter dtype, the gradient buffer's dtype, the
// cross-entropy fusion and the global batch size. InvalidArgument for flags that contradict each
// other
// (--bf16 with --fp16, --use-megatron-fsdp with --use-torch-fsdp2) or miss a partner
// (NullTokenizer without --vocab-size).
absl::Status ResolveFlags(ParseState& s);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_FLAG_RESOLUTION_H_
