#include "jobspec/megatron_args.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/message_differencer.h"

namespace oomguard {
namespace {

using v1::JobSpec;

// ---------------------------------------------------------------------------
// Limits and Megatron-LM defaults.

constexpr size_t kMaxArgumentLineBytes = size_t{1} << 20;
// Longest --moe-layer-freq pattern, and largest number inside one; far above
// any real layer count, low enough that a hostile `[1]*10**9` costs nothing.
constexpr int64_t kMaxPatternLength = int64_t{1} << 16;
constexpr int kMaxPatternNesting = 32;
constexpr size_t kMaxNotes = 64;

constexpr uint32_t kGpt2VocabSize = 50257;
constexpr uint32_t kLlama2VocabSize = 32000;
constexpr uint32_t kBertVocabSize = 30522;

// ---------------------------------------------------------------------------
// Values and their errors.

// One occurrence of a flag with the values it took.
struct FlagUse {
  std::string display;  // The flag as written, without "=value".
  std::vector<absl::string_view> values;

  absl::string_view value() const { return values.front(); }
};

// A value for an error message: quoted, escaped, bounded in length (the
// input may be hostile).
std::string Quote(absl::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string quoted = "\"";
  for (const char c : text.substr(0, kMaxShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&quoted, "\\", absl::string_view(&c, 1));
    } else if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&quoted, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      quoted.push_back(c);
    }
  }
  if (text.size() > kMaxShown) quoted.append("...");
  quoted.push_back('"');
  return quoted;
}

absl::Status BadValue(const FlagUse& flag, absl::string_view expected, absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag.display, ": expected ", expected, ", got ", Quote(value)));
}

bool IsDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag) {
  uint32_t out = 0;
  if (!IsDigits(flag.value()) || !absl::SimpleAtoi(flag.value(), &out)) {
    return BadValue(flag, "a non-negative integer", flag.value());
  }
  return out;
}

// An allowed interval for a floating-point flag.
struct Range {
  double low;
  bool low_open;
  double high;
  bool high_open;
  absl::string_view expected;  // For the error message.
};

constexpr Range kProbability = {0.0, false, 1.0, true, "a number in [0, 1)"};
constexpr Range kFraction = {0.0, false, 1.0, false, "a number in [0, 1]"};
constexpr Range kPositive = {0.0, true, std::numeric_limits<double>::max(), false,
                             "a positive number"};

absl::StatusOr<double> ParseReal(const FlagUse& flag, const Range& range) {
  double out = 0;
  const bool in_range = absl::SimpleAtod(flag.value(), &out) && std::isfinite(out) &&
                        (range.low_open ? out > range.low : out >= range.low) &&
                        (range.high_open ? out < range.high : out <= range.high);
  if (!in_range) return BadValue(flag, range.expected, flag.value());
  return out;
}

template <typename E>
using Words = std::vector<std::pair<absl::string_view, E>>;

// Maps an enum word (argparse `choices`, case-sensitive) to its value.
template <typename E>
absl::StatusOr<E> ParseWord(const FlagUse& flag, absl::string_view value, const Words<E>& words) {
  for (const auto& [word, e] : words) {
    if (value == word) return e;
  }
  std::vector<absl::string_view> names;
  for (const auto& entry : words) names.push_back(entry.first);
  return BadValue(flag, absl::StrCat("one of ", absl::StrJoin(names, "|")), value);
}

const Words<v1::Dtype>& DtypeWords() {
  static const auto* const kWords = new Words<v1::Dtype>{
      {"fp32", v1::DTYPE_FP32},
      {"bf16", v1::DTYPE_BF16},
      {"fp16", v1::DTYPE_FP16},
      {"fp8", v1::DTYPE_FP8},
  };
  return *kWords;
}

// ---------------------------------------------------------------------------
// --moe-layer-freq list expressions.

// Evaluates the small Python subset Megatron's --moe-layer-freq takes:
// list literals of integers, `+` (concatenation), `*` (repetition by an
// integer, either side) and parentheses, e.g. `([0]*3+[1]*58)`.
class LayerPatternParser {
 public:
  explicit LayerPatternParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<uint32_t>> Parse() {
    Value value;
    if (!ParseSum(0, &value)) return absl::InvalidArgumentError(error_);
    SkipSpaces();
    if (pos_ != text_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected character at offset ", pos_));
    }
    if (!value.is_list) return absl::InvalidArgumentError("not a list");
    if (value.list.empty()) return absl::InvalidArgumentError("empty list");
    for (uint32_t entry : value.list) {
      if (entry > 1) {
        return absl::InvalidArgumentError("entries must be 0 (dense) or 1 (MoE)");
      }
    }
    return std::move(value.list);
  }

 private:
  struct Value {
    bool is_list = false;
    int64_t number = 0;
    std::vector<uint32_t> list;
  };

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // sum := product ('+' product)*
  bool ParseSum(int depth, Value* out) {
    if (!ParseProduct(depth, out)) return false;
    while (Consume('+')) {
      Value rhs;
      if (!ParseProduct(depth, &rhs)) return false;
      if (out->is_list != rhs.is_list) return Fail("cannot add a list and a number");
      if (out->is_list) {
        out->list.insert(out->list.end(), rhs.list.begin(), rhs.list.end());
      } else {
        out->number += rhs.number;
      }
      if (!CheckSize(*out)) return false;
    }
    return true;
  }

  // product := atom ('*' atom)*
  bool ParseProduct(int depth, Value* out) {
    if (!ParseAtom(depth, out)) return false;
    while (Consume('*')) {
      Value rhs;
      if (!ParseAtom(depth, &rhs)) return false;
      if (out->is_list && rhs.is_list) return Fail("cannot multiply two lists");
      if (!out->is_list && !rhs.is_list) {
        out->number *= rhs.number;
      } else {
        if (!out->is_list) std::swap(*out, rhs);
        if (rhs.number * static_cast<int64_t>(out->list.size()) > kMaxPatternLength) {
          return Fail("list too long");
        }
        std::vector<uint32_t> repeated;
        repeated.reserve(out->list.size() * static_cast<size_t>(rhs.number));
        for (int64_t i = 0; i < rhs.number; ++i) {
          repeated.insert(repeated.end(), out->list.begin(), out->list.end());
        }
        out->list = std::move(repeated);
      }
      if (!CheckSize(*out)) return false;
    }
    return true;
  }

