// Reads a HuggingFace config.json into a ModelSpec, mapping keys the way
// Megatron-Bridge / mbridge do (see design/ACCOUNTING.md, section a.1).
#include "jobspec/hf_config.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "jobspec/config_json.h"

namespace oomguard {
namespace {

using Json = ::nlohmann::json;

constexpr std::string_view kNonNegativeInteger = "a non-negative integer";
constexpr std::string_view kUint32Range = "an integer in [0, 4294967295]";

// The model families this reader knows, by HF `model_type`.
enum class Family {
  kLlama,      // llama, mistral.
  kQwen2,      // qwen2: QKV bias.
  kQwen3,      // qwen3: qk-layernorm.
  kQwen2Moe,   // qwen2_moe: QKV bias, shared expert.
  kQwen3Moe,   // qwen3_moe: qk-layernorm.
  kMixtral,    // mixtral.
  kDeepSeek,   // deepseek_v2, deepseek_v3, kimi_k2: MLA + MoE.
  kNemotronH,  // nemotron_h: Nemotron-H, Nemotron 3; hybrid Mamba (+ MoE).
};

struct FamilyEntry {
  std::string_view model_type;
  Family family;
};

// Sorted by model_type (the error message lists them in this order).
constexpr FamilyEntry kFamilies[] = {
    {"deepseek_v2", Family::kDeepSeek}, {"deepseek_v3", Family::kDeepSeek},
    {"kimi_k2", Family::kDeepSeek},     {"llama", Family::kLlama},
    {"mistral", Family::kLlama},        {"mixtral", Family::kMixtral},
    {"nemotron_h", Family::kNemotronH}, {"qwen2", Family::kQwen2},
    {"qwen2_moe", Family::kQwen2Moe},   {"qwen3", Family::kQwen3},
    {"qwen3_moe", Family::kQwen3Moe},
};

std::optional<Family> FindFamily(std::string_view model_type) {
  for (const FamilyEntry& entry : kFamilies) {
    if (entry.model_type == model_type) return entry.family;
  }
  return std::nullopt;
}

std::string SupportedModelTypes() {
  std::vector<std::string> names;
  for (const FamilyEntry& entry : kFamilies) {
    names.emplace_back(entry.model_type);
  }
  return absl::StrJoin(names, ", ");
}

// A JSON number as it was most likely written: whole numbers without an
// exponent, others with up to 15 significant digits.
std::string NumberText(double number) {
  if (std::floor(number) == number && std::fabs(number) < 1e15) {
    return absl::StrFormat("%.0f", number);
  }
  return absl::StrFormat("%.15g", number);
}

// A JSON value as short text for error messages: strings quoted, every
// value escaped and cut short (common/quoted_value.h).
std::string ValueText(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_unsigned:
      return absl::StrCat(value.get<uint64_t>());
    case Json::value_t::number_integer:
      return absl::StrCat(value.get<int64_t>());
    case Json::value_t::number_float:
      return NumberText(value.get<double>());
    case Json::value_t::string:
      return Quote(value.get_ref<const std::string&>());
    default:
      return EscapedValue(value.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

// Typed access to the keys of one config object; errors name the key, the
// value and the model_type.
class ConfigReader {
 public:
  ConfigReader(const Json& config, std::string model_type)
      : config_(config), model_type_(std::move(model_type)) {}

  const std::string& model_type() const { return model_type_; }

  // The value of `key`, or null when absent or JSON null.
  const Json* Find(std::string_view key) const {
    auto it = config_.find(std::string(key));
    if (it == config_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  absl::Status Missing(std::string_view key) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: missing \"%s\"", Prefix(), key));
  }

  absl::Status BadValue(std::string_view key, std::string_view expected, const Json& value) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: \"%s\" must be %s, got %s", Prefix(),
                                                      key, expected, ValueText(value)));
  }

  // A whole number in 32 bits; 4096.0 counts as 4096.
  absl::StatusOr<uint32_t> ToUint(std::string_view key, const Json& value) const {
    constexpr uint32_t kMax = std::numeric_limits<uint32_t>::max();
    if (value.is_number_unsigned()) {
      const uint64_t number = value.get<uint64_t>();
      if (number > kMax) return BadValue(key, kUint32Range, value);
      return static_cast<uint32_t>(number);
    }
    if (!value.is_number_float()) return BadValue(key, kNonNegativeInteger, value);
    const double number = value.get<double>();
    if (!std::isfinite(number) || number < 0 || std::floor(number) != number) {
      return BadValue(key, kNonNegativeInteger, value);
    }
    if (number > kMax) return BadValue(key, kUint32Range, value);
    return static_cast<uint32_t>(number);
  }

