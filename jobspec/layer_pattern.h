// The --moe-layer-freq list expression: which decoder layers are MoE, given
// as the small Python subset Megatron-LM evaluates (list literals of
// integers, `+` concatenation, `*` repetition and parentheses, e.g.
// `([0]*3+[1]*58)`). Evaluated here without any interpreter, with bounds a
// hostile expression cannot exceed.
#ifndef OOMGUARD_JOBSPEC_LAYER_PATTERN_H_
#define OOMGUARD_JOBSPEC_LAYER_PATTERN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

// The per-layer pattern `text` evaluates to: one entry per decoder layer,
// 0 (dense) or 1 (MoE). InvalidArgument saying what is wrong (not a list,
// an empty list, entries other than 0 and 1, a list over 65536 entries or
// nested over 32 deep, a syntax error with its offset).
absl::StatusOr<std::vector<uint32_t>> ParseLayerPattern(absl::string_view text);

// `pattern` as a list expression ParseLayerPattern reads back, one
// repetition per run: "([0]*3+[1]*58)".
std::string FormatLayerPattern(const std::vector<uint32_t>& pattern);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_LAYER_PATTERN_H_
