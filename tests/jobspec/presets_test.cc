#include "jobspec/presets.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobspec/hf_config.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string ReadExample(const std::string& name) {
  const std::string path = std::string(OOMGUARD_SOURCE_DIR) + "/examples/hf/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

v1::ModelSpec PresetOk(const std::string& name) {
  absl::StatusOr<v1::ModelSpec> model = FindPreset(name);
  EXPECT_TRUE(model.ok()) << name << ": " << model.status();
  return model.ok() ? *model : v1::ModelSpec();
}

// The preset and the public config.json file give the same model (the
// preset only adds its display name).
void ExpectSameAsExample(const std::string& preset, const std::string& file) {
  v1::ModelSpec from_preset = PresetOk(preset);
  absl::StatusOr<v1::ModelSpec> from_file = ParseHfConfig(ReadExample(file));
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  from_preset.clear_name();
  from_file->clear_name();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_preset, *from_file))
      << "preset:\n"
      << from_preset.DebugString() << "file:\n"
      << from_file->DebugString();
}

TEST(PresetsTest, EveryPresetParses) {
  ASSERT_GE(ListPresets().size(), 11u);
  for (const PresetInfo& preset : ListPresets()) {
    SCOPED_TRACE(preset.name);
    EXPECT_FALSE(preset.description.empty());
    const v1::ModelSpec m = PresetOk(preset.name);
    EXPECT_FALSE(m.name().empty());
    EXPECT_GT(m.num_layers(), 0u);
    EXPECT_GT(m.hidden_size(), 0u);
    EXPECT_GT(m.num_attention_heads(), 0u);
    EXPECT_GT(m.vocab_size(), 0u);
    EXPECT_GT(m.ffn_hidden_size(), 0u);
    EXPECT_TRUE(m.untie_embeddings_and_output_weights());
    if (!m.moe_layer_pattern().empty()) {
      EXPECT_EQ(m.moe_layer_pattern_size(), static_cast<int>(m.num_layers()));
    }
  }
}

TEST(PresetsTest, ListIsSortedAndUnique) {
  std::vector<std::string> names;
  for (const PresetInfo& preset : ListPresets()) names.push_back(preset.name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const char* required :
       {"deepseek-v3", "llama3-405b", "llama3-70b", "llama3-8b", "mixtral-8x22b", "mixtral-8x7b",
        "moonlight-16b-a3b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-8b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
}

TEST(PresetsTest, LookupVariants) {
  for (const char* name :
       {"qwen3-30b-a3b", "Qwen3-30B-A3B", "QWEN3_30B_A3B", "qwen3.30b.a3b", " qwen3-30b-a3b "}) {
    absl::StatusOr<v1::ModelSpec> model = FindPreset(name);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(model->num_experts(), 128u) << name;
  }
  EXPECT_EQ(PresetOk("qwen2_5_7b").hidden_size(), 3584u);
  EXPECT_EQ(PresetOk("Qwen2.5-72B").hidden_size(), 8192u);
  EXPECT_EQ(PresetOk("DeepSeek_V3").name(), "DeepSeek-V3");
}

TEST(PresetsTest, UnknownNameListsKnownNames) {
  absl::StatusOr<v1::ModelSpec> model = FindPreset("gpt-5");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("\"gpt-5\""));
  for (const PresetInfo& preset : ListPresets()) {
    EXPECT_THAT(model.status().message(), HasSubstr(preset.name));
  }
  EXPECT_EQ(FindPreset("").status().code(), absl::StatusCode::kNotFound);
}

// Issue 12 (C): a 10,000-character name is echoed cut short, so that the
// status message stays within a client's metadata limit.
TEST(PresetsTest, UnknownLongNameIsEchoedCutShort) {
  absl::StatusOr<v1::ModelSpec> model = FindPreset(std::string(10000, 'p'));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(),
              HasSubstr("unknown preset \"" + std::string(80, 'p') + "...\"; known presets: "));
  EXPECT_LT(model.status().message().size(), 1000u);
}

TEST(PresetsTest, Qwen3_30bA3bMatchesConfigFile) {
  ExpectSameAsExample("qwen3-30b-a3b", "qwen3_30b_a3b_config.json");
  const v1::ModelSpec m = PresetOk("qwen3-30b-a3b");
  EXPECT_EQ(m.name(), "Qwen3-30B-A3B");
  EXPECT_EQ(m.num_layers(), 48u);
  EXPECT_EQ(m.hidden_size(), 2048u);
  EXPECT_EQ(m.num_attention_heads(), 32u);
  EXPECT_EQ(m.num_query_groups(), 4u);
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.ffn_hidden_size(), 6144u);
  EXPECT_EQ(m.num_experts(), 128u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 768u);
  EXPECT_EQ(m.vocab_size(), 151936u);
  EXPECT_TRUE(m.qk_layernorm());
  EXPECT_TRUE(m.untie_embeddings_and_output_weights());
}

