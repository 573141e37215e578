#include "estimator/pipeline_layout.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

constexpr char kLayoutField[] = "parallelism.pipeline_model_parallel_layout";
// An expanded layout holds its decoder layers, MTP layers, 'E', 'L' and a '|'
// between stages: no layout of a valid job (at most kMaxLayers layers in
// at most kMaxVirtualStages stages) is longer than this. MTP layers are few.
constexpr size_t kMaxExpandedLayout = 2 * kMaxLayers + kMaxVirtualStages;

// The layout grammar and its rules are Megatron-Core's, re-stated here:
// megatron/core/transformer/pipeline_parallel_layer_layout.py, class
// PipelineParallelLayerLayout (parse_str_to_list, which from_str reaches
// through __init__, and validate_layer_layout).

absl::Status LayoutError(absl::string_view layout, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(kLayoutField, " ", Quote(layout), ": ", why));
}

bool IsAsciiDigit(char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }

// The decimal count at `text[pos]`, if a digit is there; `*end` is set past
// it. Counts above kMaxExpandedLayout are capped there (they cannot fit).
std::optional<size_t> CountAt(absl::string_view text, size_t pos, size_t* end) {
  if (pos >= text.size() || !IsAsciiDigit(text[pos])) return std::nullopt;
  size_t count = 0;
  for (*end = pos; *end < text.size() && IsAsciiDigit(text[*end]); ++*end) {
    count = std::min(count * 10 + static_cast<size_t>(text[*end] - '0'), kMaxExpandedLayout + 1);
  }
  return count;
}

// Appends `unit` `count` times to `out`, within kMaxExpandedLayout.
absl::Status AppendRepeated(absl::string_view layout, absl::string_view unit, size_t count,
                            std::string* out) {
  if (!unit.empty() && count > (kMaxExpandedLayout - out->size()) / unit.size()) {
    return LayoutError(layout, absl::StrCat("expands to more than ", kMaxExpandedLayout,
                                            " characters, more than any valid job's layout"));
  }
  for (size_t i = 0; i < count; ++i) absl::StrAppend(out, unit);
  return absl::OkStatus();
}

