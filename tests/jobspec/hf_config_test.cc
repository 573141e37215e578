#include "jobspec/hf_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string ReadExample(std::string_view name) {
  const std::string path = std::string(OOMGUARD_SOURCE_DIR) + "/examples/hf/" + std::string(name);
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A config as (key, raw JSON value) pairs, rendered in order.
using Fields = std::vector<std::pair<std::string, std::string>>;

std::string ToJson(const Fields& fields) {
  std::string json = "{";
  for (const auto& [key, value] : fields) {
    if (json.size() > 1) json += ",\n";
    json += "\"" + key + "\": " + value;
  }
  return json + "}";
}

// `fields` with `key` set to `value` (replaced in place, or appended).
Fields With(Fields fields, const std::string& key, const std::string& value) {
  for (auto& field : fields) {
    if (field.first == key) {
      field.second = value;
      return fields;
    }
  }
  fields.emplace_back(key, value);
  return fields;
}

Fields Without(Fields fields, const std::string& key) {
  std::erase_if(fields, [&](const auto& field) { return field.first == key; });
  return fields;
}

// Meta-Llama-3-8B without the keys oomguard ignores.
Fields Llama3_8b() {
  return {{"model_type", "\"llama\""},  {"num_hidden_layers", "32"},
          {"hidden_size", "4096"},      {"num_attention_heads", "32"},
          {"num_key_value_heads", "8"}, {"intermediate_size", "14336"},
          {"vocab_size", "128256"},     {"max_position_embeddings", "8192"},
          {"rope_theta", "500000.0"},   {"tie_word_embeddings", "false"}};
}

// Moonlight-16B-A3B's shape keys (DeepSeek-V3 architecture, no q-LoRA).
Fields Moonlight() {
  return {{"model_type", "\"deepseek_v3\""},
          {"num_hidden_layers", "27"},
          {"hidden_size", "2048"},
          {"num_attention_heads", "16"},
          {"num_key_value_heads", "16"},
          {"intermediate_size", "11264"},
          {"moe_intermediate_size", "1408"},
          {"n_routed_experts", "64"},
          {"n_shared_experts", "2"},
          {"num_experts_per_tok", "6"},
          {"first_k_dense_replace", "1"},
          {"moe_layer_freq", "1"},
          {"q_lora_rank", "null"},
          {"kv_lora_rank", "512"},
          {"qk_nope_head_dim", "128"},
          {"qk_rope_head_dim", "64"},
          {"v_head_dim", "128"},
          {"vocab_size", "163840"},
          {"max_position_embeddings", "8192"},
          {"attention_dropout", "0.0"},
          {"tie_word_embeddings", "false"}};
}

// Qwen1.5-MoE-A2.7B's shape keys.
Fields Qwen2Moe() {
  return {{"model_type", "\"qwen2_moe\""},
          {"num_hidden_layers", "24"},
          {"hidden_size", "2048"},
          {"num_attention_heads", "16"},
          {"num_key_value_heads", "16"},
          {"intermediate_size", "5632"},
          {"moe_intermediate_size", "1408"},
          {"shared_expert_intermediate_size", "5632"},
          {"num_experts", "60"},
          {"num_experts_per_tok", "4"},
          {"decoder_sparse_step", "1"},
          {"mlp_only_layers", "[]"},
          {"vocab_size", "151936"},
          {"tie_word_embeddings", "false"}};
}

v1::ModelSpec ParseOk(std::string_view json) {
  absl::StatusOr<v1::ModelSpec> model = ParseHfConfig(json);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : v1::ModelSpec();
}

// The InvalidArgument message of parsing `json`.
std::string ParseError(std::string_view json) {
  absl::StatusOr<v1::ModelSpec> model = ParseHfConfig(json);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << model.status();
  return std::string(model.status().message());
}