  // atom := number | '[' [number (',' number)* [',']] ']' | '(' sum ')'
  bool ParseAtom(int depth, Value* out) {
    if (depth > kMaxPatternNesting) return Fail("nested too deeply");
    if (Consume('(')) {
      if (!ParseSum(depth + 1, out)) return false;
      return Consume(')') || Fail("missing ')'");
    }
    if (Consume('[')) return ParseListLiteral(out);
    out->is_list = false;
    return ParseNumber(&out->number);
  }

  bool ParseListLiteral(Value* out) {
    out->is_list = true;
    out->list.clear();
    if (Consume(']')) return true;
    while (true) {
      int64_t number = 0;
      if (!ParseNumber(&number)) return false;
      out->list.push_back(static_cast<uint32_t>(number));
      if (!CheckSize(*out)) return false;
      if (Consume(']')) return true;
      if (!Consume(',')) return Fail("expected ',' or ']'");
      if (Consume(']')) return true;  // Trailing comma.
    }
  }

  bool ParseNumber(int64_t* out) {
    SkipSpaces();
    const size_t start = pos_;
    while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
    if (pos_ == start) return Fail("expected a number, a list or '('");
    if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), out) || *out > kMaxPatternLength) {
      return Fail("number too large");
    }
    return true;
  }

  bool CheckSize(const Value& value) {
    const int64_t size = value.is_list ? static_cast<int64_t>(value.list.size()) : value.number;
    return size <= kMaxPatternLength || Fail("list too long");
  }

  absl::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------------------
// Parse state: what one pass over the arguments has seen so far. Flags whose
// meaning depends on other flags are recorded here and resolved at the end,
// so that their order does not matter.

struct ParseState {
  ArgsMode mode = ArgsMode::kFullCommandLine;
  JobSpec* job = nullptr;
  std::vector<std::string>* notes = nullptr;

  bool bf16 = false;
  bool fp16 = false;
  bool group_query_attention = false;
  std::optional<uint32_t> num_query_groups = std::nullopt;
  bool cross_entropy_loss_fusion = false;
  std::optional<v1::CrossEntropyFusion> cross_entropy_fusion_impl = std::nullopt;
  std::optional<std::string> tokenizer_type = std::nullopt;
  bool vocab_size_given = false;
  bool global_batch_size_given = false;
  std::optional<uint32_t> final_scheduled_batch_size = std::nullopt;

  size_t notes_added = 0;

  // Adds a note once; a hostile argument line cannot add more than
  // kMaxNotes of them.
  void Note(std::string text) {
    if (notes == nullptr || notes_added > kMaxNotes) return;
    const auto ours = notes->end() - static_cast<ptrdiff_t>(notes_added);
    if (std::find(ours, notes->end(), text) != notes->end()) return;
    ++notes_added;
    notes->push_back(notes_added > kMaxNotes ? "further notes omitted" : std::move(text));
  }
};

// ---------------------------------------------------------------------------
// The flag table.

enum class Arity {
  kSwitch,  // No value (`store_true`).
  kOne,     // Exactly one value.
  kList,    // Zero or more values, up to the next flag (`nargs='*'`).
};

using Handler = std::function<absl::Status(const FlagUse&, ParseState&)>;

struct FlagDef {
  Arity arity;
  Handler apply;
};

template <typename Msg>
using Part = Msg* (JobSpec::*)();

template <typename Msg>
FlagDef Uint(Part<Msg> part, void (Msg::*set)(uint32_t)) {
  return {Arity::kOne, [part, set](const FlagUse& flag, ParseState& s) -> absl::Status {
            absl::StatusOr<uint32_t> value = ParseUint32(flag);
            if (!value.ok()) return value.status();
            ((s.job->*part)()->*set)(*value);
            return absl::OkStatus();
          }};
}

template <typename Msg>
FlagDef Real(Part<Msg> part, void (Msg::*set)(double), Range range) {
  return {Arity::kOne, [part, set, range](const FlagUse& flag, ParseState& s) -> absl::Status {
            absl::StatusOr<double> value = ParseReal(flag, range);
            if (!value.ok()) return value.status();
            ((s.job->*part)()->*set)(*value);
            return absl::OkStatus();
          }};
}

// A switch that sets a field to a constant.
template <typename Msg, typename T>
FlagDef Switch(Part<Msg> part, void (Msg::*set)(T), std::type_identity_t<T> value) {
  return {Arity::kSwitch, [part, set, value](const FlagUse&, ParseState& s) -> absl::Status {
            ((s.job->*part)()->*set)(value);
            return absl::OkStatus();
          }};
}

// A one-value flag whose value is an enum word.
template <typename Msg, typename E>
FlagDef Word(Part<Msg> part, void (Msg::*set)(E), std::type_identity_t<Words<E>> words) {
  return {
      Arity::kOne,
      [part, set, words = std::move(words)](const FlagUse& flag, ParseState& s) -> absl::Status {
        absl::StatusOr<E> value = ParseWord(flag, flag.value(), words);
        if (!value.ok()) return value.status();
        ((s.job->*part)()->*set)(*value);
        return absl::OkStatus();
      }};
}

// A flag handled by a function of its own.
FlagDef Custom(Arity arity, Handler apply) { return {arity, std::move(apply)}; }

// Custom handlers, in table order.

absl::Status ApplyNumQueryGroups(const FlagUse& flag, ParseState& s) {
  absl::StatusOr<uint32_t> value = ParseUint32(flag);
  if (!value.ok()) return value.status();
  s.num_query_groups = *value;
  return absl::OkStatus();
}

absl::Status ApplyVocabSize(const FlagUse& flag, ParseState& s) {
  absl::StatusOr<uint32_t> value = ParseUint32(flag);
  if (!value.ok()) return value.status();
  s.job->mutable_model()->set_vocab_size(*value);
  s.vocab_size_given = true;
  return absl::OkStatus();
}

absl::Status ApplyMoeLayerFreq(const FlagUse& flag, ParseState& s) {
  v1::ModelSpec* model = s.job->mutable_model();
  uint32_t every = 0;
  if (IsDigits(flag.value()) && absl::SimpleAtoi(flag.value(), &every)) {
    model->set_moe_layer_freq(every);
    model->clear_moe_layer_pattern();
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<uint32_t>> pattern = LayerPatternParser(flag.value()).Parse();
  if (!pattern.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag.display,
                     ": expected an integer or a list expression such as "
                     "([0]*3+[1]*11), got ",
                     Quote(flag.value()), " (", pattern.status().message(), ")"));
  }
  model->clear_moe_layer_freq();
  model->mutable_moe_layer_pattern()->Assign(pattern->begin(), pattern->end());
  return absl::OkStatus();
}