// The two unrolling passes of parse_str_to_list, each a left-to-right
// rewrite of the non-overlapping matches of its pattern, as Python's re.sub
// makes it. First "(body)*n", where body is one or more characters other
// than ')' (so groups do not nest: an inner '(' stays and is refused later).
// Counts are ASCII digits (Python's \d would also take other scripts').
absl::StatusOr<std::string> UnrollGroups(absl::string_view layout, absl::string_view text) {
  std::string out;
  size_t next_close = 0;  // The first ')' at or after the current '(' + 1.
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '(') {
      if (next_close <= i) next_close = std::min(text.find(')', i + 1), text.size());
      size_t end = 0;
      if (next_close > i + 1 && next_close + 1 < text.size() && text[next_close + 1] == '*') {
        if (std::optional<size_t> count = CountAt(text, next_close + 2, &end)) {
          OOMGUARD_RETURN_IF_ERROR(
              AppendRepeated(layout, text.substr(i + 1, next_close - i - 1), *count, &out));
          i = end;
          continue;
        }
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

// Then "x*n", where x is any one character but a newline.
absl::StatusOr<std::string> UnrollCharacters(absl::string_view layout, absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t end = 0;
    if (text[i] != '\n' && i + 1 < text.size() && text[i + 1] == '*') {
      if (std::optional<size_t> count = CountAt(text, i + 2, &end)) {
        OOMGUARD_RETURN_IF_ERROR(AppendRepeated(layout, text.substr(i, 1), *count, &out));
        i = end;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

// validate_layer_layout's rules on the MTP layers: after every decoder
// layer, all in one virtual stage, and that stage the last of its pipeline
// rank (stage index = pp_rank + chunk * pp).
absl::Status CheckMtpPlacement(const PlacementInput& in, const std::vector<std::string>& stages) {
  const size_t pp = static_cast<size_t>(in.pp);
  const size_t last_chunk = stages.size() / pp - 1;
  bool mtp_seen = false;
  for (size_t i = 0; i < stages.size(); ++i) {
    const int64_t mtp = std::count(stages[i].begin(), stages[i].end(), 'm');
    for (char c : stages[i]) {
      mtp_seen = mtp_seen || c == 'm';
      if (mtp_seen && c == 't') {
        return LayoutError(in.layout, "decoder layers 't' must all come before the MTP layers 'm'");
      }
    }
    if (mtp == 0) continue;
    if (i / pp != last_chunk) {
      return LayoutError(
          in.layout, absl::StrCat("MTP layers 'm' must be in the last virtual stage of their "
                                  "pipeline rank; stage ",
                                  i, " is virtual stage ", i / pp, " of pipeline rank ", i % pp));
    }
    if (mtp != in.mtp_layers) {
      return LayoutError(
          in.layout, absl::StrCat("all MTP layers must be in one stage; stage ", i, " has ", mtp,
                                  " of model.mtp_num_layers ", in.mtp_layers));
    }
  }
  return absl::OkStatus();
}

// The layout's checks (__init__ and validate_layer_layout), then the
// placement. Megatron-LM builds the embedding on the first virtual stage and
// the output layer and loss on the last whatever the layout says
// (megatron/training/training.py, build_model: pre_process / post_process);
// the layout must list 'E' first and 'L' last, so they are there unless
// stages before 'E' or after 'L' are empty.
absl::StatusOr<std::vector<StageContents>> PlaceFromLayout(const PlacementInput& in) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::vector<std::string> stages, ExpandLayout(in.layout));
  const int64_t n = static_cast<int64_t>(stages.size());
  if (n % in.pp != 0) {
    return LayoutError(in.layout, absl::StrCat("has ", n,
                                               " virtual stages, not a multiple of "
                                               "pipeline_model_parallel_size ",
                                               in.pp));
  }
  const std::string flat = absl::StrJoin(stages, "");
  if (flat.empty() || flat.front() != 'E') {
    return LayoutError(in.layout, "must start with the embedding 'E'");
  }
  if (flat.back() != 'L') return LayoutError(in.layout, "must end with the loss 'L'");
  for (const auto& [symbol, what] : {std::pair{'E', "embedding"}, std::pair{'L', "loss"}}) {
    if (const int64_t times = std::count(flat.begin(), flat.end(), symbol); times != 1) {
      return LayoutError(in.layout, absl::StrCat("has the ", what, " '", std::string(1, symbol),
                                                 "' ", times, " times; it must be there once"));
    }
  }
  const int64_t layers = std::count(flat.begin(), flat.end(), 't');
  if (layers != in.num_layers) {
    return LayoutError(
        in.layout,
        absl::StrCat("places ", layers, " decoder layers but model.num_layers is ", in.num_layers));
  }
  const int64_t mtp = std::count(flat.begin(), flat.end(), 'm');
  if (mtp != in.mtp_layers) {
    return LayoutError(
        in.layout,
        absl::StrCat("places ", mtp, " MTP layers but model.mtp_num_layers is ", in.mtp_layers));
  }
  OOMGUARD_RETURN_IF_ERROR(CheckMtpPlacement(in, stages));

  std::vector<StageContents> out(n);
  out.front().has_embedding = true;
  out.back().has_loss = true;
  int layer = 0;
  for (int64_t i = 0; i < n; ++i) {
    StageContents& st = out[i];
    st.first_layer = layer;
    st.num_layers = static_cast<int>(std::count(stages[i].begin(), stages[i].end(), 't'));
    st.num_mtp_layers = static_cast<int>(std::count(stages[i].begin(), stages[i].end(), 'm'));
    layer += st.num_layers;
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
    // Megatron-Core's TransformerConfig.__post_init__ (uneven PP): a set
    // first or last stage holds at least one layer, and the middle stages
    // hold layers if and only if there are middle stages ("Mismatch: ...
    // middle PP stages available", from core 0.16; older versions ran empty
    // middle stages, which hold nothing but their GPUs).
    for (const auto& [field, layers] :
         {std::pair{"decoder_first_pipeline_num_layers", in.first_stage_layers},
          std::pair{"decoder_last_pipeline_num_layers", in.last_stage_layers}}) {
      if (layers == 0) return SplitError(field, layers, "must be at least 1 when set");
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
    const char* field = in.first_stage_layers >= 0 ? "decoder_first_pipeline_num_layers"
                                                   : "decoder_last_pipeline_num_layers";
    const int64_t value = in.first_stage_layers >= 0 ? in.first_stage_layers : in.last_stage_layers;
    if (middle > 0 && rest == 0) {
      return SplitError(
          field, value,
          absl::StrCat("leaves none of model.num_layers ", in.num_layers, " to the other ", middle,
                       " stages; every stage needs a layer"));
    }
    if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % middle != 0)) {
      return SplitError(field, value,
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
  if (layout.size() > kMaxLayoutChars) {
    return LayoutError(layout, absl::StrCat("longer than ", kMaxLayoutChars, " characters"));
  }
  // Commas are cosmetic.
  const std::string text = absl::StrReplaceAll(layout, {{",", ""}});
  OOMGUARD_ASSIGN_OR_RETURN(const std::string groups, UnrollGroups(layout, text));
  OOMGUARD_ASSIGN_OR_RETURN(const std::string flat, UnrollCharacters(layout, groups));
  std::vector<std::string> stages = absl::StrSplit(flat, '|');
  for (size_t i = 0; i < stages.size(); ++i) {
    for (char c : stages[i]) {
      if (c != 'E' && c != 't' && c != 'm' && c != 'L') {
        return LayoutError(layout, absl::StrCat("unexpected character ",
                                                Quote(std::string(1, c), '\''), " in stage ", i,
                                                "; a stage holds E (embedding), t (decoder layer), "
                                                "m (MTP layer) and L (loss), repeated with "
                                                "\"x*n\" or \"(...)*n\""));
      }
    }
  }
  return stages;
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