void ExpectMegatronBridgeBasics(const v1::ModelSpec& m) {
  EXPECT_EQ(m.activation(), v1::ACTIVATION_SWIGLU);
  EXPECT_EQ(m.normalization(), v1::NORMALIZATION_RMS_NORM);
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_ROPE);
  ASSERT_TRUE(m.has_add_bias_linear());
  EXPECT_FALSE(m.add_bias_linear());
  ASSERT_TRUE(m.has_hidden_dropout());
  EXPECT_EQ(m.hidden_dropout(), 0.0);
  ASSERT_TRUE(m.has_attention_dropout());
  EXPECT_EQ(m.attention_dropout(), 0.0);
}

TEST(HfConfigTest, Qwen3_30bA3bExample) {
  const v1::ModelSpec m = ParseOk(ReadExample("qwen3_30b_a3b_config.json"));
  EXPECT_EQ(m.name(), "qwen3_moe");
  EXPECT_EQ(m.num_layers(), 48u);
  EXPECT_EQ(m.hidden_size(), 2048u);
  EXPECT_EQ(m.num_attention_heads(), 32u);
  EXPECT_EQ(m.num_query_groups(), 4u);
  ASSERT_TRUE(m.has_kv_channels());
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.ffn_hidden_size(), 6144u);
  EXPECT_EQ(m.vocab_size(), 151936u);
  EXPECT_FALSE(m.has_make_vocab_size_divisible_by());
  EXPECT_EQ(m.max_position_embeddings(), 40960u);
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  EXPECT_TRUE(m.qk_layernorm());
  EXPECT_FALSE(m.add_qkv_bias());
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_UNSPECIFIED);
  EXPECT_EQ(m.num_experts(), 128u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 768u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 0u);
  EXPECT_THAT(m.moe_layer_pattern(), IsEmpty());  // Every layer is MoE.
  EXPECT_TRUE(m.moe_grouped_gemm());
  EXPECT_EQ(m.moe_token_dispatcher(), v1::TOKEN_DISPATCHER_ALLTOALL);
  EXPECT_FALSE(m.moe_router_dtype_fp32());
  EXPECT_EQ(m.mtp_num_layers(), 0u);
  ExpectMegatronBridgeBasics(m);
}

TEST(HfConfigTest, DeepSeekV3Example) {
  const v1::ModelSpec m = ParseOk(ReadExample("deepseek_v3_config.json"));
  EXPECT_EQ(m.num_layers(), 61u);
  EXPECT_EQ(m.hidden_size(), 7168u);
  EXPECT_EQ(m.num_attention_heads(), 128u);
  EXPECT_EQ(m.ffn_hidden_size(), 18432u);
  EXPECT_EQ(m.vocab_size(), 129280u);
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA);
  ASSERT_TRUE(m.has_q_lora_rank());
  EXPECT_EQ(m.q_lora_rank(), 1536u);
  EXPECT_EQ(m.kv_lora_rank(), 512u);
  EXPECT_EQ(m.qk_head_dim(), 128u);
  EXPECT_EQ(m.qk_pos_emb_head_dim(), 64u);
  EXPECT_EQ(m.v_head_dim(), 128u);
  EXPECT_TRUE(m.qk_layernorm());
  EXPECT_FALSE(m.has_kv_channels());  // Not used by MLA.
  EXPECT_EQ(m.num_experts(), 256u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 2048u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2048u);
  EXPECT_TRUE(m.moe_router_dtype_fp32());
  EXPECT_TRUE(m.moe_grouped_gemm());
  EXPECT_EQ(m.moe_token_dispatcher(), v1::TOKEN_DISPATCHER_ALLTOALL);
  EXPECT_EQ(m.mtp_num_layers(), 1u);
  std::vector<uint32_t> expected(61, 1);
  expected[0] = expected[1] = expected[2] = 0;
  EXPECT_THAT(m.moe_layer_pattern(), ::testing::ElementsAreArray(expected));
  ExpectMegatronBridgeBasics(m);
}

