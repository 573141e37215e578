#include "estimator/hybrid_layer_pattern.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/quoted_value.h"

namespace oomguard {
namespace {

constexpr absl::string_view kField = "model.hybrid_layer_pattern (--hybrid-layer-pattern)";
constexpr absl::string_view kSymbols =
    "M (Mamba), G (gated delta net), * (attention), D (DeepSeek sparse attention), "
    "+ (multi-latent attention), - (MLP), E (MoE), | between pipeline segments, / before "
    "each MTP pattern";

absl::Status BadPattern(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(kField, " = ", Quote(text), ": ", why));
}

// Symbols.VALID_LAYERS: each layer's symbol, the one table both ways.
struct LayerSymbol {
  char symbol;
  HybridLayer layer;
};
constexpr LayerSymbol kLayerSymbols[] = {
    {'M', HybridLayer::kMamba},     {'G', HybridLayer::kGatedDelta},
    {'*', HybridLayer::kAttention}, {'D', HybridLayer::kDsAttention},
    {'+', HybridLayer::kMla},       {'-', HybridLayer::kMlp},
    {'E', HybridLayer::kMoe},
};

std::optional<HybridLayer> LayerOf(char c) {
  for (const LayerSymbol& entry : kLayerSymbols) {
    if (entry.symbol == c) return entry.layer;
  }
  return std::nullopt;
}

// The layers of `part` (at `offset` in `text`), split at '|' when
// `allow_pipe`. `name` is "main" or "MTP", as _validate_pattern says.
absl::StatusOr<std::vector<std::vector<HybridLayer>>> ReadPart(absl::string_view text,
                                                               absl::string_view part,
                                                               size_t offset,
                                                               absl::string_view name,
                                                               bool allow_pipe) {
  std::vector<std::vector<HybridLayer>> segments(1);
  bool attention = false, latent = false;  // '*'; '+' or 'D'.
  for (size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (c == '|' && allow_pipe) {
      segments.emplace_back();
      continue;
    }
    const std::optional<HybridLayer> layer = LayerOf(c);
    if (!layer) {
      return BadPattern(
          text, absl::StrCat(Quote(absl::string_view(&c, 1), '\''), " at offset ", offset + i,
                             " (in the ", name, " pattern) is not a layer symbol; the symbols are ",
                             kSymbols));
    }
    attention |= *layer == HybridLayer::kAttention;
    latent |= *layer == HybridLayer::kMla || *layer == HybridLayer::kDsAttention;
    segments.back().push_back(*layer);
  }
  if (attention && latent) {
    return BadPattern(text, absl::StrCat("the ", name,
                                         " pattern mixes attention (*) with multi-latent (+) or "
                                         "DeepSeek sparse (D) attention, which Megatron-Core "
                                         "refuses"));
  }
  return segments;
}

}  // namespace

char HybridLayerSymbol(HybridLayer layer) {
  for (const LayerSymbol& entry : kLayerSymbols) {
    if (entry.layer == layer) return entry.symbol;
  }
  return '?';
}

int64_t HybridPattern::num_layers() const {
  int64_t n = 0;
  for (const std::vector<HybridLayer>& segment : segments)
    n += static_cast<int64_t>(segment.size());
  return n;
}

std::vector<HybridLayer> HybridPattern::Layers() const {
  std::vector<HybridLayer> layers;
  for (const std::vector<HybridLayer>& segment : segments) {
    layers.insert(layers.end(), segment.begin(), segment.end());
  }
  return layers;
}

absl::StatusOr<HybridPattern> ParseHybridLayerPattern(absl::string_view text) {
  if (text.size() > kMaxHybridPatternChars) {
    return BadPattern(text, absl::StrCat("is ", text.size(), " characters long (limit ",
                                         kMaxHybridPatternChars, ")"));
  }
  // parse_hybrid_pattern: the main pattern, then one MTP pattern per '/'.
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  HybridPattern pattern;
  absl::StatusOr<std::vector<std::vector<HybridLayer>>> main =
      ReadPart(text, parts[0], 0, "main", /*allow_pipe=*/true);
  if (!main.ok()) return main.status();
  pattern.segments = *std::move(main);
  if (pattern.num_layers() == 0) {
    return BadPattern(text, "has no decoder layers (a hybrid model needs at least one)");
  }
  bool any_mtp = false;
  for (size_t i = 1; i < parts.size(); ++i) any_mtp |= !parts[i].empty();
  if (any_mtp) {  // "M*/" or "M*//" has no MTP (parse_hybrid_pattern).
    size_t offset = parts[0].size() + 1;
    for (size_t i = 1; i < parts.size(); offset += parts[i].size() + 1, ++i) {
      if (parts[i] != parts[1]) {
        return BadPattern(
            text, absl::StrCat("MTP pattern ", i, " ", Quote(parts[i]), " at offset ", offset,
                               " differs from MTP pattern 1 ", Quote(parts[1]),
                               "; Megatron-Core needs every MTP depth alike"));
      }
    }
    const size_t first = parts[0].size() + 1;
    const size_t pipe = parts[1].find('|');
    if (pipe != absl::string_view::npos) {
      return BadPattern(text, absl::StrCat("'|' at offset ", first + pipe,
                                           " is in an MTP pattern; pipeline segments belong to "
                                           "the main pattern"));
    }
    absl::StatusOr<std::vector<std::vector<HybridLayer>>> mtp =
        ReadPart(text, parts[1], first, "MTP", /*allow_pipe=*/false);
    if (!mtp.ok()) return mtp.status();
    pattern.mtp = std::move(mtp->front());
    pattern.mtp_depths = static_cast<int64_t>(parts.size()) - 1;
  }
  return pattern;
}

}  // namespace oomguard
