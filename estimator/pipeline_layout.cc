#include "estimator/pipeline_layout.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

constexpr char kLayoutField[] = "parallelism.pipeline_model_parallel_layout";
constexpr size_t kMaxExpandedLayout = 1 << 20;

absl::Status LayoutError(absl::string_view layout, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(kLayoutField, " \"", layout, "\": ", why));
}

// Recursive-descent expansion of "(...)*n" and "x*n" repetitions.
class LayoutExpander {
 public:
  explicit LayoutExpander(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::string> Expand() {
    OOMGUARD_ASSIGN_OR_RETURN(std::string out, Sequence());
    if (pos_ != text_.size()) return LayoutError(text_, "unbalanced ')'");
    return out;
  }

 private:
  absl::StatusOr<std::string> Sequence() {
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != ')') {
      char c = text_[pos_];
      std::string unit;
      if (c == '(') {
        ++pos_;
        OOMGUARD_ASSIGN_OR_RETURN(unit, Sequence());
        if (pos_ >= text_.size() || text_[pos_] != ')') {
          return LayoutError(text_, "missing ')'");
        }
        ++pos_;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        unit = std::string(1, c);
        ++pos_;
      } else if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      } else {
        return LayoutError(text_, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      int64_t times = 1;
      if (pos_ < text_.size() && text_[pos_] == '*') {
        ++pos_;
        size_t start = pos_;
        while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
        if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), &times) || times < 0) {
          return LayoutError(text_, "'*' must be followed by a count");
        }
      }
      if (unit.size() * static_cast<size_t>(times) + out.size() > kMaxExpandedLayout) {
        return LayoutError(text_, "expands to more than 1 MiB");
      }
      for (int64_t i = 0; i < times; ++i) out += unit;
    }
    return out;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

absl::StatusOr<std::vector<StageContents>> PlaceFromLayout(const PlacementInput& in) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> stages, ExpandLayout(in.layout));
  const int64_t n = static_cast<int64_t>(stages.size());
  if (n % in.pp != 0) {
    return LayoutError(in.layout, absl::StrCat("has ", n,
                                               " virtual stages, not a multiple of "
                                               "pipeline_model_parallel_size ",
                                               in.pp));
  }
  std::vector<StageContents> out(n);
  int layer = 0;
  int64_t mtp = 0;
  for (int64_t i = 0; i < n; ++i) {
    StageContents& st = out[i];
    st.first_layer = layer;
    for (char c : stages[i]) {
      switch (c) {
        case 'E':
          if (i != 0) return LayoutError(in.layout, "'E' must be in the first stage");
          st.has_embedding = true;
          break;
        case 'L':
          if (i != n - 1) return LayoutError(in.layout, "'L' must be in the last stage");
          st.has_loss = true;
          break;
        case 't':
          ++st.num_layers;
          ++layer;
          break;
        case 'm':
          ++st.num_mtp_layers;
          ++mtp;
          break;
      }
    }
  }
  if (layer != in.num_layers) {
    return LayoutError(
        in.layout,
        absl::StrCat("places ", layer, " decoder layers but model.num_layers is ", in.num_layers));
  }
  if (mtp != in.mtp_layers) {
    return LayoutError(
        in.layout,
        absl::StrCat("places ", mtp, " MTP layers but model.mtp_num_layers is ", in.mtp_layers));
  }
  if (!out.front().has_embedding || !out.back().has_loss) {
    return LayoutError(in.layout, "needs 'E' in the first stage and 'L' in the last");
  }
  return out;
}

absl::Status SplitError(absl::string_view field, int64_t value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("parallelism.", field, " = ", value, ": ", why));
}

