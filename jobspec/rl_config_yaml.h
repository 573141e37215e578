// An RL framework's YAML config (veRL's resolved Hydra config, NeMo-RL's
// config) read once, within bounds, into its leaves by dotted key
// ("actor_rollout_ref.rollout.gpu_memory_utilization"), with typed getters
// whose errors name the key and the value. The readers of each framework
// (rl_verl_config.h, rl_nemo_rl_config.h) take their keys from it.
//
// Interpolations the configs carry unresolved are resolved where they are
// plain: "${KEY}", "${oc.select:KEY,DEFAULT}" (OmegaConf) and NeMo-RL's
// "${mul:A,B}"; any other is a value the key does not have (unset), noted.
#ifndef OOMGUARD_JOBSPEC_RL_CONFIG_YAML_H_
#define OOMGUARD_JOBSPEC_RL_CONFIG_YAML_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

// The bounds of a config: a resolved veRL config is ~700 lines, 20 KB.
inline constexpr size_t kMaxRlConfigBytes = 1 << 20;
inline constexpr int kMaxRlConfigDepth = 32;
inline constexpr size_t kMaxRlConfigLeaves = 20000;

class RlConfigYaml {
 public:
  // InvalidArgument for text over the bounds, YAML that does not parse
  // ("YAML line N: ..."), a document that is not a mapping, nesting deeper
  // than kMaxRlConfigDepth or more than kMaxRlConfigLeaves leaves (aliases
  // counted each time they are used).
  static absl::StatusOr<RlConfigYaml> Parse(absl::string_view text);

  // Whether the top-level mapping has `name`.
  bool HasTopLevel(absl::string_view name) const;
  // Whether a leaf at `key` or under it exists.
  bool HasUnder(absl::string_view prefix) const;

  // The value at `key`; nullopt when absent, null ("null", "~", empty) or an
  // interpolation that does not resolve (noted in Notes()). InvalidArgument
  // naming the key and the value when it is not of the type.
  absl::StatusOr<std::optional<bool>> Bool(absl::string_view key) const;
  absl::StatusOr<std::optional<uint32_t>> Uint(absl::string_view key) const;
  absl::StatusOr<std::optional<double>> Real(absl::string_view key) const;
  absl::StatusOr<std::optional<std::string>> Word(absl::string_view key) const;
  // A sequence of words (or one word, as a list of one); empty when absent.
  absl::StatusOr<std::vector<std::string>> Words(absl::string_view key) const;

  // Every leaf key, in the order of the text.
  const std::vector<std::string>& Keys() const { return order_; }
  // The notes the getters made (unresolved interpolations), once each.
  std::vector<std::string> Notes() const;

 private:
  struct Leaf {
    bool is_null = false;
    bool is_sequence = false;
    std::string scalar = {};              // A scalar leaf.
    std::vector<std::string> items = {};  // A sequence's scalars.
    int line = 0;                         // 1-based.
  };
  // The scalar text of `key` after interpolation; nullopt when absent, null
  // or unresolved.
  std::optional<std::string> Scalar(absl::string_view key, int depth) const;
  std::optional<std::string> Resolve(absl::string_view key, const std::string& value,
                                     int depth) const;

  std::map<std::string, Leaf, std::less<>> leaves_;
  std::vector<std::string> order_;
  std::vector<std::string> top_level_;
  mutable std::map<std::string, std::string> notes_;
  mutable int resolve_budget_ = 0;  // Steps left for the value being read.
  friend class RlConfigYamlBuilder;
};

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_CONFIG_YAML_H_
