// The layer pattern of a hybrid (Mamba) model, `--hybrid-layer-pattern`:
// one symbol per decoder layer, `|` between pipeline segments and `/`
// before each MTP depth's pattern, read as Megatron-Core reads it
// (megatron/core/models/hybrid/hybrid_layer_allocation.py: Symbols,
// parse_hybrid_pattern, _validate_pattern).
#ifndef OOMGUARD_ESTIMATOR_HYBRID_LAYER_PATTERN_H_
#define OOMGUARD_ESTIMATOR_HYBRID_LAYER_PATTERN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

// One layer of a hybrid stack: a mixer with its own pre-norm
// (hybrid_layer_specs.py hybrid_stack_spec).
enum class HybridLayer : uint8_t {
  kMamba,        // 'M': MambaLayer with a MambaMixer.
  kGatedDelta,   // 'G': a gated delta net (linear attention) layer.
  kAttention,    // '*': self-attention only.
  kDsAttention,  // 'D': DeepSeek sparse attention only.
  kMla,          // '+': multi-latent attention only.
  kMlp,          // '-': a dense MLP only (mlp_layer.py MLPLayer).
  kMoe,          // 'E': an MoE MLP only.
};

// The symbol Megatron-Core writes for `layer`.
char HybridLayerSymbol(HybridLayer layer);

struct HybridPattern {
  // The main pattern split at '|': one segment without pipes.
  std::vector<std::vector<HybridLayer>> segments;
  // One MTP depth's layers (empty without MTP) and the depths.
  std::vector<HybridLayer> mtp;
  int64_t mtp_depths = 0;

  bool has_pipes() const { return segments.size() > 1; }
  // Decoder layers: the main pattern's symbols, separators not counted.
  int64_t num_layers() const;
  // The main pattern's layers in order.
  std::vector<HybridLayer> Layers() const;
};

// The longest pattern read (a symbol per layer plus separators).
inline constexpr size_t kMaxHybridPatternChars = 1 << 18;

// `text` parsed. InvalidArgument naming `field` (with its flag) and, for a
// symbol Megatron-Core refuses, the symbol and its offset in `text`; also
// for an MTP pattern that differs from the first, a '|' in an MTP pattern,
// attention mixed with MLA or DeepSeek sparse attention in one pattern (as
// _validate_pattern refuses it), a pattern without decoder layers or over
// kMaxHybridPatternChars.
absl::StatusOr<HybridPattern> ParseHybridLayerPattern(absl::string_view text);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_HYBRID_LAYER_PATTERN_H_