absl::Status ApplyMoeRouterDtype(const FlagUse& flag, ParseState& s) {
  s.job->mutable_model()->set_moe_router_dtype_fp32(flag.value() == "fp32" ||
                                                    flag.value() == "fp64");
  return absl::OkStatus();
}

absl::Status ApplyTokenizerType(const FlagUse& flag, ParseState& s) {
  s.tokenizer_type = std::string(flag.value());
  return absl::OkStatus();
}

absl::Status ApplyGlobalBatchSize(const FlagUse& flag, ParseState& s) {
  absl::StatusOr<uint32_t> value = ParseUint32(flag);
  if (!value.ok()) return value.status();
  s.job->mutable_training()->set_global_batch_size(*value);
  s.global_batch_size_given = true;
  return absl::OkStatus();
}

absl::Status ApplyRampupBatchSize(const FlagUse& flag, ParseState& s) {
  s.Note(absl::StrCat(flag.display,
                      ": batch size ramps up; memory is estimated at the "
                      "final global batch size (--global-batch-size)"));
  return absl::OkStatus();
}

// `--step-batch-size-schedule "0:384 200B:768 400B:1152"`: the last step's
// batch size is the one the job ends with.
absl::Status ApplyStepBatchSizeSchedule(const FlagUse& flag, ParseState& s) {
  std::vector<absl::string_view> steps;
  for (absl::string_view value : flag.values) {
    for (absl::string_view step :
         absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      steps.push_back(step);
    }
  }
  uint32_t final_size = 0;
  if (!steps.empty()) {
    std::pair<absl::string_view, absl::string_view> step =
        absl::StrSplit(steps.back(), absl::MaxSplits(':', 1));
    if (IsDigits(step.second) && absl::SimpleAtoi(step.second, &final_size)) {
      s.final_scheduled_batch_size = final_size;
    }
  }
  s.Note(absl::StrCat(flag.display,
                      ": batch size changes during training; memory is "
                      "estimated at the final global batch size"));
  return absl::OkStatus();
}

absl::Status ApplyCrossEntropyFusionImpl(const FlagUse& flag, ParseState& s) {
  absl::StatusOr<v1::CrossEntropyFusion> impl = ParseWord<v1::CrossEntropyFusion>(
      flag, flag.value(),
      {{"native", v1::CROSS_ENTROPY_FUSION_NATIVE}, {"te", v1::CROSS_ENTROPY_FUSION_TE}});
  if (!impl.ok()) return impl.status();
  s.cross_entropy_fusion_impl = *impl;
  return absl::OkStatus();
}

absl::Status ApplyRecomputeModules(const FlagUse& flag, ParseState& s) {
  static const auto* const kModules = new Words<v1::RecomputeModule>{
      {"core_attn", v1::RECOMPUTE_MODULE_CORE_ATTN},
      {"moe_act", v1::RECOMPUTE_MODULE_MOE_ACT},
      {"layernorm", v1::RECOMPUTE_MODULE_LAYERNORM},
      {"mla_up_proj", v1::RECOMPUTE_MODULE_MLA_UP_PROJ},
      {"mlp", v1::RECOMPUTE_MODULE_MLP},
      {"moe", v1::RECOMPUTE_MODULE_MOE},
      {"shared_experts", v1::RECOMPUTE_MODULE_SHARED_EXPERTS},
  };
  std::vector<v1::RecomputeModule> modules;
  for (absl::string_view word : flag.values) {
    absl::StatusOr<v1::RecomputeModule> module = ParseWord(flag, word, *kModules);
    if (!module.ok()) return module.status();
    if (std::find(modules.begin(), modules.end(), *module) == modules.end()) {
      modules.push_back(*module);
    }
  }
  auto* field = s.job->mutable_recompute()->mutable_modules();
  field->Clear();
  for (v1::RecomputeModule module : modules) field->Add(module);
  return absl::OkStatus();
}

void AssignStrings(const FlagUse& flag, google::protobuf::RepeatedPtrField<std::string>* field) {
  field->Clear();
  for (absl::string_view value : flag.values) field->Add(std::string(value));
}

absl::Status ApplyOffloadModules(const FlagUse& flag, ParseState& s) {
  AssignStrings(flag, s.job->mutable_recompute()->mutable_offload_modules());
  return absl::OkStatus();
}

absl::Status ApplyCudaGraphModules(const FlagUse& flag, ParseState& s) {
  AssignStrings(flag, s.job->mutable_runtime()->mutable_cuda_graph_modules());
  return absl::OkStatus();
}

absl::Status ApplyPipelineLayout(const FlagUse& flag, ParseState& s) {
  s.job->mutable_parallelism()->set_pipeline_model_parallel_layout(std::string(flag.value()));
  return absl::OkStatus();
}

absl::Status ApplyBf16(const FlagUse&, ParseState& s) {
  s.bf16 = true;
  s.job->mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  return absl::OkStatus();
}

absl::Status ApplyFp16(const FlagUse&, ParseState& s) {
  s.fp16 = true;
  s.job->mutable_precision()->set_params_dtype(v1::DTYPE_FP16);
  return absl::OkStatus();
}

absl::Status ApplyFp8Format(const FlagUse&, ParseState& s) {
  s.job->mutable_precision()->set_fp8(true);
  return absl::OkStatus();
}

absl::Status Accept(const FlagUse&, ParseState&) { return absl::OkStatus(); }

absl::Status SetGroupQueryAttention(const FlagUse&, ParseState& s) {
  s.group_query_attention = true;
  return absl::OkStatus();
}

absl::Status SetCrossEntropyLossFusion(const FlagUse&, ParseState& s) {
  s.cross_entropy_loss_fusion = true;
  return absl::OkStatus();
}

using FlagTable = std::map<std::string, FlagDef, std::less<>>;

