#include "jobspec/rl_config_yaml.h"

#include <cmath>
#include <exception>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "jobspec/flag_values.h"
#include "yaml-cpp/yaml.h"

namespace oomguard {

// Flattens a parsed document into RlConfigYaml's leaves.
class RlConfigYamlBuilder {
 public:
  explicit RlConfigYamlBuilder(RlConfigYaml& out) : out_(out) {}

  absl::Status Add(const YAML::Node& node, const std::string& key, int depth) {
    if (depth > kMaxRlConfigDepth) {
      return absl::InvalidArgumentError(absl::StrCat("YAML line ", node.Mark().line + 1, ": ", key,
                                                     ": nested deeper than ", kMaxRlConfigDepth,
                                                     " levels; an RL config is not"));
    }
    switch (node.Type()) {
      case YAML::NodeType::Map: {
        if (node.size() == 0) return AddLeaf(key, RlConfigYaml::Leaf{.is_null = true}, node);
        for (auto it = node.begin(); it != node.end(); ++it) {
          if (!it->first.IsScalar()) {
            return absl::InvalidArgumentError(absl::StrCat("YAML line ", it->first.Mark().line + 1,
                                                           ": a key that is not a word under ",
                                                           key.empty() ? "the top level" : key));
          }
          const std::string name = it->first.Scalar();
          if (depth == 0) out_.top_level_.push_back(name);
          OOMGUARD_RETURN_IF_ERROR(
              Add(it->second, key.empty() ? name : absl::StrCat(key, ".", name), depth + 1));
        }
        return absl::OkStatus();
      }
      case YAML::NodeType::Sequence: {
        RlConfigYaml::Leaf leaf{.is_sequence = true};
        bool scalars = true;
        for (const YAML::Node& item : node) scalars = scalars && (item.IsScalar() || item.IsNull());
        if (scalars) {
          for (const YAML::Node& item : node) {
            leaf.items.push_back(item.IsNull() ? "" : item.Scalar());
          }
          return AddLeaf(key, std::move(leaf), node);
        }
        size_t i = 0;
        for (const YAML::Node& item : node) {
          OOMGUARD_RETURN_IF_ERROR(Add(item, absl::StrCat(key, ".", i++), depth + 1));
        }
        return absl::OkStatus();
      }
      case YAML::NodeType::Scalar:
        return AddLeaf(key, RlConfigYaml::Leaf{.scalar = node.Scalar()}, node);
      default:
        return AddLeaf(key, RlConfigYaml::Leaf{.is_null = true}, node);
    }
  }

 private:
  absl::Status AddLeaf(const std::string& key, RlConfigYaml::Leaf leaf, const YAML::Node& node) {
    if (++leaves_ > kMaxRlConfigLeaves) {
      return absl::InvalidArgumentError(absl::StrCat("YAML line ", node.Mark().line + 1,
                                                     ": more than ", kMaxRlConfigLeaves,
                                                     " values (aliases counted where used); an "
                                                     "RL config has a few hundred"));
    }
    leaf.line = node.Mark().line + 1;
    if (out_.leaves_.emplace(key, std::move(leaf)).second) out_.order_.push_back(key);
    return absl::OkStatus();
  }

  RlConfigYaml& out_;
  size_t leaves_ = 0;
};

namespace {

// Splits "a,b" at its top-level commas (not inside ${...}).
std::vector<std::string> SplitArguments(absl::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (const char c : text) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(std::string(absl::StripAsciiWhitespace(current)));
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  parts.push_back(std::string(absl::StripAsciiWhitespace(current)));
  return parts;
}

bool IsNullWord(absl::string_view word) {
  return word.empty() || word == "null" || word == "Null" || word == "NULL" || word == "~" ||
         word == "None";
}

std::string Unquoted(absl::string_view word) {
  if (word.size() >= 2 && (word.front() == '"' || word.front() == '\'') &&
      word.back() == word.front()) {
    return std::string(word.substr(1, word.size() - 2));
  }
  return std::string(word);
}

constexpr int kMaxInterpolationDepth = 8;
// Interpolations resolved for one value at most (a ${mul:...} of many
// references to other products would otherwise grow without bound).
constexpr int kMaxInterpolationSteps = 256;

absl::Status BadValue(absl::string_view key, absl::string_view value, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": expected ", expected, ", got ", Quote(value)));
}

}  // namespace

absl::StatusOr<RlConfigYaml> RlConfigYaml::Parse(absl::string_view text) {
  if (text.size() > kMaxRlConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the RL config is ", text.size(),
                                                   " bytes, more than the ", kMaxRlConfigBytes,
                                                   " an RL config can be"));
  }
  RlConfigYaml config;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          "the RL config is not a YAML mapping of keys (veRL's or NeMo-RL's config)");
    }
    RlConfigYamlBuilder builder(config);
    absl::Status status = builder.Add(root, "", 0);
    if (!status.ok()) return status;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("YAML line ", e.mark.line + 1, ": ", e.msg.empty() ? e.what() : e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("the RL config's YAML: ", e.what()));
  }
  return config;
}

bool RlConfigYaml::HasTopLevel(absl::string_view name) const {
  for (const std::string& top : top_level_) {
    if (top == name) return true;
  }
  return false;
}

bool RlConfigYaml::HasUnder(absl::string_view prefix) const {
  const std::string dotted = absl::StrCat(prefix, ".");
  auto it = leaves_.lower_bound(prefix);
  if (it != leaves_.end() && it->first == prefix) return true;
  it = leaves_.lower_bound(dotted);
  return it != leaves_.end() && absl::StartsWith(it->first, dotted);
}