TEST(HfConfigTest, MoonlightHasNoQueryCompression) {
  const v1::ModelSpec m = ParseOk(ToJson(Moonlight()));
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA);
  EXPECT_FALSE(m.has_q_lora_rank());
  EXPECT_EQ(m.kv_lora_rank(), 512u);
  EXPECT_EQ(m.num_experts(), 64u);
  EXPECT_EQ(m.moe_router_topk(), 6u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 1408u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2816u);
  EXPECT_EQ(m.mtp_num_layers(), 0u);
  ASSERT_EQ(m.moe_layer_pattern_size(), 27);
  EXPECT_EQ(m.moe_layer_pattern(0), 0u);
  for (int i = 1; i < 27; ++i) EXPECT_EQ(m.moe_layer_pattern(i), 1u) << i;
}

TEST(HfConfigTest, DeepSeekMoeLayerFreq) {
  const v1::ModelSpec m =
      ParseOk(ToJson(With(With(With(Moonlight(), "num_hidden_layers", "6"), "moe_layer_freq", "2"),
                          "first_k_dense_replace", "1")));
  // HF: MoE where i >= first_k_dense_replace and i % moe_layer_freq == 0.
  EXPECT_THAT(m.moe_layer_pattern(), ElementsAre(0, 0, 1, 0, 1, 0));
}

TEST(HfConfigTest, DeepSeekAllMoeNeedsNoPattern) {
  const v1::ModelSpec m = ParseOk(ToJson(With(Moonlight(), "first_k_dense_replace", "0")));
  EXPECT_THAT(m.moe_layer_pattern(), IsEmpty());
}

TEST(HfConfigTest, KimiK2AndDeepSeekV2AreMla) {
  for (const char* type : {"\"kimi_k2\"", "\"deepseek_v2\""}) {
    const v1::ModelSpec m = ParseOk(ToJson(With(Moonlight(), "model_type", type)));
    EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA) << type;
    EXPECT_EQ(m.num_experts(), 64u) << type;
  }
}

TEST(HfConfigTest, LlamaDefaults) {
  const v1::ModelSpec m = ParseOk(ToJson(Llama3_8b()));
  EXPECT_EQ(m.name(), "llama");
  EXPECT_EQ(m.num_layers(), 32u);
  EXPECT_EQ(m.num_query_groups(), 8u);
  EXPECT_FALSE(m.has_kv_channels());  // h / heads, Megatron's default.
  EXPECT_EQ(m.ffn_hidden_size(), 14336u);
  EXPECT_EQ(m.vocab_size(), 128256u);
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  EXPECT_FALSE(m.qk_layernorm());
  EXPECT_FALSE(m.add_qkv_bias());
  EXPECT_EQ(m.num_experts(), 0u);
  EXPECT_FALSE(m.moe_grouped_gemm());
  ExpectMegatronBridgeBasics(m);
}

TEST(HfConfigTest, AbsentKeysTakeHfFamilyDefaults) {
  const v1::ModelSpec m = ParseOk(
      ToJson(Without(Without(Without(Llama3_8b(), "num_key_value_heads"), "tie_word_embeddings"),
                     "max_position_embeddings")));
  EXPECT_EQ(m.num_query_groups(), 32u);  // MHA.
  // LlamaConfig (and the other families) default tie_word_embeddings false.
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  EXPECT_FALSE(m.has_max_position_embeddings());
}

TEST(HfConfigTest, MistralWithHeadDim) {
  // Mistral-Nemo: head_dim 128 != 5120 / 32.
  const v1::ModelSpec m = ParseOk(
      ToJson(With(With(With(Llama3_8b(), "model_type", "\"mistral\""), "hidden_size", "5120"),
                  "head_dim", "128")));
  ASSERT_TRUE(m.has_kv_channels());
  EXPECT_EQ(m.kv_channels(), 128u);
}

TEST(HfConfigTest, TiedEmbeddings) {
  const v1::ModelSpec m = ParseOk(ToJson(With(Llama3_8b(), "tie_word_embeddings", "true")));
  EXPECT_FALSE(m.untie_embeddings_and_output_weights());
}