void AddModelFlags(FlagTable& t) {
  using M = v1::ModelSpec;
  const Part<M> m = &JobSpec::mutable_model;
  t["num-layers"] = Uint(m, &M::set_num_layers);
  t["hidden-size"] = Uint(m, &M::set_hidden_size);
  t["ffn-hidden-size"] = Uint(m, &M::set_ffn_hidden_size);
  t["num-attention-heads"] = Uint(m, &M::set_num_attention_heads);
  t["num-query-groups"] = Custom(Arity::kOne, ApplyNumQueryGroups);
  t["group-query-attention"] = Custom(Arity::kSwitch, SetGroupQueryAttention);
  t["kv-channels"] = Uint(m, &M::set_kv_channels);
  t["vocab-size"] = Custom(Arity::kOne, ApplyVocabSize);
  t["tokenizer-type"] = Custom(Arity::kOne, ApplyTokenizerType);
  t["make-vocab-size-divisible-by"] = Uint(m, &M::set_make_vocab_size_divisible_by);
  t["max-position-embeddings"] = Uint(m, &M::set_max_position_embeddings);
  t["swiglu"] = Switch(m, &M::set_activation, v1::ACTIVATION_SWIGLU);
  t["squared-relu"] = Switch(m, &M::set_activation, v1::ACTIVATION_SQUARED_RELU);
  t["normalization"] =
      Word(m, &M::set_normalization,
           {{"LayerNorm", v1::NORMALIZATION_LAYER_NORM}, {"RMSNorm", v1::NORMALIZATION_RMS_NORM}});
  t["position-embedding-type"] =
      Word(m, &M::set_position_embedding,
           {{"learned_absolute", v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE},
            {"rope", v1::POSITION_EMBEDDING_ROPE},
            {"yarn", v1::POSITION_EMBEDDING_ROPE},
            {"mrope", v1::POSITION_EMBEDDING_ROPE},
            {"none", v1::POSITION_EMBEDDING_NONE}});
  // Legacy spellings of --position-embedding-type.
  t["use-rotary-position-embeddings"] =
      Switch(m, &M::set_position_embedding, v1::POSITION_EMBEDDING_ROPE);
  t["no-position-embedding"] = Switch(m, &M::set_position_embedding, v1::POSITION_EMBEDDING_NONE);
  t["disable-bias-linear"] = Switch(m, &M::set_add_bias_linear, false);
  t["add-qkv-bias"] = Switch(m, &M::set_add_qkv_bias, true);
  t["qk-layernorm"] = Switch(m, &M::set_qk_layernorm, true);
  t["untie-embeddings-and-output-weights"] =
      Switch(m, &M::set_untie_embeddings_and_output_weights, true);
  t["hidden-dropout"] = Real(m, &M::set_hidden_dropout, kProbability);
  t["attention-dropout"] = Real(m, &M::set_attention_dropout, kProbability);
  t["multi-latent-attention"] = Switch(m, &M::set_attention_type, v1::ATTENTION_TYPE_MLA);
  t["q-lora-rank"] = Uint(m, &M::set_q_lora_rank);
  t["kv-lora-rank"] = Uint(m, &M::set_kv_lora_rank);
  t["qk-head-dim"] = Uint(m, &M::set_qk_head_dim);
  t["qk-pos-emb-head-dim"] = Uint(m, &M::set_qk_pos_emb_head_dim);
  t["v-head-dim"] = Uint(m, &M::set_v_head_dim);
  t["num-experts"] = Uint(m, &M::set_num_experts);
  t["moe-ffn-hidden-size"] = Uint(m, &M::set_moe_ffn_hidden_size);
  t["moe-router-topk"] = Uint(m, &M::set_moe_router_topk);
  t["moe-shared-expert-intermediate-size"] = Uint(m, &M::set_moe_shared_expert_intermediate_size);
  t["moe-layer-freq"] = Custom(Arity::kOne, ApplyMoeLayerFreq);
  t["moe-grouped-gemm"] = Switch(m, &M::set_moe_grouped_gemm, true);
  t["moe-token-dispatcher-type"] = Word(m, &M::set_moe_token_dispatcher,
                                        {{"allgather", v1::TOKEN_DISPATCHER_ALLGATHER},
                                         {"alltoall", v1::TOKEN_DISPATCHER_ALLTOALL},
                                         {"flex", v1::TOKEN_DISPATCHER_FLEX}});
  t["moe-router-dtype"] = Custom(Arity::kOne, ApplyMoeRouterDtype);
  t["moe-router-force-load-balancing"] = Switch(m, &M::set_moe_router_force_load_balancing, true);
  t["moe-expert-capacity-factor"] = Real(m, &M::set_moe_expert_capacity_factor, kPositive);
  t["moe-pad-expert-input-to-capacity"] = Switch(m, &M::set_moe_pad_expert_input_to_capacity, true);
  t["mtp-num-layers"] = Uint(m, &M::set_mtp_num_layers);
}

void AddParallelismFlags(FlagTable& t) {
  using P = v1::ParallelismSpec;
  const Part<P> p = &JobSpec::mutable_parallelism;
  t["tensor-model-parallel-size"] = Uint(p, &P::set_tensor_model_parallel_size);
  t["pipeline-model-parallel-size"] = Uint(p, &P::set_pipeline_model_parallel_size);
  t["context-parallel-size"] = Uint(p, &P::set_context_parallel_size);
  t["expert-model-parallel-size"] = Uint(p, &P::set_expert_model_parallel_size);
  t["expert-tensor-parallel-size"] = Uint(p, &P::set_expert_tensor_parallel_size);
  t["sequence-parallel"] = Switch(p, &P::set_sequence_parallel, true);
  t["num-layers-per-virtual-pipeline-stage"] =
      Uint(p, &P::set_num_layers_per_virtual_pipeline_stage);
  t["num-virtual-stages-per-pipeline-rank"] = Uint(p, &P::set_num_virtual_stages_per_pipeline_rank);
  t["microbatch-group-size-per-virtual-pipeline-stage"] =
      Uint(p, &P::set_microbatch_group_size_per_vp_stage);
  t["decoder-first-pipeline-num-layers"] = Uint(p, &P::set_decoder_first_pipeline_num_layers);
  t["decoder-last-pipeline-num-layers"] = Uint(p, &P::set_decoder_last_pipeline_num_layers);
  t["account-for-embedding-in-pipeline-split"] =
      Switch(p, &P::set_account_for_embedding_in_pipeline_split, true);
  t["account-for-loss-in-pipeline-split"] =
      Switch(p, &P::set_account_for_loss_in_pipeline_split, true);
  t["pipeline-model-parallel-layout"] = Custom(Arity::kOne, ApplyPipelineLayout);
  t["overlap-moe-expert-parallel-comm"] = Switch(p, &P::set_overlap_moe_expert_parallel_comm, true);
}