std::optional<std::string> RlConfigYaml::Resolve(absl::string_view key, const std::string& value,
                                                 int depth) const {
  if (!absl::StartsWith(value, "${")) return value;
  const auto unresolved = [&]() -> std::optional<std::string> {
    notes_.emplace(std::string(key),
                   absl::StrCat(key, ": the interpolation ", Quote(value),
                                " is not resolved; its framework's default is assumed (pass the "
                                "resolved config)"));
    return std::nullopt;
  };
  if (!absl::EndsWith(value, "}") || depth >= kMaxInterpolationDepth || --resolve_budget_ < 0) {
    return unresolved();
  }
  const absl::string_view body = absl::string_view(value).substr(2, value.size() - 3);
  // Resolves one argument: a nested interpolation, a number or a word.
  const auto argument = [&](const std::string& arg) -> std::optional<std::string> {
    if (absl::StartsWith(arg, "${")) return Resolve(key, arg, depth + 1);
    return Unquoted(arg);
  };
  if (absl::StartsWith(body, "oc.select:")) {
    const std::vector<std::string> args = SplitArguments(body.substr(10));
    if (std::optional<std::string> found = Scalar(args[0], depth + 1)) return found;
    if (args.size() < 2 || IsNullWord(args[1])) return std::nullopt;
    return argument(args[1]);
  }
  if (absl::StartsWith(body, "mul:")) {
    const std::vector<std::string> args = SplitArguments(body.substr(4));
    double product = 1;
    for (const std::string& arg : args) {
      std::optional<std::string> resolved = argument(arg);
      double x = 0;
      if (!resolved.has_value() || !absl::SimpleAtod(*resolved, &x)) return unresolved();
      product *= x;
    }
    return absl::StrCat(product);
  }
  if (body.find_first_of(":${") != absl::string_view::npos) return unresolved();
  // ${KEY}, or relative ${.KEY} (one dot: a sibling; each more: one level up).
  std::string target(body);
  if (absl::StartsWith(target, ".")) {
    absl::string_view parent = key;
    size_t dots = 0;
    while (dots < target.size() && target[dots] == '.') ++dots;
    for (size_t i = 0; i < dots; ++i) {
      const size_t cut = parent.rfind('.');
      parent = cut == absl::string_view::npos ? absl::string_view() : parent.substr(0, cut);
    }
    target = parent.empty() ? target.substr(dots) : absl::StrCat(parent, ".", target.substr(dots));
  }
  std::optional<std::string> found = Scalar(target, depth + 1);
  if (!found.has_value() && leaves_.count(target) == 0) return unresolved();
  return found;
}

std::optional<std::string> RlConfigYaml::Scalar(absl::string_view key, int depth) const {
  if (depth == 0) resolve_budget_ = kMaxInterpolationSteps;
  auto it = leaves_.find(key);
  if (it == leaves_.end() || it->second.is_null || it->second.is_sequence) return std::nullopt;
  std::optional<std::string> value = Resolve(key, it->second.scalar, depth);
  if (!value.has_value() || IsNullWord(*value)) return std::nullopt;
  return value;
}

absl::StatusOr<std::optional<bool>> RlConfigYaml::Bool(absl::string_view key) const {
  std::optional<std::string> value = Scalar(key, 0);
  if (!value.has_value()) return std::optional<bool>();
  if (*value == "true" || *value == "True" || *value == "TRUE") return std::optional<bool>(true);
  if (*value == "false" || *value == "False" || *value == "FALSE") {
    return std::optional<bool>(false);
  }
  return BadValue(key, *value, "true or false");
}

absl::StatusOr<std::optional<uint32_t>> RlConfigYaml::Uint(absl::string_view key) const {
  std::optional<std::string> value = Scalar(key, 0);
  if (!value.has_value()) return std::optional<uint32_t>();
  uint32_t n = 0;
  double x = 0;
  if (IsDigits(*value) && absl::SimpleAtoi(*value, &n)) return std::optional<uint32_t>(n);
  // A product written by ${mul:...} reads as a real with no fraction.
  if (absl::SimpleAtod(*value, &x) && x >= 0 && x <= 4294967295.0 && std::floor(x) == x) {
    return std::optional<uint32_t>(static_cast<uint32_t>(x));
  }
  return BadValue(key, *value, "a whole number from 0 to 4294967295");
}

absl::StatusOr<std::optional<double>> RlConfigYaml::Real(absl::string_view key) const {
  std::optional<std::string> value = Scalar(key, 0);
  if (!value.has_value()) return std::optional<double>();
  double x = 0;
  if (!absl::SimpleAtod(*value, &x) || !std::isfinite(x)) {
    return BadValue(key, *value, "a number");
  }
  return std::optional<double>(x);
}

absl::StatusOr<std::optional<std::string>> RlConfigYaml::Word(absl::string_view key) const {
  return Scalar(key, 0);
}

absl::StatusOr<std::vector<std::string>> RlConfigYaml::Words(absl::string_view key) const {
  auto it = leaves_.find(key);
  if (it == leaves_.end() || it->second.is_null) return std::vector<std::string>();
  if (it->second.is_sequence) return it->second.items;
  std::optional<std::string> value = Scalar(key, 0);
  if (!value.has_value()) return std::vector<std::string>();
  return std::vector<std::string>{*value};
}

std::vector<std::string> RlConfigYaml::Notes() const {
  std::vector<std::string> notes;
  for (const auto& [key, note] : notes_) notes.push_back(note);
  return notes;
}

}  // namespace oomguard