TEST(HfConfigTest, Qwen2HasQkvBias) {
  const v1::ModelSpec m = ParseOk(ToJson(With(Llama3_8b(), "model_type", "\"qwen2\"")));
  EXPECT_TRUE(m.add_qkv_bias());
  EXPECT_FALSE(m.qk_layernorm());
}

TEST(HfConfigTest, Qwen3HasQkLayernorm) {
  const v1::ModelSpec m = ParseOk(ToJson(With(Llama3_8b(), "model_type", "\"qwen3\"")));
  EXPECT_TRUE(m.qk_layernorm());
  EXPECT_FALSE(m.add_qkv_bias());
}

TEST(HfConfigTest, Mixtral) {
  const v1::ModelSpec m = ParseOk(
      ToJson(With(With(With(Llama3_8b(), "model_type", "\"mixtral\""), "num_local_experts", "8"),
                  "num_experts_per_tok", "2")));
  EXPECT_EQ(m.num_experts(), 8u);
  EXPECT_EQ(m.moe_router_topk(), 2u);
  EXPECT_EQ(m.ffn_hidden_size(), 14336u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 14336u);
  EXPECT_TRUE(m.moe_grouped_gemm());
  EXPECT_EQ(m.moe_token_dispatcher(), v1::TOKEN_DISPATCHER_ALLTOALL);
  EXPECT_FALSE(m.moe_router_dtype_fp32());
  EXPECT_THAT(m.moe_layer_pattern(), IsEmpty());
}

TEST(HfConfigTest, Qwen2MoeSharedExpert) {
  const v1::ModelSpec m = ParseOk(ToJson(Qwen2Moe()));
  EXPECT_TRUE(m.add_qkv_bias());
  EXPECT_EQ(m.num_experts(), 60u);
  EXPECT_EQ(m.moe_router_topk(), 4u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 1408u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 5632u);
  EXPECT_THAT(m.moe_layer_pattern(), IsEmpty());
}

TEST(HfConfigTest, QwenMoeSparseStepAndMlpOnlyLayers) {
  const v1::ModelSpec m = ParseOk(
      ToJson(With(With(With(Qwen2Moe(), "num_hidden_layers", "6"), "decoder_sparse_step", "2"),
                  "mlp_only_layers", "[5]")));
  // HF: MoE where (i + 1) % step == 0 and i is not in mlp_only_layers.
  EXPECT_THAT(m.moe_layer_pattern(), ElementsAre(0, 1, 0, 1, 0, 0));
}

TEST(HfConfigTest, VisionLanguageUsesTextConfig) {
  const std::string json =
      R"({"model_type": "llava", "_name_or_path": "org/vlm",
          "vision_config": {"hidden_size": 1024},
          "text_config": )" +
      ToJson(Llama3_8b()) + "}";
  const v1::ModelSpec m = ParseOk(json);
  EXPECT_EQ(m.name(), "org/vlm");
  EXPECT_EQ(m.hidden_size(), 4096u);
  EXPECT_EQ(m.num_query_groups(), 8u);
}

TEST(HfConfigTest, TextConfigInheritsTopLevelModelType) {
  const std::string json = R"({"model_type": "qwen3", "text_config": )" +
                           ToJson(Without(Llama3_8b(), "model_type")) + "}";
  EXPECT_TRUE(ParseOk(json).qk_layernorm());
}

TEST(HfConfigTest, NameFromNameOrPath) {
  const v1::ModelSpec m =
      ParseOk(ToJson(With(Llama3_8b(), "_name_or_path", "\"meta-llama/Llama-3-8B\"")));
  EXPECT_EQ(m.name(), "meta-llama/Llama-3-8B");
}

TEST(HfConfigTest, DropoutFromConfig) {
  const v1::ModelSpec m = ParseOk(ToJson(With(Llama3_8b(), "attention_dropout", "0.05")));
  EXPECT_EQ(m.attention_dropout(), 0.05);
  EXPECT_EQ(m.hidden_dropout(), 0.05);
}