void AddTrainingFlags(FlagTable& t) {
  using T = v1::TrainingSpec;
  const Part<T> tr = &JobSpec::mutable_training;
  t["micro-batch-size"] = Uint(tr, &T::set_micro_batch_size);
  t["global-batch-size"] = Custom(Arity::kOne, ApplyGlobalBatchSize);
  t["seq-length"] = Uint(tr, &T::set_seq_length);
  t["defer-embedding-wgrad-compute"] = Switch(tr, &T::set_defer_embedding_wgrad_compute, true);
  t["wgrad-deferral-limit"] = Uint(tr, &T::set_wgrad_deferral_limit);
  t["no-masked-softmax-fusion"] = Switch(tr, &T::set_masked_softmax_fusion, false);
  t["rampup-batch-size"] = Custom(Arity::kList, ApplyRampupBatchSize);
  t["step-batch-size-schedule"] = Custom(Arity::kList, ApplyStepBatchSizeSchedule);
  t["attention-backend"] = Word(tr, &T::set_attention_backend,
                                {{"auto", v1::ATTENTION_BACKEND_UNSPECIFIED},
                                 {"flash", v1::ATTENTION_BACKEND_FLASH},
                                 {"fused", v1::ATTENTION_BACKEND_FUSED},
                                 {"unfused", v1::ATTENTION_BACKEND_UNFUSED},
                                 {"local", v1::ATTENTION_BACKEND_LOCAL}});
  t["use-flash-attn"] = Switch(tr, &T::set_attention_backend, v1::ATTENTION_BACKEND_FLASH);
  t["transformer-impl"] = Word(tr, &T::set_transformer_impl,
                               {{"transformer_engine", v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE},
                                {"local", v1::TRANSFORMER_IMPL_LOCAL},
                                {"inference_optimized", v1::TRANSFORMER_IMPL_TRANSFORMER_ENGINE}});
  t["cross-entropy-loss-fusion"] = Custom(Arity::kSwitch, SetCrossEntropyLossFusion);
  t["cross-entropy-fusion-impl"] = Custom(Arity::kOne, ApplyCrossEntropyFusionImpl);
  t["no-rope-fusion"] = Switch(tr, &T::set_rope_fusion, false);
}

