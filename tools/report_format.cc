// The estimate report as a table, a module tree and JSON (see report_format.h).
#include "tools/report_format.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "admission/peak_wording.h"
#include "estimator/reported_count.h"
#include "nlohmann/json.hpp"

namespace oomguard {
namespace {

using ::nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double Gib(uint64_t bytes) { return static_cast<double>(bytes) / kGiB; }

// What the peak holds beyond static, activations and transients. A rank over
// the estimator's limit holds capped counts (estimator/reported_count.h) that
// cannot be subtracted: its overheads are their capped sum.
uint64_t OverheadBytes(const v1::RankReport& r) {
  if (r.exceeds_limit()) {
    uint64_t sum = 0;
    for (const v1::Overhead& o : r.overheads()) sum = AddCounts(sum, o.bytes());
    return sum;
  }
  return r.peak_device_bytes() - r.static_bytes() - r.activation_bytes() - r.transient_bytes();
}

ordered_json TreeJson(const v1::ModuleNode& n) {
  ordered_json children = ordered_json::array();
  for (const v1::ModuleNode& c : n.children()) children.push_back(TreeJson(c));
  return ordered_json{{"name", n.name()},
                      {"type", n.type()},
                      {"parameters", n.parameters()},
                      {"activation_bytes", n.activation_bytes()},
                      {"repeat", std::max<uint32_t>(n.repeat(), 1)},
                      {"children", std::move(children)}};
}

ordered_json RankJson(const v1::RankReport& r, uint64_t capacity) {
  const v1::StaticBytes& s = r.static_();
  ordered_json j = {{"pp_rank", r.pp_rank()},
                    {"parameters", r.parameters()},
                    {"dense_parameters", r.dense_parameters()},
                    {"expert_parameters", r.expert_parameters()},
                    {"static_bytes", r.static_bytes()},
                    {"dense_param_bytes", s.dense_param_bytes()},
                    {"dense_grad_bytes", s.dense_grad_bytes()},
                    {"dense_optimizer_bytes", s.dense_optimizer_bytes()},
                    {"expert_param_bytes", s.expert_param_bytes()},
                    {"expert_grad_bytes", s.expert_grad_bytes()},
                    {"expert_optimizer_bytes", s.expert_optimizer_bytes()},
                    {"host_optimizer_bytes", s.host_optimizer_bytes()},
                    {"te_dummy_wgrad_bytes", s.te_dummy_wgrad_bytes()},
                    {"activation_bytes", r.activation_bytes()},
                    {"transient_bytes", r.transient_bytes()},
                    {"peak_allocated_bytes", r.peak_allocated_bytes()},
                    {"peak_device_bytes", r.peak_device_bytes()},
                    {"peak_allocated_upper_bytes", r.peak_allocated_upper_bytes()},
                    {"peak_device_upper_bytes", r.peak_device_upper_bytes()}};
  if (capacity) {
    j["headroom_bytes"] =
        static_cast<int64_t>(capacity) - static_cast<int64_t>(r.peak_device_bytes());
    j["headroom_upper_bytes"] =
        static_cast<int64_t>(capacity) - static_cast<int64_t>(r.peak_device_upper_bytes());
  }
  // Only present on a rank whose counts reached 2^50 and are capped there.
  if (r.exceeds_limit()) j["exceeds_limit"] = true;
  ordered_json& overheads = j["overheads"] = ordered_json::array();
  for (const v1::Overhead& o : r.overheads()) {
    overheads.push_back(
        {{"name", o.name()}, {"bytes", o.bytes()}, {"in_allocated", o.in_allocated()}});
  }
  ordered_json& uncertainties = j["uncertainties"] = ordered_json::array();
  for (const v1::Uncertainty& u : r.uncertainties()) {
    uncertainties.push_back(
        {{"name", u.name()}, {"sd_bytes", u.sd_bytes()}, {"in_allocated", u.in_allocated()}});
  }
  ordered_json& chunks = j["chunks"] = ordered_json::array();
  for (const v1::ChunkReport& c : r.chunks()) {
    chunks.push_back({{"chunk", c.chunk()},
                      {"virtual_stage", c.virtual_stage()},
                      {"num_decoder_layers", c.num_decoder_layers()},
                      {"num_mtp_layers", c.num_mtp_layers()},
                      {"has_embedding", c.has_embedding()},
                      {"has_loss", c.has_loss()},
                      {"parameters", c.parameters()},
                      {"in_flight_microbatches", c.in_flight_microbatches()},
                      {"activation_bytes_per_microbatch", c.activation_bytes_per_microbatch()},
                      {"activation_bytes", c.activation_bytes()}});
  }
  return j;
}

void TreeText(const v1::ModuleNode& n, int depth, std::string& out) {
  const double mi = 1024.0 * 1024.0;
  std::string label = n.repeat() > 1 ? absl::StrCat(n.name(), ": ", n.repeat(), " x ", n.type())
                                     : absl::StrCat(n.name(), ": ", n.type());
  absl::StrAppendFormat(&out, "%*s%s /* n_params=%.2fM act=%.2f MiB */\n", 2 * depth, "", label,
                        static_cast<double>(n.parameters()) / mi,
                        static_cast<double>(n.activation_bytes()) / mi);
  for (const v1::ModuleNode& c : n.children()) TreeText(c, depth + 1, out);
}

}  // namespace

std::string FormatTable(const v1::EstimateReport& rep, uint64_t capacity) {
  std::string out = absl::StrFormat(
      "%d GPUs: TP %d, PP %d, VPP %d, CP %d, EP %d, ETP %d, DP %d, expert DP %d; %d "
      "micro-batches per iteration; padded vocab %d\n\n",
      rep.num_gpus(), rep.tensor_parallel(), rep.pipeline_parallel(), rep.virtual_pipeline_chunks(),
      rep.context_parallel(), rep.expert_parallel(), rep.expert_tensor_parallel(),
      rep.data_parallel(), rep.expert_data_parallel(), rep.num_microbatches(),
      rep.padded_vocab_size());
  absl::StrAppendFormat(&out, "%7s %10s %10s %10s %10s %10s %10s %10s %10s%s\n", "pp_rank",
                        "params(B)", "static", "activation", "transient", "peak_alloc", "overheads",
                        "peak_dev", "upper_dev", capacity ? "  vs GPU" : "");
  for (const v1::RankReport& r : rep.ranks()) {
    std::string fit;
    if (capacity) {
      fit = r.peak_device_upper_bytes() <= capacity ? "  fits"
            : r.peak_device_bytes() <= capacity     ? "  AT RISK"
                                                    : "  DOES NOT FIT";
    }
    if (r.exceeds_limit()) fit += "  (>= 1 PiB: capped)";
    absl::StrAppendFormat(
        &out, "%7d %10.3f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f%s\n", r.pp_rank(),
        static_cast<double>(r.parameters()) / 1e9, Gib(r.static_bytes()), Gib(r.activation_bytes()),
        Gib(r.transient_bytes()), Gib(r.peak_allocated_bytes()), Gib(OverheadBytes(r)),
        Gib(r.peak_device_bytes()), Gib(r.peak_device_upper_bytes()), fit);
  }
  absl::StrAppendFormat(
      &out,
      "(memory in GiB; peak_alloc = what torch.cuda.max_memory_allocated reports, peak_dev = "
      "what the GPU must hold, upper_dev = at most that at %g%% coverage%s)\n",
      100 * rep.upper_bound_coverage(),
      capacity ? "; AT RISK = fits only at the point estimate" : "");
  if (rep.ranks_size() > 0) {
    const v1::RankReport& w = rep.ranks(rep.worst_rank());
    // Against a GPU, the verdict's peak: the worst rank's upper bound, then
    // its point estimate, each labelled (admission/peak_wording.h).
    const std::string upper_label =
        ComparedPeakLabel(v1::PEAK_BOUND_UPPER, rep.upper_bound_coverage());
    const std::string point_label = ComparedPeakLabel(v1::PEAK_BOUND_POINT, 0);
    if (capacity) {
      const v1::RankReport* u = &w;
      for (const v1::RankReport& r : rep.ranks()) {
        if (r.peak_device_upper_bytes() > u->peak_device_upper_bytes()) u = &r;
      }
      const double head =
          (static_cast<double>(capacity) - static_cast<double>(u->peak_device_upper_bytes())) /
          kGiB;
      absl::StrAppendFormat(&out, "\nworst rank %d: %.2f GiB (%s; %s %.2f GiB) of %.2f GiB: %s",
                            u->pp_rank(), Gib(u->peak_device_upper_bytes()), upper_label,
                            point_label, Gib(u->peak_device_bytes()), Gib(capacity),
                            head >= 0 ? absl::StrFormat("fits, %.2f GiB headroom", head)
                                      : absl::StrFormat("does not fit, %.2f GiB over", -head));
    } else {
      absl::StrAppendFormat(&out, "\nworst rank %d: %.2f GiB (%s; %s %.2f GiB)", w.pp_rank(),
                            Gib(w.peak_device_bytes()), point_label, upper_label,
                            Gib(w.peak_device_upper_bytes()));
    }
    out += "\n  overheads:";
    for (const v1::Overhead& o : w.overheads()) {
      absl::StrAppendFormat(&out, " %s %.2f%s;", o.name(), Gib(o.bytes()),
                            o.in_allocated() ? "*" : "");
    }
    out += " (GiB; * = inside peak_alloc)\n  uncertain:";
    for (const v1::Uncertainty& u : w.uncertainties()) {
      absl::StrAppendFormat(&out, " %s %.2f%s;", u.name(), Gib(u.sd_bytes()),
                            u.in_allocated() ? "*" : "");
    }
    out += " (GiB, one standard deviation of each term's error)\n";
  }
  for (const std::string& n : rep.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

std::string FormatTree(const v1::EstimateReport& rep) {
  std::string out;
  for (const v1::ModuleNode& n : rep.rank_trees()) TreeText(n, 0, out);
  return out;
}

namespace {

// The report as FormatJson writes it.
ordered_json ReportJson(const v1::EstimateReport& rep, uint64_t capacity) {
  ordered_json j = {{"num_gpus", rep.num_gpus()},
                    {"tensor_parallel", rep.tensor_parallel()},
                    {"pipeline_parallel", rep.pipeline_parallel()},
                    {"virtual_pipeline_chunks", rep.virtual_pipeline_chunks()},
                    {"context_parallel", rep.context_parallel()},
                    {"expert_parallel", rep.expert_parallel()},
                    {"expert_tensor_parallel", rep.expert_tensor_parallel()},
                    {"data_parallel", rep.data_parallel()},
                    {"expert_data_parallel", rep.expert_data_parallel()},
                    {"num_microbatches", rep.num_microbatches()},
                    {"padded_vocab_size", rep.padded_vocab_size()},
                    {"worst_rank", rep.worst_rank()},
                    {"upper_bound_coverage", rep.upper_bound_coverage()}};
  if (capacity) j["capacity_bytes"] = capacity;
  if (rep.exceeds_limit()) j["exceeds_limit"] = true;
  ordered_json& ranks = j["ranks"] = ordered_json::array();
  for (const v1::RankReport& r : rep.ranks()) ranks.push_back(RankJson(r, capacity));
  if (rep.rank_trees_size() > 0) {
    ordered_json& trees = j["trees"] = ordered_json::array();
    for (const v1::ModuleNode& n : rep.rank_trees()) trees.push_back(TreeJson(n));
  }
  j["notes"] = std::vector<std::string>(rep.notes().begin(), rep.notes().end());
  return j;
}

// Compact; text that is not UTF-8 (a note quoting an argument) is replaced
// by U+FFFD rather than failing the report.
std::string DumpJson(const ordered_json& j) {
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

ordered_json TermJson(const v1::RlTerm& t) {
  return ordered_json{
      {"name", t.name()}, {"bytes", t.bytes()}, {"basis", t.basis()}, {"key", t.key()}};
}

// "verl", "nemo_rl", "slime", "megatron_rl".
std::string FrameworkName(v1::RlFramework framework) {
  std::string name(absl::StripPrefix(v1::RlFramework_Name(framework), "RL_FRAMEWORK_"));
  return absl::AsciiStrToLower(name);
}

// The worst rank of `phase` (its RlPhaseReport.worst_rank), or null.
const v1::RlPhaseRank* WorstRank(const v1::RlPhaseReport& phase) {
  for (const v1::RlPhaseRank& r : phase.ranks()) {
    if (r.pp_rank() == phase.worst_rank()) return &r;
  }
  return nullptr;
}

}  // namespace

std::string FormatJson(const v1::EstimateReport& rep, uint64_t capacity) {
  return DumpJson(ReportJson(rep, capacity));
}

std::string FormatRlJson(const v1::RlStepReport& step) {
  ordered_json j = {{"framework", FrameworkName(step.framework())},
                    {"binding_phase", step.binding_phase()},
                    {"worst_rank", step.worst_rank()},
                    {"peak_device_bytes", step.peak_device_bytes()},
                    {"peak_device_upper_bytes", step.peak_device_upper_bytes()},
                    {"upper_bound_coverage", step.upper_bound_coverage()},
                    {"gpu_name", step.gpu_name()},
                    {"gpu_memory_bytes", step.gpu_memory_bytes()}};
  ordered_json& phases = j["phases"] = ordered_json::array();
  for (const v1::RlPhaseReport& p : step.phases()) {
    ordered_json phase = {{"phase", p.phase()},
                          {"peak_device_bytes", p.peak_device_bytes()},
                          {"peak_device_upper_bytes", p.peak_device_upper_bytes()},
                          {"worst_rank", p.worst_rank()},
                          {"largest_term", p.largest_term()},
                          {"key", p.key()}};
    if (!p.failure().empty()) phase["failure"] = p.failure();
    ordered_json& ranks = phase["ranks"] = ordered_json::array();
    for (const v1::RlPhaseRank& r : p.ranks()) {
      ordered_json terms = ordered_json::array();
      for (const v1::RlTerm& t : r.terms()) terms.push_back(TermJson(t));
      ranks.push_back({{"pp_rank", r.pp_rank()},
                       {"peak_device_bytes", r.peak_device_bytes()},
                       {"peak_device_upper_bytes", r.peak_device_upper_bytes()},
                       {"terms", std::move(terms)}});
    }
    phases.push_back(std::move(phase));
  }
  j["engine_kv_pool_bytes"] = step.engine_kv_pool_bytes();
  j["engine_kv_tokens"] = step.engine_kv_tokens();
  j["host_bytes_per_node"] = step.host_bytes_per_node();
  ordered_json& host = j["host_terms"] = ordered_json::array();
  for (const v1::RlTerm& t : step.host_terms()) host.push_back(TermJson(t));
  if (step.has_actor_update()) {
    j["actor_update"] = ReportJson(step.actor_update(), step.gpu_memory_bytes());
  }
  j["notes"] = std::vector<std::string>(step.notes().begin(), step.notes().end());
  return DumpJson(j);
}

std::string FormatRlTable(const v1::RlStepReport& step) {
  const std::string gpu =
      step.gpu_name().empty()
          ? absl::StrFormat("a %.2f GiB GPU", Gib(step.gpu_memory_bytes()))
          : absl::StrFormat("%s (%.2f GiB)", step.gpu_name(), Gib(step.gpu_memory_bytes()));
  std::string out = absl::StrFormat("RL step (%s) on %s: each phase's device peak per PP rank\n\n",
                                    FrameworkName(step.framework()), gpu);
  int num_ranks = 0;
  for (const v1::RlPhaseReport& p : step.phases()) num_ranks = std::max(num_ranks, p.ranks_size());
  absl::StrAppendFormat(&out, "%-13s", "phase");
  for (int r = 0; r < num_ranks; ++r)
    absl::StrAppendFormat(&out, " %14s ", absl::StrCat("rank ", r));
  out += "\n";
  for (const v1::RlPhaseReport& p : step.phases()) {
    absl::StrAppendFormat(&out, "%-13s", p.phase());
    for (const v1::RlPhaseRank& r : p.ranks()) {
      absl::StrAppendFormat(&out, " %15s",
                            absl::StrFormat("%.2f/%.2f%s", Gib(r.peak_device_bytes()),
                                            Gib(r.peak_device_upper_bytes()),
                                            r.pp_rank() == p.worst_rank() ? "*" : " "));
    }
    out += p.failure().empty() ? "\n" : "  CANNOT RUN\n";
  }
  absl::StrAppendFormat(&out,
                        "(memory in GiB: peak_dev/upper_dev, upper_dev = at most that at %g%% "
                        "coverage; * = the phase's worst rank)\n",
                        100 * step.upper_bound_coverage());
  const std::string upper_label =
      ComparedPeakLabel(v1::PEAK_BOUND_UPPER, step.upper_bound_coverage());
  const double head = (static_cast<double>(step.gpu_memory_bytes()) -
                       static_cast<double>(step.peak_device_upper_bytes())) /
                      kGiB;
  absl::StrAppendFormat(
      &out,
      "\nbinding phase %s, PP rank %d: %.2f GiB (%s; point estimate %.2f GiB) of %.2f GiB: %s\n",
      step.binding_phase(), step.worst_rank(), Gib(step.peak_device_upper_bytes()), upper_label,
      Gib(step.peak_device_bytes()), Gib(step.gpu_memory_bytes()),
      head >= 0 ? absl::StrFormat("fits, %.2f GiB headroom", head)
                : absl::StrFormat("does not fit, %.2f GiB over", -head));
  for (const v1::RlPhaseReport& p : step.phases()) {
    if (!p.failure().empty()) absl::StrAppend(&out, p.phase(), " cannot run: ", p.failure(), "\n");
  }
  // The terms' names in one column, as wide as the longest.
  int name_width = 0;
  for (const v1::RlPhaseReport& p : step.phases()) {
    if (const v1::RlPhaseRank* w = WorstRank(p)) {
      for (const v1::RlTerm& t : w->terms()) {
        name_width = std::max(name_width, static_cast<int>(t.name().size()));
      }
    }
  }
  for (const v1::RlPhaseReport& p : step.phases()) {
    const v1::RlPhaseRank* w = WorstRank(p);
    if (w == nullptr) continue;
    absl::StrAppendFormat(&out, "\n%s, PP rank %d: %.2f GiB\n", p.phase(), w->pp_rank(),
                          Gib(w->peak_device_bytes()));
    for (const v1::RlTerm& t : w->terms()) {
      absl::StrAppendFormat(&out, "  %-*s %9.2f%s\n", name_width, t.name(), Gib(t.bytes()),
                            t.key().empty() ? "" : absl::StrCat("  (", t.key(), ")"));
    }
  }
  absl::StrAppendFormat(&out, "\nengine KV pool: %.2f GiB per GPU, %d tokens\n",
                        Gib(step.engine_kv_pool_bytes()), step.engine_kv_tokens());
  absl::StrAppendFormat(&out, "host memory per node: %.2f GiB", Gib(step.host_bytes_per_node()));
  std::string sep = " (";
  for (const v1::RlTerm& t : step.host_terms()) {
    absl::StrAppendFormat(&out, "%s%s %.2f", sep, t.name(), Gib(t.bytes()));
    sep = "; ";
  }
  out += step.host_terms_size() > 0 ? ")\n" : "\n";
  for (const std::string& n : step.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

}  // namespace oomguard
