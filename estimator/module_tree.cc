#include "estimator/module_tree.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/checkpointed_attention_mask.h"
#include "estimator/fp8_memory.h"
#include "estimator/layer_memory.h"
#include "estimator/reported_count.h"

namespace oomguard {
namespace {

// The longest pattern of layer runs folded into one node.
constexpr size_t kMaxPatternRuns = 16;

// Consecutive decoder layers of one kind: [first, first + count).
struct LayerRun {
  int first = 0;
  int count = 0;
  bool moe = false;
  bool bf16 = false;  // Kept out of FP8 (fp8_memory.h).
  // A hybrid model's layer kind (HybridSettings); null otherwise.
  std::optional<HybridLayer> hybrid;

  bool SameShape(const LayerRun& o) const {
    return count == o.count && moe == o.moe && bf16 == o.bf16 && hybrid == o.hybrid;
  }
};

std::optional<HybridLayer> HybridKind(const ValidatedJob& j, int l) {
  if (!j.hybrid.on) return std::nullopt;
  return j.hybrid.layers[l];
}

// The node type of a run's layers (hybrid_layer_specs.py names them).
std::string LayerType(const LayerRun& run) {
  if (run.hybrid) {
    switch (*run.hybrid) {
      case HybridLayer::kMamba:
        return "MambaLayer";
      case HybridLayer::kAttention:
        return "TransformerLayer(attention)";
      case HybridLayer::kMlp:
        return "MLPLayer";
      default:
        return "TransformerLayer(MoE)";
    }
  }
  return absl::StrCat(run.moe ? "TransformerLayer(MoE)" : "TransformerLayer",
                      run.bf16 ? " bf16 (is_first_last_bf16_layer)" : "");
}

std::vector<LayerRun> RunsOf(const ValidatedJob& j, const StageContents& st) {
  std::vector<LayerRun> runs;
  const int end = st.first_layer + st.num_layers;
  for (int l = st.first_layer; l < end;) {
    LayerRun run{.first = l,
                 .moe = j.moe.is_moe_layer[l],
                 .bf16 = KeptInBf16(j, l),
                 .hybrid = HybridKind(j, l)};
    while (l < end && j.moe.is_moe_layer[l] == run.moe && KeptInBf16(j, l) == run.bf16 &&
           HybridKind(j, l) == run.hybrid) {
      ++l;
    }
    run.count = l - run.first;
    runs.push_back(run);
  }
  return runs;
}

// The pattern of runs starting at runs[i] that covers the most of runs
// [i, end) by repeating back to back: {runs in the pattern, times}. times is
// 1 when nothing repeats.
std::pair<size_t, size_t> RepeatAt(const std::vector<LayerRun>& runs, size_t i, size_t end) {
  size_t best_period = 1, best_times = 1;
  const size_t left = end - i;
  for (size_t period = 2; period <= kMaxPatternRuns && 2 * period <= left; ++period) {
    size_t matched = period;  // Runs equal to the pattern so far.
    while (matched < left && runs[i + matched].SameShape(runs[i + matched % period])) ++matched;
    const size_t times = matched / period;
    if (times >= 2 && times * period > best_times * best_period) {
      best_period = period;
      best_times = times;
    }
  }
  return {best_period, best_times};
}

int64_t CountNodes(const v1::ModuleNode& node) {
  int64_t n = 1;
  for (const v1::ModuleNode& child : node.children()) n += CountNodes(child);
  return n;
}

// Builds a tree node by node from a budget shared by the report's trees.
class TreeBuilder {
 public:
  TreeBuilder(const ValidatedJob& j, int64_t* nodes_left) : j_(j), nodes_left_(nodes_left) {}

  // A child of `parent` (its subtree's nodes spent by Spend once filled).
  v1::ModuleNode* Add(v1::ModuleNode* parent, absl::string_view name, absl::string_view type,
                      uint32_t repeat = 0) {
    v1::ModuleNode* node = parent->add_children();
    node->set_name(std::string(name));
    node->set_type(std::string(type));
    if (repeat > 0) node->set_repeat(repeat);
    return node;
  }

  // Takes `node`'s subtree from the budget; false once it is spent.
  bool Spend(const v1::ModuleNode& node) {
    *nodes_left_ -= CountNodes(node);
    return *nodes_left_ >= 0;
  }