void AddRecomputeFlags(FlagTable& t) {
  using R = v1::RecomputeSpec;
  const Part<R> r = &JobSpec::mutable_recompute;
  t["recompute-granularity"] = Word(r, &R::set_granularity,
                                    {{"full", v1::RECOMPUTE_GRANULARITY_FULL},
                                     {"selective", v1::RECOMPUTE_GRANULARITY_SELECTIVE},
                                     {"none", v1::RECOMPUTE_GRANULARITY_NONE}});
  t["recompute-method"] =
      Word(r, &R::set_method,
           {{"uniform", v1::RECOMPUTE_METHOD_UNIFORM}, {"block", v1::RECOMPUTE_METHOD_BLOCK}});
  t["recompute-num-layers"] = Uint(r, &R::set_num_layers);
  t["recompute-modules"] = Custom(Arity::kList, ApplyRecomputeModules);
  // Megatron's legacy switch: selective recompute with the default modules.
  t["recompute-activations"] = Switch(r, &R::set_granularity, v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  t["cpu-offloading"] = Switch(r, &R::set_cpu_offloading, true);
  t["cpu-offloading-num-layers"] = Uint(r, &R::set_cpu_offloading_num_layers);
  t["fine-grained-activation-offloading"] =
      Switch(r, &R::set_fine_grained_activation_offloading, true);
  t["offload-modules"] = Custom(Arity::kList, ApplyOffloadModules);
}

void AddPrecisionFlags(FlagTable& t) {
  using P = v1::PrecisionSpec;
  const Part<P> p = &JobSpec::mutable_precision;
  t["bf16"] = Custom(Arity::kSwitch, ApplyBf16);
  t["fp16"] = Custom(Arity::kSwitch, ApplyFp16);
  t["fp8-format"] = Custom(Arity::kOne, ApplyFp8Format);
  t["fp8-recipe"] = Custom(Arity::kOne, Accept);
  t["fp8-param-gather"] = Switch(p, &P::set_fp8_param_gather, true);
  t["optimizer"] = Word(p, &P::set_optimizer,
                        {{"adam", v1::OPTIMIZER_ADAM},
                         {"sgd", v1::OPTIMIZER_SGD},
                         {"muon", v1::OPTIMIZER_MUON},
                         {"dist_muon", v1::OPTIMIZER_MUON}});
  t["use-distributed-optimizer"] = Switch(p, &P::set_use_distributed_optimizer, true);
  t["num-distributed-optimizer-instances"] = Uint(p, &P::set_num_distributed_optimizer_instances);
  t["grad-reduce-in-bf16"] = Switch(p, &P::set_main_grads_dtype, v1::DTYPE_BF16);
  t["accumulate-allreduce-grads-in-fp32"] = Switch(p, &P::set_main_grads_dtype, v1::DTYPE_FP32);
  t["use-precision-aware-optimizer"] = Switch(p, &P::set_use_precision_aware_optimizer, true);
  t["main-params-dtype"] = Word(p, &P::set_main_params_dtype, DtypeWords());
  t["main-grads-dtype"] = Word(p, &P::set_main_grads_dtype, DtypeWords());
  t["exp-avg-dtype"] = Word(p, &P::set_exp_avg_dtype, DtypeWords());
  t["exp-avg-sq-dtype"] = Word(p, &P::set_exp_avg_sq_dtype, DtypeWords());
  t["optimizer-cpu-offload"] = Switch(p, &P::set_optimizer_cpu_offload, true);
  t["optimizer-offload-fraction"] = Real(p, &P::set_optimizer_offload_fraction, kFraction);
}

void AddRuntimeFlags(FlagTable& t) {
  using R = v1::RuntimeSpec;
  const Part<R> r = &JobSpec::mutable_runtime;
  t["cuda-graph-impl"] = Word(r, &R::set_cuda_graph_impl,
                              {{"none", v1::CUDA_GRAPH_IMPL_NONE},
                               {"local", v1::CUDA_GRAPH_IMPL_LOCAL},
                               {"transformer_engine", v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE}});
  t["enable-cuda-graph"] = Switch(r, &R::set_cuda_graph_impl, v1::CUDA_GRAPH_IMPL_LOCAL);
  t["external-cuda-graph"] =
      Switch(r, &R::set_cuda_graph_impl, v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE);
  t["cuda-graph-scope"] = Custom(Arity::kList, ApplyCudaGraphModules);
  t["cuda-graph-modules"] = Custom(Arity::kList, ApplyCudaGraphModules);
  t["use-nccl-ub"] = Switch(r, &R::set_use_nccl_ub, true);
}

const FlagTable& Flags() {
  static const FlagTable* const kTable = [] {
    auto* table = new FlagTable;
    AddModelFlags(*table);
    AddParallelismFlags(*table);
    AddTrainingFlags(*table);
    AddRecomputeFlags(*table);
    AddPrecisionFlags(*table);
    AddRuntimeFlags(*table);
    return table;
  }();
  return *kTable;
}

// ---------------------------------------------------------------------------
// Flags that are accepted without being mapped.

// Megatron-LM features oomguard cannot estimate: the whole job is refused.
constexpr absl::string_view kUnimplementedFlags[] = {
    "use-torch-fsdp2",
    "use-megatron-fsdp",
    "use-custom-fsdp",
};

// Flags that do not change per-rank GPU memory (or change it by a negligible
// amount): accepted silently with their values.
constexpr absl::string_view kSilentFlags[] = {
    // Logging, profiling, checkpointing.
    "timing-log-level", "timing-log-option", "profile", "profile-step-start", "profile-step-end",
    "profile-ranks", "use-pytorch-profiler", "record-memory-history", "memory-snapshot-path",
    "logging-level", "enable-one-logger", "save", "load", "save-interval", "save-retain-interval",
    "no-save-optim", "no-save-rng", "no-load-optim", "no-load-rng", "finetune",
    "pretrained-checkpoint", "use-dist-ckpt", "auto-detect-ckpt-format", "async-save",
    "async-ckpt-use-cpu-shm", "async-strategy", "use-checkpoint-args",
    "use-checkpoint-opt-param-scheduler", "override-opt-param-scheduler",
    "use-persistent-ckpt-worker", "no-ckpt-fully-parallel-save", "load-main-params-from-ckpt",
    // Data and tokenizer files.
    "data-path", "train-data-path", "valid-data-path", "test-data-path", "data-cache-path",
    "data-args-path", "per-split-data-args-path", "split", "mock-data", "num-workers",
    "dataloader-type", "vocab-file", "merge-file", "no-mmap-bin-files", "mmap-bin-files",
    "reset-position-ids", "reset-attention-mask", "eod-mask-loss",
    "no-create-attention-mask-in-dataloader", "create-attention-mask-in-dataloader",
    "object-storage-cache-path", "full-validation", "multiple-validation-sets", "legacy-tokenizer",
    "use-packed-sequence",
    // Learning rate, schedule, loss scaling, optimizer hyper-parameters.
    "lr", "min-lr", "decoupled-lr", "decoupled-min-lr", "weight-decay", "start-weight-decay",
    "end-weight-decay", "weight-decay-incr-style", "clip-grad", "adam-beta1", "adam-beta2",
    "adam-eps", "sgd-momentum", "loss-scale", "initial-loss-scale", "min-loss-scale",
    "loss-scale-window", "hysteresis",
    // Run control, seeds, initialization, checks.
    "train-iters", "train-samples", "skip-train", "seed", "data-parallel-random-init",
    "init-method-std", "init-method-xavier-uniform", "rerun-mode", "check-for-nan-in-loss-and-grad",
    "no-check-for-nan-in-loss-and-grad", "check-for-spiky-loss", "check-for-large-grads",
    "test-mode", "calculate-per-token-loss", "enable-experimental", "deterministic-mode",
    "verify-integrity", "empty-unused-memory-level", "use-cpu-initialization",
    // Process groups and communication overlap.
    "distributed-backend", "distributed-timeout-minutes", "use-tp-pp-dp-mapping",
    "overlap-grad-reduce", "overlap-param-gather", "overlap-param-gather-with-optimizer-step",
    "no-align-grad-reduce", "no-align-param-gather", "overlap-p2p-communication",
    "no-overlap-p2p-communication", "overlap-p2p-communication-warmup-flush",
    "use-ring-exchange-p2p", "variable-seq-lengths", "batch-p2p-comm",
    "no-async-tensor-model-parallel-allreduce",
    // Megatron-FSDP settings (FSDP itself is refused above).
    "data-parallel-sharding-strategy", "outer-dp-sharding-strategy",
    // Kernel choices and numerics with the same saved tensors.
    "use-mcore-models", "no-gradient-accumulation-fusion", "gradient-accumulation-fusion",
    "attention-softmax-in-fp32", "apply-query-key-layer-scaling", "no-bias-gelu-fusion",
    "no-bias-swiglu-fusion", "no-bias-dropout-fusion", "no-persist-layer-norm",
    "apply-residual-connection-post-layernorm", "openai-gelu", "te-rng-tracker",
    "inference-rng-tracker", "norm-epsilon", "apply-layernorm-1p", "use-rope-scaling",
    "rope-scaling-factor", "first-last-layers-bf16", "use-transformer-engine-op-fuser",
    "cuda-graph-warmup-steps",
    // MoE routing and loss settings that keep tensor shapes.
    "moe-aux-loss-coeff", "moe-z-loss-coeff", "moe-input-jitter-eps", "moe-permute-fusion",
    "moe-per-layer-logging", "moe-token-drop-policy", "moe-shared-expert-overlap",
    "moe-use-legacy-grouped-gemm", "mtp-loss-scaling-factor",
    // Flags of other model families (BERT, multimodal) that change nothing
    // for a GPT model.
    "bert-no-binary-head", "disable-vision-class-token", "img-h", "img-w", "patch-dim"};

// Prefixes of silently accepted flag families. Exact table entries (e.g.
// moe-router-topk, fp8-format) are looked up first.
constexpr absl::string_view kSilentPrefixes[] = {
    "log-",           "tensorboard",     "wandb",      "one-logger",  "ckpt-",
    "dist-ckpt-",     "non-persistent-", "tokenizer-", "tiktoken-",   "lr-",
    "muon-",          "eval-",           "exit-",      "manual-gc",   "ddp-",
    "megatron-fsdp-", "rotary-",         "mscale",     "moe-router-", "fp8-",
    "straggler-"};

// Flags that may change memory in ways oomguard does not model: accepted
// with a note that says so.
struct Unmodelled {
  absl::string_view flag;
  absl::string_view reason;
};

constexpr Unmodelled kUnmodelledFlags[] = {
    {"tp-comm-overlap", "TP communication overlap user buffers are not modelled"},
    {"tp-comm-overlap-cfg", "TP communication overlap user buffers are not modelled"},
    {"delay-wgrad-compute", "delayed weight-gradient buffers are not modelled"},
    {"moe-flex-dispatcher-backend",
     "dispatcher communication buffers (DeepEP/HybridEP) are not modelled"},
    {"encoder-num-layers", "encoder-decoder (T5) models are not modelled"},
    {"decoder-num-layers", "encoder-decoder (T5) models are not modelled"},
    {"encoder-seq-length", "encoder-decoder (T5) models are not modelled"},
    {"decoder-seq-length", "encoder-decoder (T5) models are not modelled"},
    {"vocab-extra-ids", "extra tokenizer ids are not added to the vocabulary"},
    {"hybrid-layer-pattern", "hybrid (Mamba) models are not modelled"},
    {"spec", "custom layer specs are not modelled; a GPT layer is assumed"},
    {"use-legacy-models", "legacy (non-Core) models are not modelled"},
};

template <typename Container>
bool Contains(const Container& names, absl::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool IsSilent(absl::string_view name) {
  if (Contains(kSilentFlags, name)) return true;
  return std::any_of(std::begin(kSilentPrefixes), std::end(kSilentPrefixes),
                     [name](absl::string_view prefix) { return absl::StartsWith(name, prefix); });
}

std::optional<absl::string_view> UnmodelledReason(absl::string_view name) {
  for (const Unmodelled& entry : kUnmodelledFlags) {
    if (entry.flag == name) return entry.reason;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Tokens.

bool IsFlagToken(absl::string_view token) { return absl::StartsWith(token, "--"); }

// Whether `token` can be a flag's value. As in argparse, a token starting
// with "-" is a value only when it looks like a negative number ("-4",
// "-.5") or is "-" alone; other tokens starting with "-" are options.
bool IsValueToken(absl::string_view token) {
  if (!absl::StartsWith(token, "-") || token == "-") return true;
  const char next = token[1];
  return absl::ascii_isdigit(static_cast<unsigned char>(next)) || next == '.';
}

// Flag names are matched with dashes: `--use_distributed_optimizer` is
// `--use-distributed-optimizer`.
std::string CanonicalName(absl::string_view name) {
  std::string canonical(name);
  std::replace(canonical.begin(), canonical.end(), '_', '-');
  return canonical;
}

// Applies one known flag; returns how many of the `following` tokens it
// took as values.
absl::StatusOr<size_t> ApplyKnownFlag(const FlagDef& def, FlagUse& use,
                                      std::optional<absl::string_view> inline_value,
                                      absl::Span<const std::string> following, ParseState& s) {
  size_t taken = 0;
  switch (def.arity) {
    case Arity::kSwitch:
      if (inline_value.has_value() || !following.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            use.display, " takes no value, got ",
            Quote(inline_value.has_value() ? *inline_value : absl::string_view(following[0]))));
      }
      break;
    case Arity::kOne:
      if (inline_value.has_value()) {
        use.values.push_back(*inline_value);
      } else if (!following.empty()) {
        use.values.push_back(following[0]);
        taken = 1;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(use.display, ": missing value"));
      }
      break;
    case Arity::kList:
      if (inline_value.has_value()) {
        use.values.push_back(*inline_value);
      } else {
        use.values.assign(following.begin(), following.end());
        taken = following.size();
      }
      break;
  }
  absl::Status status = def.apply(use, s);
  if (!status.ok()) return status;
  return taken;
}

// Applies the flag `token` ("--name" or "--name=value"); `following` are the
// value-like tokens after it. Returns how many of them it took.
absl::StatusOr<size_t> ApplyFlag(absl::string_view token, absl::Span<const std::string> following,
                                 ParseState& s) {
  absl::string_view body = token.substr(2);
  std::optional<absl::string_view> inline_value;
  if (const size_t eq = body.find('='); eq != absl::string_view::npos) {
    inline_value = body.substr(eq + 1);
    body = body.substr(0, eq);
  }
  if (body.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("empty flag name in ", Quote(token)));
  }
  const std::string name = CanonicalName(body);
  FlagUse use{absl::StrCat("--", body), {}};
  if (Contains(kUnimplementedFlags, name)) {
    return absl::UnimplementedError(
        absl::StrCat(use.display, ": FSDP jobs are not modelled by oomguard"));
  }
  const FlagTable& flags = Flags();
  if (auto it = flags.find(name); it != flags.end()) {
    return ApplyKnownFlag(it->second, use, inline_value, following, s);
  }
  // Skipped flag: its values are whatever value-like tokens follow.
  if (std::optional<absl::string_view> reason = UnmodelledReason(name)) {
    s.Note(absl::StrCat(use.display, ": ", *reason, "; ignored"));
  } else if (!IsSilent(name)) {
    s.Note(absl::StrCat("ignored unknown flag ", use.display));
  }
  return following.size();
}

