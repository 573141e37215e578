#include "estimator/report_invariants.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "estimator/reported_count.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace oomguard {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The largest uint64 field anywhere in `m`, nested messages included.
uint64_t LargestCount(const Message& m) {
  const Reflection* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  uint64_t largest = 0;
  for (const FieldDescriptor* f : fields) {
    const int n = f->is_repeated() ? reflection->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
        largest = std::max(largest, f->is_repeated() ? reflection->GetRepeatedUInt64(m, f, i)
                                                     : reflection->GetUInt64(m, f));
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        largest = std::max(largest,
                           LargestCount(f->is_repeated() ? reflection->GetRepeatedMessage(m, f, i)
                                                         : reflection->GetMessage(m, f)));
      }
    }
  }
  return largest;
}

// Checks `a` == `b` for two fields that must agree exactly.
absl::Status Equal(absl::string_view where, absl::string_view what, uint64_t a, uint64_t b) {
  if (a == b) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(where, ": ", what, ": ", a, " != ", b));
}

// Checks that `count` is min(2^50, `exact`) up to `slack` (the rounding of
// the fields `exact` was summed from), plus floating-point noise.
absl::Status Near(absl::string_view where, absl::string_view what, uint64_t count, double exact,
                  double slack) {
  const double expected = std::min(exact, static_cast<double>(kMaxReportedCount));
  if (std::abs(static_cast<double>(count) - expected) <= slack + 1e-9 * expected) {
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat(where, ": ", what, ": ", count, " is not ", expected, " (+- ", slack, ")"));
}

absl::Status AtLeast(absl::string_view where, absl::string_view what, uint64_t a, uint64_t b) {
  if (a >= b) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(where, ": ", what, ": ", a, " < ", b));
}

absl::Status CheckTree(absl::string_view where, const v1::ModuleNode& node) {
  uint64_t params = 0, act = 0;
  for (const v1::ModuleNode& child : node.children()) {
    OOMGUARD_RETURN_IF_ERROR(CheckTree(where, child));
    const uint64_t times = std::max<uint32_t>(child.repeat(), 1);
    params = AddCounts(params, MultiplyCount(child.parameters(), times));
    act = AddCounts(act, MultiplyCount(child.activation_bytes(), times));
  }
  const std::string at = absl::StrCat(where, ", tree node ", node.name());
  OOMGUARD_RETURN_IF_ERROR(AtLeast(at, "parameters >= its children's", node.parameters(), params));
  return AtLeast(at, "activation_bytes >= its children's", node.activation_bytes(), act);
}