TEST(HfConfigTest, MalformedJson) {
  EXPECT_THAT(ParseError(R"({"model_type": "llama", )"), HasSubstr("config.json: "));
  EXPECT_THAT(ParseError(""), HasSubstr("config.json"));
  EXPECT_EQ(ParseError("[1, 2]"), "config.json: the top level must be a JSON object");
  // The parser's own words (nlohmann/json's; protobuf's JSON transcoder said
  // "Expected , or } after key:value pair").
  EXPECT_THAT(ParseError(R"({"model_type": "llama" "x": 1})"),
              HasSubstr("config.json: parse error at line 1, column 26: syntax error while "
                        "parsing object - unexpected string literal; expected '}'"));
}

// Issue 12 (A): a deeply nested extra key is refused in milliseconds (it took
// 3.8 s at 10^4 levels, over 60 s at 10^5), naming the limit and where.
TEST(HfConfigTest, DeeplyNestedExtraKeyIsRefusedFast) {
  const auto start = std::chrono::steady_clock::now();
  for (const int depth : {10'000, 100'000}) {
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    const std::string json = ToJson(With(Llama3_8b(), "extra", deep));
    const size_t at = json.find('[') + 64;  // The top level is level 1.
    EXPECT_EQ(ParseError(json),
              "config.json: nesting deeper than 64 levels at byte " + std::to_string(at));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

// Issue 12 (A): past ~50 levels the transcoder failed with an internal
// "JSON transcoder produced invalid protobuf output"; every depth within the
// limit is read.
TEST(HfConfigTest, NestingWithinTheLimitIsRead) {
  const std::string deep = std::string(63, '[') + std::string(63, ']');
  EXPECT_EQ(ParseOk(ToJson(With(Llama3_8b(), "extra", deep))).num_layers(), 32u);
  const std::string objects = "{\"a\": " + std::string(62, '[') + std::string(62, ']') + "}";
  EXPECT_EQ(ParseOk(ToJson(With(Llama3_8b(), "extra", objects))).num_layers(), 32u);
}

// Issue 12 (B).
TEST(HfConfigTest, EmptyConfigSaysItIsEmpty) {
  EXPECT_EQ(ParseError(""), "config.json: the file is empty; expected a JSON object");
  EXPECT_EQ(ParseError("\n  \n"), "config.json: the file is empty; expected a JSON object");
}

// Issue 12 (B).
TEST(HfConfigTest, ByteOrderMarkIsSkipped) {
  const v1::ModelSpec m = ParseOk("\xEF\xBB\xBF" + ToJson(Llama3_8b()));
  EXPECT_EQ(m.num_layers(), 32u);
  EXPECT_EQ(m.hidden_size(), 4096u);
}

// Issue 12 (C): values from the file are echoed quoted, escaped and cut
// short.
TEST(HfConfigTest, LongValuesAreEchoedCutShort) {
  const std::string long_type = std::string(10000, 't');
  std::string message =
      ParseError(ToJson(With(Llama3_8b(), "model_type", "\"" + long_type + "\"")));
  EXPECT_THAT(message,
              HasSubstr("unsupported model_type \"" + std::string(80, 't') + "...\"; supported: "));
  EXPECT_LT(message.size(), 400u);
  message = ParseError(
      ToJson(With(Llama3_8b(), "hidden_size", "\"" + std::string(10000, 'h') + "\\n\"")));
  EXPECT_THAT(message, HasSubstr(R"("hidden_size" must be a non-negative integer, got "hhh)"));
  EXPECT_LT(message.size(), 200u);
  std::string ones = "[1";
  for (int i = 0; i < 5000; ++i) ones += ",1";
  message = ParseError(ToJson(With(Llama3_8b(), "text_config", ones + "]")));
  EXPECT_THAT(message, HasSubstr(R"("text_config" must be an object, got [1,1,1,)"));
  EXPECT_LT(message.size(), 200u);
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "head_dim", R"("a\"b")"))),
              HasSubstr(R"(got "a\"b")"));
}

TEST(HfConfigTest, OversizedInput) {
  const std::string json =
      ToJson(With(Llama3_8b(), "padding", "\"" + std::string(size_t{4} << 20, 'x') + "\""));
  EXPECT_THAT(ParseError(json), HasSubstr("exceeds the limit"));
}

TEST(HfConfigTest, MissingKeyNamesKeyAndModelType) {
  Fields qwen3_moe;
  for (const auto& [key, value] : Qwen2Moe()) {
    if (key != "moe_intermediate_size") qwen3_moe.emplace_back(key, value);
  }
  EXPECT_EQ(ParseError(ToJson(With(qwen3_moe, "model_type", "\"qwen3_moe\""))),
            R"(config.json (qwen3_moe): missing "moe_intermediate_size")");
  EXPECT_EQ(ParseError(ToJson(Without(Llama3_8b(), "hidden_size"))),
            R"(config.json (llama): missing "hidden_size")");
  EXPECT_THAT(ParseError(ToJson(Without(Moonlight(), "kv_lora_rank"))),
              HasSubstr(R"(missing "kv_lora_rank")"));
  EXPECT_THAT(ParseError(ToJson(Without(Llama3_8b(), "model_type"))),
              HasSubstr(R"(missing "model_type")"));
}

// nemotron_h (Nemotron-H, Nemotron 3): a hybrid Mamba model, keys mapped as
// Megatron-Bridge's NemotronHBridge maps them.
Fields NemotronHSmall() {
  return {{"model_type", "\"nemotron_h\""},
          {"num_hidden_layers", "6"},
          {"hidden_size", "1024"},
          {"num_attention_heads", "8"},
          {"num_key_value_heads", "2"},
          {"attention_head_dim", "128"},
          {"intermediate_size", "4096"},
          {"vocab_size", "131072"},
          {"hybrid_override_pattern", "\"M-M*EM\""},
          {"mamba_num_heads", "32"},
          {"mamba_head_dim", "64"},
          {"n_groups", "4"},
          {"ssm_state_size", "64"},
          {"conv_kernel", "4"},
          {"n_routed_experts", "16"},
          {"num_experts_per_tok", "2"},
          {"moe_intermediate_size", "512"},
          {"moe_shared_expert_intermediate_size", "1024"},
          {"mlp_hidden_act", "\"relu2\""}};
}

TEST(HfConfigTest, NemotronH) {
  v1::ModelSpec m = ParseOk(ToJson(NemotronHSmall()));
  EXPECT_EQ(m.hybrid_layer_pattern(), "M-M*EM");
  EXPECT_EQ(m.mamba_num_heads(), 32u);
  EXPECT_EQ(m.mamba_head_dim(), 64u);
  EXPECT_EQ(m.mamba_num_groups(), 4u);
  EXPECT_EQ(m.mamba_state_dim(), 64u);
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.num_query_groups(), 2u);
  EXPECT_EQ(m.activation(), v1::ACTIVATION_SQUARED_RELU);
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_NONE);
  EXPECT_EQ(m.num_experts(), 16u);
  EXPECT_EQ(m.moe_router_topk(), 2u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 512u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 1024u);
  // Without mamba_num_heads: expand x hidden_size / mamba_head_dim heads.
  m = ParseOk(ToJson(With(Without(NemotronHSmall(), "mamba_num_heads"), "expand", "2")));
  EXPECT_EQ(m.mamba_num_heads(), 32u);
  m = ParseOk(ToJson(Without(NemotronHSmall(), "n_routed_experts")));
  EXPECT_EQ(m.num_experts(), 0u);
  EXPECT_THAT(ParseError(ToJson(Without(NemotronHSmall(), "hybrid_override_pattern"))),
              HasSubstr("config.json (nemotron_h): missing \"hybrid_override_pattern\""));
  EXPECT_THAT(ParseError(ToJson(With(NemotronHSmall(), "hybrid_override_pattern", "[1, 2]"))),
              HasSubstr("\"hybrid_override_pattern\" must be a layer pattern"));
  EXPECT_THAT(ParseError(ToJson(With(NemotronHSmall(), "conv_kernel", "3"))),
              HasSubstr("\"conv_kernel\" must be 4 (the width of Megatron-Core's Mamba "
                        "convolution), got 3"));
}