// ---------------------------------------------------------------------------
// Resolution of flags that depend on each other or on defaults.

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

absl::Status ResolvePrecision(ParseState& s) {
  if (s.bf16 && s.fp16) {
    return absl::InvalidArgumentError("--bf16 and --fp16 cannot both be given");
  }
  if (!s.bf16 && !s.fp16 && s.mode == ArgsMode::kFullCommandLine) {
    s.job->mutable_precision()->set_params_dtype(v1::DTYPE_FP32);
  }
  return absl::OkStatus();
}

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

void ResolveBatchSchedule(ParseState& s) {
  if (s.final_scheduled_batch_size.has_value() && !s.global_batch_size_given) {
    s.job->mutable_training()->set_global_batch_size(*s.final_scheduled_batch_size);
  }
}

absl::Status Resolve(ParseState& s) {
  ResolveQueryGroups(s);
  if (absl::Status status = ResolveVocab(s); !status.ok()) return status;
  if (absl::Status status = ResolvePrecision(s); !status.ok()) return status;
  ResolveCrossEntropyFusion(s);
  ResolveBatchSchedule(s);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Environment.

// Applies a PyTorch allocator configuration ("key:value,key:value").
void ApplyAllocatorConfig(absl::string_view config, v1::RuntimeSpec* runtime) {
  for (absl::string_view option : absl::StrSplit(config, ',')) {
    std::pair<absl::string_view, absl::string_view> key_value =
        absl::StrSplit(option, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(key_value.first) != "expandable_segments") {
      continue;
    }
    const absl::string_view value = absl::StripAsciiWhitespace(key_value.second);
    if (absl::EqualsIgnoreCase(value, "true")) {
      runtime->set_expandable_segments(true);
    } else if (absl::EqualsIgnoreCase(value, "false")) {
      runtime->set_expandable_segments(false);
    }
  }
}

// ---------------------------------------------------------------------------
// Word splitting.

bool IsWordSeparator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Length of a line break starting at `pos` ("\n" or "\r\n"), else 0.
size_t LineBreakLength(absl::string_view line, size_t pos) {
  if (pos < line.size() && line[pos] == '\n') return 1;
  if (line.substr(pos, 2) == "\r\n") return 2;
  return 0;
}

// Reads a double-quoted string whose opening quote is at `open` into `word`;
// returns the position after the closing quote.
absl::StatusOr<size_t> ReadDoubleQuoted(absl::string_view line, size_t open, std::string* word) {
  size_t pos = open + 1;
  while (pos < line.size()) {
    const char c = line[pos];
    if (c == '"') return pos + 1;
    if (c == '\\' && pos + 1 < line.size()) {
      if (const size_t n = LineBreakLength(line, pos + 1); n > 0) {
        pos += 1 + n;
        continue;
      }
      const char next = line[pos + 1];
      if (next == '"' || next == '\\' || next == '$' || next == '`') {
        word->push_back(next);
        pos += 2;
        continue;
      }
    }
    word->push_back(c);
    ++pos;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unterminated double quote opened at byte ", open));
}

}  // namespace

absl::Status ApplyMegatronArgs(absl::Span<const std::string> args, ArgsMode mode, v1::JobSpec* job,
                               std::vector<std::string>* notes) {
  if (job == nullptr) return absl::InvalidArgumentError("job is null");
  ParseState state{.mode = mode, .job = job, .notes = notes};
  absl::string_view last_flag;
  size_t pos = 0;
  while (pos < args.size()) {
    const absl::string_view token = args[pos];
    if (!IsFlagToken(token)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument ", Quote(token),
          last_flag.empty() ? " (flags start with \"--\")" : absl::StrCat(" after ", last_flag)));
    }
    size_t end = pos + 1;
    while (end < args.size() && IsValueToken(args[end])) ++end;
    absl::StatusOr<size_t> taken = ApplyFlag(token, args.subspan(pos + 1, end - pos - 1), state);
    if (!taken.ok()) return taken.status();
    last_flag = token;
    pos += 1 + *taken;
  }
  return Resolve(state);
}