// The hybrid presets: their config.json read as Megatron-Bridge's
// NemotronHBridge reads it.
TEST(PresetsTest, NemotronHybridPresetsMatchTheirConfigFiles) {
  v1::ModelSpec m = PresetOk("nemotron-h-8b");
  EXPECT_EQ(m.hybrid_layer_pattern(), "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
  EXPECT_EQ(m.num_layers(), 52u);
  EXPECT_EQ(m.hidden_size(), 4096u);
  EXPECT_EQ(m.ffn_hidden_size(), 21504u);
  EXPECT_EQ(m.num_attention_heads(), 32u);
  EXPECT_EQ(m.num_query_groups(), 8u);
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.mamba_num_heads(), 128u);
  EXPECT_EQ(m.mamba_head_dim(), 64u);
  EXPECT_EQ(m.mamba_num_groups(), 8u);
  EXPECT_EQ(m.mamba_state_dim(), 128u);
  EXPECT_EQ(m.activation(), v1::ACTIVATION_SQUARED_RELU);
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_NONE);
  EXPECT_EQ(m.vocab_size(), 131072u);
  EXPECT_EQ(m.num_experts(), 0u);
  // 47B and 56B as Megatron-LM's Nemotron-H-47B-Reasoning-128K.sh and
  // Nemotron-H-56B-Base-8K.sh give them (the 56B's Mamba heads, head
  // width and groups at Megatron-Core's defaults).
  for (const auto& [name, pattern, layers, ffn] :
       {std::tuple{"nemotron-h-47b",
                   "M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---"
                   "MM---M-M*-M-M-M-M-M-",
                   98u, 30720u},
        std::tuple{"nemotron-h-56b",
                   "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-"
                   "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
                   118u, 32768u}}) {
    SCOPED_TRACE(name);
    m = PresetOk(name);
    EXPECT_EQ(m.hybrid_layer_pattern(), pattern);
    EXPECT_EQ(m.num_layers(), layers);
    EXPECT_EQ(m.hidden_size(), 8192u);
    EXPECT_EQ(m.ffn_hidden_size(), ffn);
    EXPECT_EQ(m.num_attention_heads(), 64u);
    EXPECT_EQ(m.num_query_groups(), 8u);
    EXPECT_EQ(m.kv_channels(), 128u);
    EXPECT_EQ(m.mamba_num_heads(), 256u);
    EXPECT_EQ(m.mamba_head_dim(), 64u);
    EXPECT_EQ(m.mamba_num_groups(), 8u);
    EXPECT_EQ(m.mamba_state_dim(), 256u);
    EXPECT_EQ(m.max_position_embeddings(), 8192u);
    EXPECT_EQ(m.activation(), v1::ACTIVATION_SQUARED_RELU);
    EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_NONE);
    EXPECT_EQ(m.vocab_size(), 131072u);
    EXPECT_TRUE(m.untie_embeddings_and_output_weights());
  }
  m = PresetOk("nemotron-3-nano-30b-a3b");
  EXPECT_EQ(m.hybrid_layer_pattern(), "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME");
  EXPECT_EQ(m.hidden_size(), 2688u);
  EXPECT_EQ(m.num_query_groups(), 2u);
  EXPECT_EQ(m.kv_channels(), 128u);
  EXPECT_EQ(m.mamba_num_heads(), 64u);
  EXPECT_EQ(m.num_experts(), 128u);
  EXPECT_EQ(m.moe_router_topk(), 6u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 1856u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 3712u);
  EXPECT_TRUE(m.moe_router_dtype_fp32());
}

TEST(PresetsTest, DeepSeekV3MatchesConfigFile) {
  ExpectSameAsExample("deepseek-v3", "deepseek_v3_config.json");
  const v1::ModelSpec m = PresetOk("deepseek-v3");
  std::vector<uint32_t> pattern(61, 1);
  pattern[0] = pattern[1] = pattern[2] = 0;
  EXPECT_THAT(m.moe_layer_pattern(), ::testing::ElementsAreArray(pattern));
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2048u);
  EXPECT_EQ(m.mtp_num_layers(), 1u);
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA);
  EXPECT_EQ(m.q_lora_rank(), 1536u);
  EXPECT_EQ(m.kv_lora_rank(), 512u);
  EXPECT_EQ(m.qk_head_dim(), 128u);
  EXPECT_EQ(m.qk_pos_emb_head_dim(), 64u);
  EXPECT_EQ(m.v_head_dim(), 128u);
  EXPECT_EQ(m.num_experts(), 256u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_EQ(m.vocab_size(), 129280u);
}

TEST(PresetsTest, Moonlight) {
  const v1::ModelSpec m = PresetOk("moonlight-16b-a3b");
  EXPECT_EQ(m.num_layers(), 27u);
  EXPECT_EQ(m.hidden_size(), 2048u);
  EXPECT_EQ(m.num_attention_heads(), 16u);
  EXPECT_FALSE(m.has_q_lora_rank());
  EXPECT_EQ(m.kv_lora_rank(), 512u);
  EXPECT_EQ(m.ffn_hidden_size(), 11264u);
  EXPECT_EQ(m.num_experts(), 64u);
  EXPECT_EQ(m.moe_router_topk(), 6u);
  EXPECT_EQ(m.moe_ffn_hidden_size(), 1408u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2816u);
  EXPECT_EQ(m.vocab_size(), 163840u);
  EXPECT_EQ(m.mtp_num_layers(), 0u);
  ASSERT_EQ(m.moe_layer_pattern_size(), 27);
  EXPECT_EQ(m.moe_layer_pattern(0), 0u);
  EXPECT_EQ(m.moe_layer_pattern(1), 1u);
}

