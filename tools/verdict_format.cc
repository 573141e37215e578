// The verdict lines and JSON of `oomguard check` (see verdict_format.h).
#include "tools/verdict_format.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "admission/peak_wording.h"
#include "google/protobuf/util/json_util.h"

namespace oomguard {
namespace {

// The settings of FITS_WITH_SETTINGS as lines to paste: `export A=B C=D`
// when the setting is only assignments.
std::string SettingLine(const std::string& setting) {
  const std::vector<std::string> items = absl::StrSplit(setting, ' ', absl::SkipEmpty());
  const bool assignments =
      !items.empty() && std::all_of(items.begin(), items.end(), [](const std::string& s) {
        const size_t eq = s.find('=');
        return eq != std::string::npos && eq > 0 && s.find(',') == std::string::npos;
      });
  return assignments ? absl::StrCat("oomguard: add to the job script: export ", setting, "\n")
                     : absl::StrCat("oomguard: change the job: ", setting, "\n");
}

}  // namespace

std::string FormatVerdict(const v1::CheckResponse& r) {
  std::string out = absl::StrCat("oomguard: ", r.summary(), "\n");
  // An RL step: each phase's worst rank, its peak as the verdict compares it.
  for (const v1::RlPhaseReport& phase : r.rl_step().phases()) {
    const uint64_t peak = r.peak_bound() == v1::PEAK_BOUND_POINT ? phase.peak_device_bytes()
                                                                 : phase.peak_device_upper_bytes();
    absl::StrAppend(
        &out, "oomguard: phase ", phase.phase(), ": ", LabelledPeak(peak, r), " on PP rank ",
        phase.worst_rank(), phase.phase() == r.rl_step().binding_phase() ? " (binding)" : "",
        phase.failure().empty() ? "" : absl::StrCat("; cannot run: ", phase.failure()), "\n");
  }
  switch (r.verdict()) {
    case v1::VERDICT_FITS:
      break;
    case v1::VERDICT_FITS_WITH_SETTINGS:
      for (const v1::Recommendation& rec : r.recommendations()) {
        if (rec.kind() == v1::Recommendation::KIND_ENVIRONMENT) out += SettingLine(rec.setting());
      }
      break;
    default: {
      int step = 0;
      for (const v1::Recommendation& rec : r.recommendations()) {
        if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) continue;
        absl::StrAppend(&out, "oomguard: step ", ++step, ": ", rec.setting(), " -> worst rank ",
                        StepOutcome(rec, r), "\n");
      }
    }
  }
  for (const v1::Alternative& a : r.alternatives()) {
    if (a.speedup() > 0) {
      absl::StrAppendFormat(&out,
                            "oomguard: faster on the same GPUs: %s; +%.0f%% tokens/GPU/s "
                            "predicted, worst rank %s: %s\n",
                            a.description(), 100 * (a.speedup() - 1),
                            LabelledPeak(a.compared_peak_bytes(), r), a.megatron_args());
    } else {
      absl::StrAppendFormat(&out,
                            "oomguard: fits on the same GPUs: %s; worst rank %s, %.0f "
                            "tokens/GPU/s predicted: %s\n",
                            a.description(), LabelledPeak(a.compared_peak_bytes(), r),
                            a.tokens_per_gpu_per_second(), a.megatron_args());
    }
  }
  for (const v1::Recommendation& rec : r.recommendations()) {
    if (rec.kind() != v1::Recommendation::KIND_INCOMPATIBILITY) continue;
    absl::StrAppend(&out, "oomguard: will not start as given: ", rec.reason(),
                    " (fix: ", rec.setting(), ")\n");
  }
  // What the estimate assumed or did not model, under the verdict it
  // qualifies (not only in --json).
  for (const std::string& note : r.report().notes()) {
    absl::StrAppend(&out, "oomguard: note: ", note, "\n");
  }
  return out;
}

absl::StatusOr<std::string> FormatCheckResponseJson(const v1::CheckResponse& response) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(response, &json, options).ok()) {
    return absl::InternalError("cannot print the response as JSON");
  }
  return json + "\n";
}

}  // namespace oomguard