// Layers per PP rank, before the split into chunks.
absl::StatusOr<std::vector<int64_t>> LayersPerRank(const PlacementInput& in) {
  const int64_t p = in.pp;
  std::vector<int64_t> per_rank(p, 0);
  const bool uneven = in.first_stage_layers >= 0 || in.last_stage_layers >= 0;
  if (uneven) {
    if (p < 2) {
      return SplitError("decoder_first_pipeline_num_layers", in.first_stage_layers,
                        "uneven stages need pipeline_model_parallel_size >= 2");
    }
    int64_t rest = in.num_layers;
    int64_t middle = p;
    if (in.first_stage_layers >= 0) {
      per_rank[0] = in.first_stage_layers;
      rest -= in.first_stage_layers;
      --middle;
    }
    if (in.last_stage_layers >= 0) {
      per_rank[p - 1] = in.last_stage_layers;
      rest -= in.last_stage_layers;
      --middle;
    }
    if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % middle != 0)) {
      return SplitError(in.first_stage_layers >= 0 ? "decoder_first_pipeline_num_layers"
                                                   : "decoder_last_pipeline_num_layers",
                        in.first_stage_layers >= 0 ? in.first_stage_layers : in.last_stage_layers,
                        absl::StrCat("the remaining ", rest, " of model.num_layers ", in.num_layers,
                                     " do not split evenly over the other ", middle, " stages"));
    }
    for (int64_t r = 0; r < p; ++r) {
      bool fixed =
          (r == 0 && in.first_stage_layers >= 0) || (r == p - 1 && in.last_stage_layers >= 0);
      if (!fixed) per_rank[r] = rest / middle;
    }
    return per_rank;
  }
  if (in.num_layers % p != 0) {
    return SplitError("pipeline_model_parallel_size", p,
                      absl::StrCat("model.num_layers ", in.num_layers,
                                   " is not divisible by it (use "
                                   "decoder_first/last_pipeline_num_layers or a layout)"));
  }
  for (auto& n : per_rank) n = in.num_layers / p;
  return per_rank;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandLayout(absl::string_view layout) {
  if (layout.size() > 4096) return LayoutError(layout.substr(0, 32), "longer than 4096 characters");
  OOMGUARD_ASSIGN_OR_RETURN(const std::string flat, LayoutExpander(layout).Expand());
  return std::vector<std::string>(absl::StrSplit(flat, '|'));
}

absl::StatusOr<std::vector<StageContents>> PlaceLayers(const PlacementInput& in) {
  if (!in.layout.empty()) return PlaceFromLayout(in);
  const int64_t p = in.pp, v = in.vpp, stages = p * v;
  std::vector<StageContents> out(stages);
  out.front().has_embedding = true;
  out.back().has_loss = true;
  out.back().num_mtp_layers = static_cast<int>(in.mtp_layers);

  std::vector<int64_t> per_stage(stages, 0);
  if (in.account_for_embedding || in.account_for_loss) {
    const int64_t slots =
        in.num_layers + (in.account_for_embedding ? 1 : 0) + (in.account_for_loss ? 1 : 0);
    if (slots % stages != 0) {
      return SplitError(
          in.account_for_embedding ? "account_for_embedding_in_pipeline_split"
                                   : "account_for_loss_in_pipeline_split",
          1,
          absl::StrCat("model.num_layers ", in.num_layers, " plus the accounted slots (", slots,
                       ") is not divisible by ", stages, " virtual stages"));
    }
    for (auto& n : per_stage) n = slots / stages;
    if (in.account_for_embedding) --per_stage.front();
    if (in.account_for_loss) --per_stage.back();
  } else {
    OOMGUARD_ASSIGN_OR_RETURN(const std::vector<int64_t> per_rank, LayersPerRank(in));
    for (int64_t r = 0; r < p; ++r) {
      if (per_rank[r] % v != 0) {
        return SplitError("num_virtual_stages_per_pipeline_rank", v,
                          absl::StrCat("pipeline rank ", r, " has ", per_rank[r],
                                       " layers, not divisible into ", v, " chunks"));
      }
      for (int64_t c = 0; c < v; ++c) per_stage[r + c * p] = per_rank[r] / v;
    }
  }
  int layer = 0;
  for (int64_t i = 0; i < stages; ++i) {
    if (per_stage[i] < 0) {
      return SplitError("pipeline_model_parallel_size", p, "too many stages for model.num_layers");
    }
    out[i].first_layer = layer;
    out[i].num_layers = static_cast<int>(per_stage[i]);
    layer += out[i].num_layers;
  }
  return out;
}

}  // namespace oomguard