TEST(PresetsTest, KimiK2) {
  const v1::ModelSpec m = PresetOk("kimi-k2");
  EXPECT_EQ(m.num_layers(), 61u);
  EXPECT_EQ(m.hidden_size(), 7168u);
  EXPECT_EQ(m.num_attention_heads(), 64u);
  EXPECT_EQ(m.attention_type(), v1::ATTENTION_TYPE_MLA);
  EXPECT_EQ(m.q_lora_rank(), 1536u);
  EXPECT_EQ(m.num_experts(), 384u);
  EXPECT_EQ(m.moe_router_topk(), 8u);
  EXPECT_EQ(m.moe_shared_expert_intermediate_size(), 2048u);
  EXPECT_EQ(m.vocab_size(), 163840u);
  ASSERT_EQ(m.moe_layer_pattern_size(), 61);
  EXPECT_EQ(m.moe_layer_pattern(0), 0u);
  EXPECT_EQ(m.moe_layer_pattern(1), 1u);
}

struct DenseShape {
  const char* name;
  uint32_t layers, hidden, heads, groups, ffn, vocab;
};

TEST(PresetsTest, DenseShapes) {
  const DenseShape kShapes[] = {
      {"llama3-8b", 32, 4096, 32, 8, 14336, 128256},
      {"llama3-70b", 80, 8192, 64, 8, 28672, 128256},
      {"llama3-405b", 126, 16384, 128, 8, 53248, 128256},
      {"qwen3-8b", 36, 4096, 32, 8, 12288, 151936},
      {"qwen3-32b", 64, 5120, 64, 8, 25600, 151936},
      {"qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064},
      {"qwen2.5-72b", 80, 8192, 64, 8, 29568, 152064},
  };
  for (const DenseShape& s : kShapes) {
    SCOPED_TRACE(s.name);
    const v1::ModelSpec m = PresetOk(s.name);
    EXPECT_EQ(m.num_layers(), s.layers);
    EXPECT_EQ(m.hidden_size(), s.hidden);
    EXPECT_EQ(m.num_attention_heads(), s.heads);
    EXPECT_EQ(m.num_query_groups(), s.groups);
    EXPECT_EQ(m.ffn_hidden_size(), s.ffn);
    EXPECT_EQ(m.vocab_size(), s.vocab);
    EXPECT_EQ(m.num_experts(), 0u);
  }
  EXPECT_EQ(PresetOk("qwen3-32b").kv_channels(), 128u);  // != 5120 / 64.
  EXPECT_TRUE(PresetOk("qwen3-8b").qk_layernorm());
  EXPECT_TRUE(PresetOk("qwen2.5-7b").add_qkv_bias());
  EXPECT_FALSE(PresetOk("llama3-8b").has_kv_channels());
}

TEST(PresetsTest, MoeShapes) {
  const v1::ModelSpec qwen = PresetOk("qwen3-235b-a22b");
  EXPECT_EQ(qwen.num_layers(), 94u);
  EXPECT_EQ(qwen.hidden_size(), 4096u);
  EXPECT_EQ(qwen.num_attention_heads(), 64u);
  EXPECT_EQ(qwen.num_query_groups(), 4u);
  EXPECT_EQ(qwen.kv_channels(), 128u);
  EXPECT_EQ(qwen.num_experts(), 128u);
  EXPECT_EQ(qwen.moe_router_topk(), 8u);
  EXPECT_EQ(qwen.moe_ffn_hidden_size(), 1536u);
  EXPECT_EQ(qwen.ffn_hidden_size(), 12288u);
  EXPECT_THAT(qwen.moe_layer_pattern(), IsEmpty());

  const v1::ModelSpec small = PresetOk("mixtral-8x7b");
  EXPECT_EQ(small.num_layers(), 32u);
  EXPECT_EQ(small.num_experts(), 8u);
  EXPECT_EQ(small.moe_router_topk(), 2u);
  EXPECT_EQ(small.moe_ffn_hidden_size(), 14336u);
  EXPECT_EQ(small.vocab_size(), 32000u);

  const v1::ModelSpec large = PresetOk("mixtral-8x22b");
  EXPECT_EQ(large.num_layers(), 56u);
  EXPECT_EQ(large.hidden_size(), 6144u);
  EXPECT_EQ(large.num_attention_heads(), 48u);
  EXPECT_EQ(large.num_query_groups(), 8u);
  EXPECT_EQ(large.moe_ffn_hidden_size(), 16384u);
  EXPECT_EQ(large.num_experts(), 8u);
  EXPECT_EQ(large.vocab_size(), 32768u);
}

}  // namespace
}  // namespace oomguard