  absl::StatusOr<uint32_t> RequiredUint(std::string_view key) const {
    const Json* value = Find(key);
    if (value == nullptr) return MissingOrNull(key);
    return ToUint(key, *value);
  }

  absl::StatusOr<std::optional<uint32_t>> OptionalUint(std::string_view key) const {
    const Json* value = Find(key);
    if (value == nullptr) return std::optional<uint32_t>();
    OOMGUARD_ASSIGN_OR_RETURN(uint32_t number, ToUint(key, *value));
    return std::optional<uint32_t>(number);
  }

  absl::StatusOr<std::optional<bool>> OptionalBool(std::string_view key) const {
    const Json* value = Find(key);
    if (value == nullptr) return std::optional<bool>();
    if (!value->is_boolean()) return BadValue(key, "true or false", *value);
    return std::optional<bool>(value->get<bool>());
  }

  // A probability in [0, 1].
  absl::StatusOr<std::optional<double>> OptionalFraction(std::string_view key) const {
    const Json* value = Find(key);
    if (value == nullptr) return std::optional<double>();
    if (!value->is_number() || !(value->get<double>() >= 0) || !(value->get<double>() <= 1)) {
      return BadValue(key, "a number in [0, 1]", *value);
    }
    return std::optional<double>(value->get<double>());
  }

  // A list of layer indices, each < `num_layers`.
  absl::StatusOr<std::vector<uint32_t>> OptionalLayerList(std::string_view key,
                                                          uint32_t num_layers) const {
    std::vector<uint32_t> layers;
    const Json* value = Find(key);
    if (value == nullptr) return layers;
    if (!value->is_array()) return BadValue(key, "a list of layer indices", *value);
    for (const Json& item : *value) {
      OOMGUARD_ASSIGN_OR_RETURN(uint32_t layer, ToUint(key, item));
      if (layer >= num_layers) {
        return BadValue(key, absl::StrCat("layer indices < ", num_layers), item);
      }
      layers.push_back(layer);
    }
    return layers;
  }

 private:
  std::string Prefix() const { return absl::StrCat("config.json (", model_type_, ")"); }

  absl::Status MissingOrNull(std::string_view key) const {
    auto it = config_.find(std::string(key));
    if (it == config_.end()) return Missing(key);
    return BadValue(key, kNonNegativeInteger, *it);
  }

  const Json& config_;
  std::string model_type_;
};

// The non-empty string value of `key` in `config`, if any.
std::optional<std::string> StringField(const Json& config, std::string_view key) {
  auto it = config.find(std::string(key));
  if (it == config.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

// The object holding the language model: `text_config` for vision-language
// configs, else the top level.
absl::StatusOr<const Json*> LanguageConfig(const Json& top) {
  auto it = top.find("text_config");
  if (it == top.end() || it->is_null()) return &top;
  if (!it->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: \"text_config\" must be an object, got ", ValueText(*it)));
  }
  return &*it;
}

