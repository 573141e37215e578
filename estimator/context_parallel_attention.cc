#include "estimator/context_parallel_attention.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oomguard {
namespace {

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", why));
}

std::string SizesText(const v1::ParallelismSpec& p) {
  return absl::StrCat("[", absl::StrJoin(p.hierarchical_context_parallel_sizes(), ", "), "]");
}

}  // namespace

absl::Status ResolveContextParallelComm(const v1::ParallelismSpec& p, ValidatedJob& j) {
  Parallelism& par = j.parallelism;
  par.cp_comm = v1::CP_COMM_TYPE_P2P;
  par.cp_a2a = 1;
  bool a2a_p2p = false;
  int mixed = -1;  // The first layer whose type is not the first layer's.
  for (int i = 0; i < p.cp_comm_type_size(); ++i) {
    if (p.cp_comm_type(i) == v1::CP_COMM_TYPE_A2A_P2P) a2a_p2p = true;
    if (mixed < 0 && p.cp_comm_type(i) != p.cp_comm_type(0)) mixed = i;
  }
  // arguments.py validate_args, whatever the CP size: the hierarchical
  // sizes multiply to CP, and a2a+p2p needs them.
  if (p.hierarchical_context_parallel_sizes_size() > 0) {
    int64_t product = 1;
    for (const uint32_t size : p.hierarchical_context_parallel_sizes()) product *= size;
    if (product != par.cp) {
      return Bad(
          "parallelism.hierarchical_context_parallel_sizes", SizesText(p),
          absl::StrCat("their product ", product, " must be context_parallel_size ", par.cp));
    }
  }
  if (a2a_p2p && p.hierarchical_context_parallel_sizes_size() == 0) {
    return Bad("parallelism.cp_comm_type", "CP_COMM_TYPE_A2A_P2P",
               "needs parallelism.hierarchical_context_parallel_sizes "
               "(--hierarchical-context-parallel-sizes)");
  }
  if (par.cp == 1 || p.cp_comm_type_size() == 0) return absl::OkStatus();
  // TransformerConfig.__post_init__: a list names every layer.
  if (p.cp_comm_type_size() != 1 && p.cp_comm_type_size() != j.model.num_layers) {
    return Bad(
        "parallelism.cp_comm_type", absl::StrCat(p.cp_comm_type_size(), " types"),
        absl::StrCat("one type, or one per layer (model.num_layers ", j.model.num_layers, ")"));
  }
  if (mixed >= 0) {
    return absl::UnimplementedError(
        absl::StrCat("parallelism.cp_comm_type: a per-layer mix of types (",
                     v1::CpCommType_Name(p.cp_comm_type(mixed)), " beside ",
                     v1::CpCommType_Name(p.cp_comm_type(0)),
                     ") is not modelled; oomguard models one type for every layer"));
  }
  par.cp_comm =
      p.cp_comm_type(0) == v1::CP_COMM_TYPE_UNSPECIFIED ? v1::CP_COMM_TYPE_P2P : p.cp_comm_type(0);
  if (par.cp_comm == v1::CP_COMM_TYPE_A2A) par.cp_a2a = par.cp;
  // attn_forward_func_with_cp: an a2a+p2p whose a2a or p2p group is 1 runs
  // as the other.
  if (par.cp_comm == v1::CP_COMM_TYPE_A2A_P2P) {
    const int64_t inner = p.hierarchical_context_parallel_sizes(0);
    par.cp_a2a = inner;
    if (inner == 1) par.cp_comm = v1::CP_COMM_TYPE_P2P;
    if (inner == par.cp) par.cp_comm = v1::CP_COMM_TYPE_A2A;
  }
  // flash_attn_a2a_communicate splits the heads of q and of k/v evenly over
  // the a2a group.
  const int64_t heads = j.model.heads / par.tp;
  const int64_t groups = j.model.query_groups / par.tp;
  if (par.cp_a2a > 1 && (heads % par.cp_a2a != 0 || groups % par.cp_a2a != 0)) {
    return Bad("parallelism.cp_comm_type", v1::CpCommType_Name(p.cp_comm_type(0)),
               absl::StrCat("the all-to-all splits the ", heads, " heads and ", groups,
                            " key/value groups per TP rank over its ", par.cp_a2a,
                            " ranks; they must divide evenly"));
  }
  return absl::OkStatus();
}

bool CpAttentionKeepsAllToAllCopies(const ValidatedJob& j) {
  return j.parallelism.cp > 1 && (j.parallelism.cp_comm == v1::CP_COMM_TYPE_A2A ||
                                  j.parallelism.cp_comm == v1::CP_COMM_TYPE_A2A_P2P);
}

double CpAllGatherTransientBytes(const ValidatedJob& j, double kv_bytes) {
  if (j.parallelism.cp == 1 || j.parallelism.cp_comm != v1::CP_COMM_TYPE_ALL_GATHER) return 0;
  return 2.0 * static_cast<double>(j.parallelism.cp) * kv_bytes;
}

}  // namespace oomguard
