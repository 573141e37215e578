// An RL config's YAML read within bounds: errors with the line, the bounds
// on size, nesting and aliases, the interpolations resolved, typed values.
#include "jobspec/rl_config_yaml.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RlConfigYaml, FlattensKeysInOrder) {
  absl::StatusOr<RlConfigYaml> config = RlConfigYaml::Parse(R"(
a:
  b: 1
  c: [x, y]
  d: {}
e: null
f:
  - {g: 1}
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->Keys(), ElementsAre("a.b", "a.c", "a.d", "e", "f.0.g"));
  EXPECT_TRUE(config->HasTopLevel("a"));
  EXPECT_FALSE(config->HasTopLevel("b"));
  EXPECT_TRUE(config->HasUnder("a"));
  EXPECT_FALSE(config->HasUnder("a.b.c"));
  EXPECT_EQ(*config->Uint("a.b"), std::optional<uint32_t>(1));
  EXPECT_THAT(*config->Words("a.c"), ElementsAre("x", "y"));
  EXPECT_EQ(*config->Uint("e"), std::nullopt);
  EXPECT_EQ(*config->Uint("missing"), std::nullopt);
}

TEST(RlConfigYaml, TypedValuesNameTheKey) {
  absl::StatusOr<RlConfigYaml> config =
      RlConfigYaml::Parse("a: {n: -3, b: yes, x: nan, big: 4294967296, ok: True}\n");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->Uint("a.n").status().message(),
            "a.n: expected a whole number from 0 to 4294967295, got \"-3\"");
  EXPECT_EQ(config->Bool("a.b").status().message(), "a.b: expected true or false, got \"yes\"");
  EXPECT_EQ(config->Real("a.x").status().message(), "a.x: expected a number, got \"nan\"");
  EXPECT_FALSE(config->Uint("a.big").ok());
  EXPECT_EQ(*config->Bool("a.ok"), std::optional<bool>(true));
}

TEST(RlConfigYaml, YamlErrorsGiveTheLine) {
  absl::StatusOr<RlConfigYaml> config = RlConfigYaml::Parse("a:\n  b: 1\n c: [1, 2\n");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("YAML line 3"));
  config = RlConfigYaml::Parse("- a\n- b\n");
  EXPECT_THAT(config.status().message(), HasSubstr("not a YAML mapping"));
  config = RlConfigYaml::Parse("");
  EXPECT_FALSE(config.ok());
}

TEST(RlConfigYaml, BoundsSizeNestingAndAliases) {
  absl::StatusOr<RlConfigYaml> config =
      RlConfigYaml::Parse(std::string(kMaxRlConfigBytes + 1, ' '));
  EXPECT_THAT(config.status().message(), HasSubstr("more than the 1048576"));
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += std::string(i * 2, ' ') + "k:\n";
  deep += std::string(80, ' ') + "v: 1\n";
  config = RlConfigYaml::Parse(deep);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("nested deeper than 32 levels"));
  // Flow nesting past yaml-cpp's own depth guard.
  config = RlConfigYaml::Parse("a: " + std::string(5000, '[') + std::string(5000, ']') + "\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  // Aliases multiplying values: each use counts.
  std::string bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " {";
    for (int i = 0; i < 10; ++i)
      bomb += std::string(i ? ", " : "") + "k" + std::to_string(i) + ": *" + prev;
    bomb += "}\n";
    prev = c;
  }
  config = RlConfigYaml::Parse(bomb);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("more than 20000 values"));
}

TEST(RlConfigYaml, ResolvesPlainInterpolations) {
  absl::StatusOr<RlConfigYaml> config = RlConfigYaml::Parse(R"(
p:
  len: 100
  mbs: 4
  same: ${p.len}
  sibling: ${.mbs}
  up: ${..q.v}
q:
  v: 7
  sel: ${oc.select:p.len,5}
  sel_default: ${oc.select:p.none,5}
  prod: ${mul:${p.len}, ${p.mbs}}
  env: ${oc.env:HOME}
  loop: ${q.loop}
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config->Uint("p.same"), std::optional<uint32_t>(100));
  EXPECT_EQ(*config->Uint("p.sibling"), std::optional<uint32_t>(4));
  EXPECT_EQ(*config->Uint("p.up"), std::optional<uint32_t>(7));
  EXPECT_EQ(*config->Uint("q.sel"), std::optional<uint32_t>(100));
  EXPECT_EQ(*config->Uint("q.sel_default"), std::optional<uint32_t>(5));
  EXPECT_EQ(*config->Uint("q.prod"), std::optional<uint32_t>(400));
  EXPECT_EQ(*config->Uint("q.env"), std::nullopt);
  EXPECT_EQ(*config->Uint("q.loop"), std::nullopt);
  EXPECT_THAT(config->Notes(), ElementsAre(HasSubstr("q.env: the interpolation"),
                                           HasSubstr("q.loop: the interpolation")));
}

}  // namespace
}  // namespace oomguard
