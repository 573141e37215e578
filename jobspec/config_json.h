// Reads the text of a HuggingFace config.json into a JSON value, in time and
// memory linear in its size and bounded: at most kMaxConfigBytes bytes,
// objects and arrays nested at most kMaxConfigDepth levels (checked in one
// pass before anything is parsed, so a hostile 10^5-deep array costs
// milliseconds), a leading UTF-8 byte order mark skipped (it says nothing
// about the model, though transformers' json.loads stops at it), and the top
// level an object. Every refusal is InvalidArgument starting with "config.json: ";
// positions are byte offsets counted from 1.
#ifndef OOMGUARD_JOBSPEC_CONFIG_JSON_H_
#define OOMGUARD_JOBSPEC_CONFIG_JSON_H_

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace oomguard {

inline constexpr size_t kMaxConfigBytes = size_t{4} << 20;  // 4 MiB.
// The top-level object is level 1. Real configs nest 3 or 4 levels
// (text_config.rope_scaling.*).
inline constexpr int kMaxConfigDepth = 64;

// The JSON object of config.json text.
absl::StatusOr<nlohmann::json> ReadConfigJson(std::string_view text);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_CONFIG_JSON_H_