// Keys every supported family shares, plus the settings Megatron-Bridge
// fixes for all of them.
absl::Status ApplyCommon(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t layers, cfg.RequiredUint("num_hidden_layers"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t hidden, cfg.RequiredUint("hidden_size"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t heads, cfg.RequiredUint("num_attention_heads"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t ffn, cfg.RequiredUint("intermediate_size"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t vocab, cfg.RequiredUint("vocab_size"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> max_pos,
                            cfg.OptionalUint("max_position_embeddings"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<bool> tie, cfg.OptionalBool("tie_word_embeddings"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> attention_dropout,
                            cfg.OptionalFraction("attention_dropout"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> hidden_dropout,
                            cfg.OptionalFraction("hidden_dropout"));

  model->set_num_layers(layers);
  model->set_hidden_size(hidden);
  model->set_num_attention_heads(heads);
  model->set_ffn_hidden_size(ffn);
  model->set_vocab_size(vocab);  // Unpadded: Megatron pads it later.
  if (max_pos.has_value()) model->set_max_position_embeddings(*max_pos);
  // Every supported family's HF config class (LlamaConfig, Qwen2Config,
  // MixtralConfig, DeepseekV3Config, ...) defaults tie_word_embeddings to
  // false, so an absent key means untied.
  model->set_untie_embeddings_and_output_weights(!tie.value_or(false));

  // Megatron's dropout default is 0.1; HF models train without dropout.
  const double attention = attention_dropout.value_or(0.0);
  model->set_attention_dropout(attention);
  model->set_hidden_dropout(hidden_dropout.value_or(attention));

  model->set_activation(v1::ACTIVATION_SWIGLU);
  model->set_normalization(v1::NORMALIZATION_RMS_NORM);
  model->set_add_bias_linear(false);
  model->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  return absl::OkStatus();
}

// GQA shape: KV groups and head dimension.
absl::Status ApplyStandardAttention(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> kv_heads,
                            cfg.OptionalUint("num_key_value_heads"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> head_dim, cfg.OptionalUint("head_dim"));
  model->set_num_query_groups(kv_heads.value_or(model->num_attention_heads()));
  // Without head_dim, Megatron's default h / heads is what HF uses too.
  if (head_dim.has_value()) model->set_kv_channels(*head_dim);
  return absl::OkStatus();
}

// Settings shared by every MoE family.
void ApplyMoeDefaults(v1::ModelSpec* model) {
  model->set_moe_grouped_gemm(true);
  model->set_moe_token_dispatcher(v1::TOKEN_DISPATCHER_ALLTOALL);
}

// Stores `pattern` (1 = MoE layer) only when it makes some layer dense; an
// all-MoE model needs no pattern.
void SetMoePattern(const std::vector<bool>& pattern, v1::ModelSpec* model) {
  bool any_dense = false;
  for (bool is_moe : pattern) any_dense = any_dense || !is_moe;
  if (!any_dense) return;
  for (bool is_moe : pattern) model->add_moe_layer_pattern(is_moe ? 1 : 0);
}

// Qwen2-MoE / Qwen3-MoE: layer i is MoE unless it is listed in
// mlp_only_layers or (i + 1) is not a multiple of decoder_sparse_step.
absl::Status ApplyQwenMoePattern(const ConfigReader& cfg, v1::ModelSpec* model) {
  const uint32_t layers = model->num_layers();
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> step, cfg.OptionalUint("decoder_sparse_step"));
  if (step.has_value() && *step == 0) {
    return cfg.BadValue("decoder_sparse_step", "a positive integer",
                        *cfg.Find("decoder_sparse_step"));
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::vector<uint32_t> mlp_only,
                            cfg.OptionalLayerList("mlp_only_layers", layers));
  std::vector<bool> pattern(layers, true);
  for (uint32_t i = 0; i < layers; ++i) {
    pattern[i] = (i + 1) % step.value_or(1) == 0;
  }
  for (uint32_t layer : mlp_only) pattern[layer] = false;
  SetMoePattern(pattern, model);
  return absl::OkStatus();
}

// Qwen2-MoE and Qwen3-MoE experts.
absl::Status ApplyQwenMoe(const ConfigReader& cfg, bool shared_expert, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t experts, cfg.RequiredUint("num_experts"));
  if (experts == 0) return absl::OkStatus();  // A dense model.
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t topk, cfg.RequiredUint("num_experts_per_tok"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t width, cfg.RequiredUint("moe_intermediate_size"));
  model->set_num_experts(experts);
  model->set_moe_router_topk(topk);
  model->set_moe_ffn_hidden_size(width);
  if (shared_expert) {
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> shared,
                              cfg.OptionalUint("shared_expert_intermediate_size"));
    model->set_moe_shared_expert_intermediate_size(shared.value_or(0));
  }
  ApplyMoeDefaults(model);
  return ApplyQwenMoePattern(cfg, model);
}

// Mixtral: every layer is MoE; experts have the dense width.
absl::Status ApplyMixtral(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t experts, cfg.RequiredUint("num_local_experts"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t topk, cfg.RequiredUint("num_experts_per_tok"));
  model->set_num_experts(experts);
  model->set_moe_router_topk(topk);
  model->set_moe_ffn_hidden_size(model->ffn_hidden_size());
  ApplyMoeDefaults(model);
  return absl::OkStatus();
}

// Multi-head latent attention shapes.
absl::Status ApplyMla(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> q_lora, cfg.OptionalUint("q_lora_rank"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t kv_lora, cfg.RequiredUint("kv_lora_rank"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t qk_nope, cfg.RequiredUint("qk_nope_head_dim"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t qk_rope, cfg.RequiredUint("qk_rope_head_dim"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t v_dim, cfg.RequiredUint("v_head_dim"));
  model->set_attention_type(v1::ATTENTION_TYPE_MLA);
  // null (DeepSeek-V2-Lite, Moonlight) = no query compression.
  if (q_lora.has_value() && *q_lora > 0) model->set_q_lora_rank(*q_lora);
  model->set_kv_lora_rank(kv_lora);
  model->set_qk_head_dim(qk_nope);
  model->set_qk_pos_emb_head_dim(qk_rope);
  model->set_v_head_dim(v_dim);
  model->set_qk_layernorm(true);
  return absl::OkStatus();
}

// DeepSeek: layer i is MoE when i >= first_k_dense_replace and i is a
// multiple of moe_layer_freq.
absl::Status ApplyDeepSeekPattern(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> first_dense,
                            cfg.OptionalUint("first_k_dense_replace"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> freq, cfg.OptionalUint("moe_layer_freq"));
  if (freq.has_value() && *freq == 0) {
    return cfg.BadValue("moe_layer_freq", "a positive integer", *cfg.Find("moe_layer_freq"));
  }
  std::vector<bool> pattern(model->num_layers());
  for (uint32_t i = 0; i < model->num_layers(); ++i) {
    pattern[i] = i >= first_dense.value_or(0) && i % freq.value_or(1) == 0;
  }
  SetMoePattern(pattern, model);
  return absl::OkStatus();
}

// DeepSeek routed + shared experts.
absl::Status ApplyDeepSeekMoe(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> experts, cfg.OptionalUint("n_routed_experts"));
  if (experts.value_or(0) == 0) return absl::OkStatus();  // A dense model.
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t topk, cfg.RequiredUint("num_experts_per_tok"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t width, cfg.RequiredUint("moe_intermediate_size"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> shared, cfg.OptionalUint("n_shared_experts"));
  const uint64_t shared_width = uint64_t{width} * shared.value_or(0);
  if (shared_width > std::numeric_limits<uint32_t>::max()) {
    return cfg.BadValue("n_shared_experts",
                        "small enough that n_shared_experts x "
                        "moe_intermediate_size fits 32 bits",
                        *cfg.Find("n_shared_experts"));
  }
  model->set_num_experts(*experts);
  model->set_moe_router_topk(topk);
  model->set_moe_ffn_hidden_size(width);
  model->set_moe_shared_expert_intermediate_size(static_cast<uint32_t>(shared_width));
  model->set_moe_router_dtype_fp32(true);
  ApplyMoeDefaults(model);
  return ApplyDeepSeekPattern(cfg, model);
}

absl::Status ApplyDeepSeek(const ConfigReader& cfg, v1::ModelSpec* model) {
  OOMGUARD_RETURN_IF_ERROR(ApplyMla(cfg, model));
  OOMGUARD_RETURN_IF_ERROR(ApplyDeepSeekMoe(cfg, model));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> mtp,
                            cfg.OptionalUint("num_nextn_predict_layers"));
  model->set_mtp_num_layers(mtp.value_or(0));
  return absl::OkStatus();
}

// Nemotron-H and Nemotron 3 as Megatron-Bridge's NemotronHBridge
// (models/nemotronh/nemotron_h_bridge.py, NemotronHModelProvider) maps them:
// hybrid_override_pattern is the hybrid layer pattern; ssm_state_size,
// n_groups, mamba_num_heads and mamba_head_dim the Mamba sizes (without
// mamba_num_heads, expand x hidden_size / mamba_head_dim heads);
// attention_head_dim (or head_dim) the attention head width; squared-ReLU
// MLPs, no position embedding; the MoE ('E') layers' experts from
// n_routed_experts, with an fp32 router. Megatron-Core's MambaMixer has a
// convolution of width 4 only.
absl::Status ApplyNemotronH(const ConfigReader& cfg, v1::ModelSpec* model) {
  const Json* pattern = cfg.Find("hybrid_override_pattern");
  if (pattern == nullptr) return cfg.Missing("hybrid_override_pattern");
  if (!pattern->is_string() || pattern->get_ref<const std::string&>().empty()) {
    return cfg.BadValue("hybrid_override_pattern", "a layer pattern such as \"M-M*-\"", *pattern);
  }
  model->set_hybrid_layer_pattern(pattern->get<std::string>());
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> state, cfg.OptionalUint("ssm_state_size"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> groups, cfg.OptionalUint("n_groups"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> heads, cfg.OptionalUint("mamba_num_heads"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> head_dim, cfg.OptionalUint("mamba_head_dim"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> expand, cfg.OptionalUint("expand"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> conv, cfg.OptionalUint("conv_kernel"));
  if (conv.has_value() && *conv != 4) {
    return cfg.BadValue("conv_kernel", "4 (the width of Megatron-Core's Mamba convolution)",
                        *cfg.Find("conv_kernel"));
  }
  if (state.has_value()) model->set_mamba_state_dim(*state);
  if (groups.has_value()) model->set_mamba_num_groups(*groups);
  if (head_dim.has_value()) model->set_mamba_head_dim(*head_dim);
  if (heads.has_value()) {
    model->set_mamba_num_heads(*heads);
  } else if (expand.has_value()) {
    const uint64_t inner = uint64_t{*expand} * model->hidden_size();
    const uint32_t width = head_dim.value_or(64);
    if (width == 0 || inner % width != 0 || inner / width > std::numeric_limits<uint32_t>::max()) {
      return cfg.BadValue("expand",
                          absl::StrCat("such that expand x hidden_size is a multiple of "
                                       "mamba_head_dim ",
                                       width),
                          *cfg.Find("expand"));
    }
    model->set_mamba_num_heads(static_cast<uint32_t>(inner / width));
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> attention_head_dim,
                            cfg.OptionalUint("attention_head_dim"));
  if (attention_head_dim.has_value()) model->set_kv_channels(*attention_head_dim);
  model->set_activation(v1::ACTIVATION_SQUARED_RELU);
  model->set_position_embedding(v1::POSITION_EMBEDDING_NONE);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> experts, cfg.OptionalUint("n_routed_experts"));
  if (experts.value_or(0) == 0) return absl::OkStatus();  // No MoE layers.
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t topk, cfg.RequiredUint("num_experts_per_tok"));
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t width, cfg.RequiredUint("moe_intermediate_size"));
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<uint32_t> shared,
                            cfg.OptionalUint("moe_shared_expert_intermediate_size"));
  model->set_num_experts(*experts);
  model->set_moe_router_topk(topk);
  model->set_moe_ffn_hidden_size(width);
  model->set_moe_shared_expert_intermediate_size(shared.value_or(0));
  model->set_moe_router_dtype_fp32(true);
  ApplyMoeDefaults(model);
  return absl::OkStatus();
}

absl::Status ApplyFamily(Family family, const ConfigReader& cfg, v1::ModelSpec* model) {
  if (family != Family::kDeepSeek) {
    OOMGUARD_RETURN_IF_ERROR(ApplyStandardAttention(cfg, model));
  }
  switch (family) {
    case Family::kLlama:
      return absl::OkStatus();
    case Family::kQwen2:
      model->set_add_qkv_bias(true);
      return absl::OkStatus();
    case Family::kQwen3:
      model->set_qk_layernorm(true);
      return absl::OkStatus();
    case Family::kQwen2Moe:
      model->set_add_qkv_bias(true);
      return ApplyQwenMoe(cfg, /*shared_expert=*/true, model);
    case Family::kQwen3Moe:
      model->set_qk_layernorm(true);
      return ApplyQwenMoe(cfg, /*shared_expert=*/false, model);
    case Family::kMixtral:
      return ApplyMixtral(cfg, model);
    case Family::kDeepSeek:
      return ApplyDeepSeek(cfg, model);
    case Family::kNemotronH:
      return ApplyNemotronH(cfg, model);
  }
  return absl::InternalError("unhandled model family");
}

}  // namespace

absl::StatusOr<v1::ModelSpec> ParseHfConfig(std::string_view json) {
  OOMGUARD_ASSIGN_OR_RETURN(const Json top, ReadConfigJson(json));
  OOMGUARD_ASSIGN_OR_RETURN(const Json* text, LanguageConfig(top));
  std::optional<std::string> model_type = StringField(*text, "model_type");
  if (!model_type.has_value()) model_type = StringField(top, "model_type");
  if (!model_type.has_value()) {
    return absl::InvalidArgumentError("config.json: missing \"model_type\" (a string)");
  }
  const std::optional<Family> family = FindFamily(*model_type);
  if (!family.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("config.json: unsupported model_type %s; supported: %s", Quote(*model_type),
                        SupportedModelTypes()));
  }

  v1::ModelSpec model;
  const ConfigReader cfg(*text, *model_type);
  OOMGUARD_RETURN_IF_ERROR(ApplyCommon(cfg, &model));
  OOMGUARD_RETURN_IF_ERROR(ApplyFamily(*family, cfg, &model));
  std::optional<std::string> name = StringField(top, "_name_or_path");
  if (!name.has_value()) name = StringField(*text, "_name_or_path");
  model.set_name(name.value_or(*model_type));
  return model;
}

}  // namespace oomguard
