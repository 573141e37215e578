#include "estimator/interleaved_schedule_rules.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oomguard {
namespace {

// "groups of 8 (--microbatch-group-size-per-virtual-pipeline-stage, default
// PP)".
std::string Groups(int64_t g, bool given) {
  return absl::StrCat("groups of ", g, " (--microbatch-group-size-per-virtual-pipeline-stage",
                      given ? "" : ", default PP", ")");
}

// "20 micro-batches per iteration (--global-batch-size 20 / (--micro-batch-size
// 1 x data-parallel size 1))".
std::string MicroBatches(const Parallelism& par, const TrainingSettings& t) {
  return absl::StrCat(t.num_microbatches, " micro-batches per iteration (--global-batch-size ",
                      t.global_batch, " / (--micro-batch-size ", t.micro_batch,
                      " x data-parallel size ", par.dp, "))");
}

// The refusal: what Megatron-Core refuses first (`oomguard check` shows the
// first 120 bytes of a server's message), then the flags and values that
// make it, then the `remedy` if any.
absl::Status Refused(absl::string_view field, int64_t value, absl::string_view what,
                     absl::string_view details, const Parallelism& par,
                     absl::string_view remedy = "") {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", value, ": Megatron-Core's interleaved schedule refuses ", what,
                   ": ", details, " (it raises at the first step, with ", par.vpp,
                   " virtual stages per pipeline rank)", remedy.empty() ? "" : "; ", remedy));
}

}  // namespace

absl::Status CheckMicroBatchGroups(const Parallelism& par, const TrainingSettings& t,
                                   bool group_size_given) {
  if (par.vpp <= 1) return absl::OkStatus();
  const int64_t g = par.group_size, n = t.num_microbatches;
  if (g < par.pp) {
    return Refused("parallelism.microbatch_group_size_per_vp_stage", g,
                   absl::StrCat("micro-batch groups below PP ", par.pp),
                   absl::StrCat("--microbatch-group-size-per-virtual-pipeline-stage ", g,
                                " < --pipeline-model-parallel-size ", par.pp),
                   par);
  }
  if (n < g) {
    return Refused("training.global_batch_size", t.global_batch,
                   absl::StrCat("fewer micro-batches (", n, ") than a group (", g, ")"),
                   absl::StrCat(MicroBatches(par, t), ", fewer than ", Groups(g, group_size_given)),
                   par);
  }
  if (const int64_t last = n % g; last > 0 && last < par.pp) {
    return Refused(
        "training.global_batch_size", t.global_batch,
        absl::StrCat("a last micro-batch group of ", last, " < PP ", par.pp),
        absl::StrCat(MicroBatches(par, t), " in ", Groups(g, group_size_given), " leave ", last,
                     " over, fewer than --pipeline-model-parallel-size ", par.pp),
        par,
        absl::StrCat("make the micro-batches a multiple of ", g, " or leave at least ", par.pp,
                     " over"));
  }
  return absl::OkStatus();
}

}  // namespace oomguard