void ApplyEnvironment(const std::map<std::string, std::string>& env, v1::JobSpec* job) {
  if (job == nullptr) return;
  // PyTorch >= 2.9 reads PYTORCH_ALLOC_CONF first and falls back to the
  // older PYTORCH_CUDA_ALLOC_CONF.
  auto config = env.find("PYTORCH_ALLOC_CONF");
  if (config == env.end()) config = env.find("PYTORCH_CUDA_ALLOC_CONF");
  if (config != env.end()) {
    ApplyAllocatorConfig(config->second, job->mutable_runtime());
  }
  if (auto nccl = env.find("NCCL_GRAPH_REGISTER"); nccl != env.end()) {
    job->mutable_runtime()->set_nccl_graph_register_disabled(
        absl::StripAsciiWhitespace(nccl->second) == "0");
  }
}

absl::StatusOr<std::vector<std::string>> SplitArgumentLine(std::string_view std_line) {
  // This absl build has its own string_view type.
  const absl::string_view line(std_line.data(), std_line.size());
  if (line.size() > kMaxArgumentLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument line longer than ", kMaxArgumentLineBytes, " bytes"));
  }
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // Also true for an empty quoted word ('').
  size_t pos = 0;
  while (pos < line.size()) {
    const char c = line[pos];
    if (IsWordSeparator(c)) {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
      ++pos;
    } else if (c == '\'') {
      const size_t close = line.find('\'', pos + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("unterminated single quote opened at byte ", pos));
      }
      word.append(line.data() + pos + 1, close - pos - 1);
      in_word = true;
      pos = close + 1;
    } else if (c == '"') {
      absl::StatusOr<size_t> next = ReadDoubleQuoted(line, pos, &word);
      if (!next.ok()) return next.status();
      in_word = true;
      pos = *next;
    } else if (c == '\\') {
      if (const size_t n = LineBreakLength(line, pos + 1); n > 0) {
        pos += 1 + n;  // Continuation: removed, joins the lines.
      } else if (pos + 1 < line.size()) {
        word.push_back(line[pos + 1]);
        in_word = true;
        pos += 2;
      } else {
        word.push_back('\\');  // A trailing backslash stays literal.
        in_word = true;
        ++pos;
      }
    } else {
      word.push_back(c);
      in_word = true;
      ++pos;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool MayChangeMemory(std::string_view std_unresolved) {
  const absl::string_view unresolved(std_unresolved.data(), std_unresolved.size());
  if (!absl::StartsWith(unresolved, "--")) {
    // A whole word from an expansion ("$EXTRA_ARGS") may be any flags; one
    // starting with literal text is the value of the flag before it.
    const absl::string_view word = absl::StripLeadingAsciiWhitespace(
        unresolved.substr(std::min(unresolved.find_first_not_of("\"'"), unresolved.size())));
    return word.empty() || word[0] == '$' || word[0] == '`' || word[0] == '-';
  }
  const absl::string_view flag = unresolved.substr(0, unresolved.find_first_of(" ="));
  if (flag.find_first_of("$`\"'") != absl::string_view::npos) return true;
  // Whether the parser reads the flag: on a small valid job, some sample
  // value is refused or changes the job.
  std::vector<std::string> args = {"--num-layers",
                                   "2",
                                   "--hidden-size",
                                   "64",
                                   "--num-attention-heads",
                                   "4",
                                   "--seq-length",
                                   "128",
                                   "--max-position-embeddings",
                                   "128",
                                   "--micro-batch-size",
                                   "1",
                                   "--vocab-size",
                                   "1024"};
  v1::JobSpec base;
  if (!ApplyMegatronArgs(args, ArgsMode::kFullCommandLine, &base, nullptr).ok()) {
    return true;
  }
  args.push_back(std::string(flag));
  args.push_back("");
  for (const char* sample : {"7", "3"}) {
    args.back() = sample;
    v1::JobSpec probe;
    if (!ApplyMegatronArgs(args, ArgsMode::kFullCommandLine, &probe, nullptr).ok() ||
        !google::protobuf::util::MessageDifferencer::Equals(base, probe)) {
      return true;
    }
  }
  return false;
}

}  // namespace oomguard