absl::Status CheckRank(const v1::EstimateReport& report, int index) {
  const v1::RankReport& r = report.ranks(index);
  const std::string where = absl::StrCat("pp rank ", index);
  OOMGUARD_RETURN_IF_ERROR(Equal(where, "pp_rank", r.pp_rank(), index));

  // Range and flag.
  uint64_t largest = LargestCount(r);
  const v1::ModuleNode* tree =
      index < report.rank_trees_size() ? &report.rank_trees(index) : nullptr;
  if (tree != nullptr) largest = std::max(largest, LargestCount(*tree));
  if (largest > kMaxReportedCount) {
    return absl::InternalError(
        absl::StrCat(where, ": a count of ", largest, " is over the limit 2^50"));
  }
  if (r.exceeds_limit() != IsCapped(largest)) {
    return absl::InternalError(
        absl::StrCat(where, ": exceeds_limit = ", r.exceeds_limit() ? "true" : "false",
                     " but its largest count is ", largest));
  }

  // Parts and totals.
  const v1::StaticBytes& s = r.static_();
  uint64_t static_total = 0;
  for (const uint64_t part :
       {s.dense_param_bytes(), s.dense_grad_bytes(), s.dense_optimizer_bytes(),
        s.expert_param_bytes(), s.expert_grad_bytes(), s.expert_optimizer_bytes(),
        s.te_dummy_wgrad_bytes()}) {
    static_total = AddCounts(static_total, part);
  }
  OOMGUARD_RETURN_IF_ERROR(
      Equal(where, "static.total_bytes = sum of its GPU parts", s.total_bytes(), static_total));
  OOMGUARD_RETURN_IF_ERROR(
      Equal(where, "static_bytes = static.total_bytes", r.static_bytes(), s.total_bytes()));
  OOMGUARD_RETURN_IF_ERROR(Equal(where, "parameters = dense + expert", r.parameters(),
                                 AddCounts(r.dense_parameters(), r.expert_parameters())));
  uint64_t allocated =
      AddCounts(r.static_bytes(),
                std::max(AddCounts(r.activation_bytes(), r.transient_bytes()),
                         AddCounts(r.optimizer_step_bytes(), r.optimizer_step_temporary_bytes())));
  uint64_t device_only = 0;
  for (const v1::Overhead& o : r.overheads()) {
    uint64_t& sum = o.in_allocated() ? allocated : device_only;
    sum = AddCounts(sum, o.bytes());
  }
  OOMGUARD_RETURN_IF_ERROR(
      Equal(where,
            "peak_allocated_bytes = static + max(activation + transient, optimizer step) + "
            "overheads in the allocator",
            r.peak_allocated_bytes(), allocated));
  OOMGUARD_RETURN_IF_ERROR(Equal(where,
                                 "peak_device_bytes = peak_allocated_bytes + overheads outside it",
                                 r.peak_device_bytes(), AddCounts(allocated, device_only)));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "peak_device_bytes >= peak_allocated_bytes",
                                   r.peak_device_bytes(), r.peak_allocated_bytes()));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "peak_allocated_bytes >= static_bytes",
                                   r.peak_allocated_bytes(), r.static_bytes()));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "peak_allocated_upper_bytes >= peak_allocated_bytes",
                                   r.peak_allocated_upper_bytes(), r.peak_allocated_bytes()));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "peak_device_upper_bytes >= peak_device_bytes",
                                   r.peak_device_upper_bytes(), r.peak_device_bytes()));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "peak_device_upper_bytes >= peak_allocated_upper_bytes",
                                   r.peak_device_upper_bytes(), r.peak_allocated_upper_bytes()));

  // Chunks.
  OOMGUARD_RETURN_IF_ERROR(Equal(where, "chunks = virtual_pipeline_chunks", r.chunks_size(),
                                 report.virtual_pipeline_chunks()));
  double chunk_params = 0, chunk_act = 0;
  for (const v1::ChunkReport& c : r.chunks()) {
    const std::string at = absl::StrCat(where, ", chunk ", c.chunk());
    const double n = c.in_flight_microbatches();
    OOMGUARD_RETURN_IF_ERROR(Near(at, "activation_bytes = in_flight x per micro-batch",
                                  c.activation_bytes(), n * c.activation_bytes_per_microbatch(),
                                  (n + 1) / 2));
    chunk_params += static_cast<double>(c.parameters());
    chunk_act += static_cast<double>(c.activation_bytes());
  }
  const double slack = (r.chunks_size() + 1) / 2.0;
  OOMGUARD_RETURN_IF_ERROR(
      Near(where, "activation_bytes = the chunks' sum", r.activation_bytes(), chunk_act, slack));
  OOMGUARD_RETURN_IF_ERROR(
      Near(where, "parameters = the chunks' sum", r.parameters(), chunk_params, slack + 1));
  OOMGUARD_RETURN_IF_ERROR(AtLeast(where, "total_parameters >= the rank's parameters",
                                   report.total_parameters(), r.parameters()));
  if (tree != nullptr) OOMGUARD_RETURN_IF_ERROR(CheckTree(where, *tree));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckReportInvariants(const v1::EstimateReport& report) {
  const uint64_t pp = report.pipeline_parallel();
  if (report.ranks().empty()) return absl::InternalError("the report has no ranks");
  OOMGUARD_RETURN_IF_ERROR(Equal("report", "ranks = pipeline_parallel", report.ranks_size(), pp));
  OOMGUARD_RETURN_IF_ERROR(Equal("report", "num_gpus = TP x PP x CP x DP", report.num_gpus(),
                                 uint64_t{report.tensor_parallel()} * pp *
                                     report.context_parallel() * report.data_parallel()));
  OOMGUARD_RETURN_IF_ERROR(Equal("report", "num_gpus = PP x EP x ETP x expert DP",
                                 report.num_gpus(),
                                 pp * report.expert_parallel() * report.expert_tensor_parallel() *
                                     report.expert_data_parallel()));
  if (report.rank_trees_size() != 0) {
    OOMGUARD_RETURN_IF_ERROR(
        Equal("report", "rank_trees = pipeline_parallel", report.rank_trees_size(), pp));
  }
  bool rank_over_limit = false;
  uint32_t worst = 0;
  for (int i = 0; i < report.ranks_size(); ++i) {
    OOMGUARD_RETURN_IF_ERROR(CheckRank(report, i));
    rank_over_limit = rank_over_limit || report.ranks(i).exceeds_limit();
    if (report.ranks(i).peak_device_bytes() > report.ranks(worst).peak_device_bytes()) worst = i;
  }
  OOMGUARD_RETURN_IF_ERROR(Equal("report", "worst_rank = the first largest peak_device_bytes",
                                 report.worst_rank(), worst));
  if (report.total_parameters() > kMaxReportedCount) {
    return absl::InternalError(absl::StrCat("report: total_parameters ", report.total_parameters(),
                                            " is over the limit 2^50"));
  }
  const bool over = rank_over_limit || IsCapped(report.total_parameters());
  if (report.exceeds_limit() != over) {
    return absl::InternalError(
        absl::StrCat("report: exceeds_limit = ", report.exceeds_limit() ? "true" : "false",
                     " but its ranks and total_parameters say ", over ? "true" : "false"));
  }
  return absl::OkStatus();
}

absl::Status CheckGrowsWith(const v1::EstimateReport& smaller, const v1::EstimateReport& larger) {
  OOMGUARD_RETURN_IF_ERROR(
      Equal("reports", "ranks of both", smaller.ranks_size(), larger.ranks_size()));
  for (int i = 0; i < smaller.ranks_size(); ++i) {
    const v1::RankReport& a = smaller.ranks(i);
    const v1::RankReport& b = larger.ranks(i);
    const std::string where = absl::StrCat("pp rank ", i, " grown");
    OOMGUARD_RETURN_IF_ERROR(
        AtLeast(where, "activation_bytes", b.activation_bytes(), a.activation_bytes()));
    OOMGUARD_RETURN_IF_ERROR(
        AtLeast(where, "transient_bytes", b.transient_bytes(), a.transient_bytes()));
    OOMGUARD_RETURN_IF_ERROR(
        AtLeast(where, "peak_allocated_bytes", b.peak_allocated_bytes(), a.peak_allocated_bytes()));
    OOMGUARD_RETURN_IF_ERROR(
        AtLeast(where, "peak_device_bytes", b.peak_device_bytes(), a.peak_device_bytes()));
  }
  return absl::OkStatus();
}

}  // namespace oomguard