TEST(HfConfigTest, UnsupportedModelTypeListsSupported) {
  const std::string message = ParseError(ToJson(With(Llama3_8b(), "model_type", "\"gpt2\"")));
  EXPECT_THAT(message, HasSubstr(R"(unsupported model_type "gpt2")"));
  for (const char* type : {"deepseek_v2", "deepseek_v3", "kimi_k2", "llama", "mistral", "mixtral",
                           "nemotron_h", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}) {
    EXPECT_THAT(message, HasSubstr(type));
  }
}

TEST(HfConfigTest, BadNumbersNameKeyAndValue) {
  EXPECT_EQ(ParseError(ToJson(With(Llama3_8b(), "num_hidden_layers", "-4"))),
            R"(config.json (llama): "num_hidden_layers" must be a )"
            R"(non-negative integer, got -4)");
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "hidden_size", "4096.5"))),
              HasSubstr(R"("hidden_size" must be a non-negative integer, )"
                        R"(got 4096.5)"));
  // Issue 12 (D): a value above 32 bits is out of range, and the message
  // gives the range.
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "vocab_size", "4294967296"))),
              HasSubstr(R"("vocab_size" must be an integer in [0, 4294967295], got 4294967296)"));
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "vocab_size", "1e20"))),
              HasSubstr(R"("vocab_size" must be an integer in [0, 4294967295], got 1e+20)"));
  EXPECT_EQ(ParseOk(ToJson(With(Llama3_8b(), "vocab_size", "4294967295.0"))).vocab_size(),
            4294967295u);
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "head_dim", "\"128\""))),
              HasSubstr(R"("head_dim" must be a non-negative integer, )"
                        R"(got "128")"));
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "num_attention_heads", "null"))),
              HasSubstr(R"("num_attention_heads" must be a non-negative integer, )"
                        R"(got null)"));
  EXPECT_THAT(ParseError(ToJson(With(Moonlight(), "n_shared_experts", "1.5"))),
              HasSubstr(R"(config.json (deepseek_v3): "n_shared_experts" must )"
                        R"(be a non-negative integer, got 1.5)"));
}