  // Layer runs [begin, end) of `runs` into `parent`, repeating patterns
  // folded; false once the budget is spent.
  bool AddLayers(const std::vector<LayerRun>& runs, size_t begin, size_t end,
                 v1::ModuleNode* parent) {
    for (size_t i = begin; i < end;) {
      const auto [period, times] = RepeatAt(runs, i, end);
      if (times >= 2) {
        const LayerRun& last = runs[i + period * times - 1];
        int layers = 0;
        for (size_t k = i; k < i + period; ++k) layers += runs[k].count;
        v1::ModuleNode* group =
            Add(parent, absl::StrCat("(", runs[i].first, "-", last.first + last.count - 1, ")"),
                absl::StrCat("LayerPattern(", layers, " layers)"), static_cast<uint32_t>(times));
        if (--*nodes_left_ < 0 || !AddLayers(runs, i, i + period, group)) return false;
        i += period * times;
        continue;
      }
      const LayerRun& run = runs[i];
      v1::ModuleNode* layer =
          Add(parent, absl::StrCat("(", run.first, "-", run.first + run.count - 1, ")"),
              LayerType(run), static_cast<uint32_t>(run.count));
      if (run.hybrid) {
        HybridLayerCost(j_, *run.hybrid, layer);
      } else {
        DecoderLayerCost(j_, run.moe, layer, run.bf16);
      }
      if (!Spend(*layer)) return false;
      ++i;
    }
    return true;
  }

 private:
  const ValidatedJob& j_;
  int64_t* nodes_left_;
};

// Sums children into their parents (repeated nodes count repeat times).
void FinalizeTree(v1::ModuleNode* node) {
  uint64_t params = node->parameters(), act = node->activation_bytes();
  for (v1::ModuleNode& child : *node->mutable_children()) {
    FinalizeTree(&child);
    const uint64_t times = std::max<uint32_t>(child.repeat(), 1);
    params = AddCounts(params, MultiplyCount(child.parameters(), times));
    act = AddCounts(act, MultiplyCount(child.activation_bytes(), times));
  }
  node->set_parameters(params);
  node->set_activation_bytes(act);
}

}  // namespace

absl::Status BuildRankTree(const ValidatedJob& j, int64_t r, int64_t* nodes_left,
                           v1::ModuleNode* root) {
  const auto too_large = [&j, r] {
    return absl::InvalidArgumentError(
        absl::StrCat("module_tree: this job's module trees need more than ", kMaxModuleTreeNodes,
                     " nodes (reached at PP rank ", r, " of ", j.parallelism.pp,
                     "; a node per module of every layer that follows no short repeating "
                     "pattern); ask for the estimate without the tree"));
  };
  TreeBuilder b(j, nodes_left);
  // A hybrid model is megatron/core/models/hybrid/ HybridModel with a
  // HybridStack.
  const char* model_type = j.hybrid.on ? "HybridModel" : "GPTModel";
  root->set_name(absl::StrCat("pp_rank_", r));
  root->set_type(model_type);
  if (!b.Spend(*root)) return too_large();
  const int64_t pp = j.parallelism.pp, vpp = j.parallelism.vpp;
  for (int64_t c = 0; c < vpp; ++c) {
    const StageContents& st = j.stages[r + c * pp];
    v1::ModuleNode* chunk = root;
    if (vpp > 1) {
      chunk = b.Add(root, absl::StrCat("chunk_", c), model_type);
      if (!b.Spend(*chunk)) return too_large();
    }
    if (st.has_embedding) {
      v1::ModuleNode* e = b.Add(chunk, "embedding", "LanguageModelEmbedding");
      EmbeddingCost(j, e);
      if (!b.Spend(*e)) return too_large();
    }
    if (const double mask = CheckpointedAttentionMaskBytes(j, st); mask > 0) {
      v1::ModuleNode* m = b.Add(chunk, "attention_mask",
                                "CheckpointFunction.save_for_backward(get_batch attention_mask)");
      m->set_activation_bytes(TruncatedCount(mask));
      if (!b.Spend(*m)) return too_large();
    }
    v1::ModuleNode* decoder =
        b.Add(chunk, "decoder", j.hybrid.on ? "HybridStack" : "TransformerBlock");
    if (!b.Spend(*decoder)) return too_large();
    const std::vector<LayerRun> runs = RunsOf(j, st);
    if (!b.AddLayers(runs, 0, runs.size(), decoder)) return too_large();
    if (st.has_loss) {
      // The loss's modules are the decoder's children.
      const int before = decoder->children_size();
      LossCost(j, !j.model.tied_embeddings || !(st.has_embedding || st.num_mtp_layers > 0),
               decoder);
      for (int k = before; k < decoder->children_size(); ++k) {
        if (!b.Spend(decoder->children(k))) return too_large();
      }
    }
    if (st.num_mtp_layers > 0) {
      v1::ModuleNode* mtp = b.Add(chunk, "mtp", "MultiTokenPredictionLayer",
                                  static_cast<uint32_t>(st.num_mtp_layers));
      MtpLayerCost(j, mtp);
      if (!b.Spend(*mtp)) return too_large();
    }
  }
  FinalizeTree(root);
  return absl::OkStatus();
}

}  // namespace oomguard
