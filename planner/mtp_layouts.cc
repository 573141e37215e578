// The MTP layouts the planner tries (see mtp_layouts.h).
#include "planner/mtp_layouts.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "estimator/pipeline_layout.h"

namespace oomguard {
namespace {

std::string Layers(int64_t n) { return std::string(static_cast<size_t>(n), 't'); }

// "E<first>|(<middle>|)*k<last><m...>L" over `stages` virtual stages: the
// first holds the embedding and `first` decoder layers, each of the
// stages - 2 middle ones `middle`, the last `last`, the MTP layers and the
// loss. Empty when the longest part would make the pattern too long to give:
// about 3 x middle symbols are written, and a 10^5-layer model on PP 2 would
// need 10^5.
std::string Pattern(int64_t stages, int64_t first, int64_t middle, int64_t last, int64_t mtp) {
  if (first + middle + last + mtp + 32 > static_cast<int64_t>(kMaxLayoutChars)) return "";
  std::string out = "E" + Layers(first) + "|";
  const int64_t middles = stages - 2;
  if (middles >= 2) {
    absl::StrAppend(&out, "(", Layers(middle), "|)*", middles);
  } else if (middles == 1) {
    absl::StrAppend(&out, Layers(middle), "|");
  }
  return absl::StrCat(out, Layers(last), std::string(static_cast<size_t>(mtp), 'm'), "L");
}

}  // namespace

std::vector<MtpLayout> MtpLayouts(int64_t layers, int64_t mtp, int64_t pp, int64_t vpp) {
  std::vector<MtpLayout> out;
  const int64_t stages = pp * vpp;
  if (stages < 2 || layers < 1) return out;
  const auto add = [&](std::string pattern, int64_t middle) {
    if (pattern.empty()) return;
    for (const MtpLayout& l : out) {
      if (l.pattern == pattern) return;
    }
    out.push_back(MtpLayout{std::move(pattern), middle});
  };
  // Counted: c entries a virtual stage.
  if (const int64_t total = layers + 2 + mtp; total % stages == 0) {
    const int64_t c = total / stages;
    if (c >= 1 + mtp) add(Pattern(stages, c - 1, c, c - 1 - mtp, mtp), c);
  }
  // Lighter ends: c = ceil(layers / S) a middle stage; the ends share the
  // rest (at most 2c), the first as many as a middle one.
  const int64_t c = (layers + stages - 1) / stages;
  const int64_t rest = layers - (stages - 2) * c;
  if (rest >= 0) {
    const int64_t first = std::min(c, rest);
    add(Pattern(stages, first, c, rest - first, mtp), c);
  }
  return out;
}

}  // namespace oomguard