TEST(HfConfigTest, BadOtherValuesNameKeyAndValue) {
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "tie_word_embeddings", "\"no\""))),
              HasSubstr(R"("tie_word_embeddings" must be true or false, got "no")"));
  EXPECT_THAT(ParseError(ToJson(With(Llama3_8b(), "attention_dropout", "1.5"))),
              HasSubstr(R"("attention_dropout" must be a number in [0, 1], got 1.5)"));
  EXPECT_THAT(ParseError(ToJson(With(Qwen2Moe(), "mlp_only_layers", "[3, 24]"))),
              HasSubstr(R"("mlp_only_layers" must be layer indices < 24, got 24)"));
  EXPECT_THAT(ParseError(ToJson(With(Qwen2Moe(), "mlp_only_layers", "7"))),
              HasSubstr(R"("mlp_only_layers" must be a list)"));
  EXPECT_THAT(ParseError(ToJson(With(Qwen2Moe(), "decoder_sparse_step", "0"))),
              HasSubstr(R"("decoder_sparse_step" must be a positive integer, got 0)"));
  EXPECT_THAT(ParseError(ToJson(With(Moonlight(), "moe_layer_freq", "0"))),
              HasSubstr(R"("moe_layer_freq" must be a positive integer)"));
  EXPECT_THAT(ParseError(R"({"model_type": "llama", "text_config": 3})"),
              HasSubstr(R"("text_config" must be an object, got 3)"));
}

}  // namespace
}  // namespace oomguard
