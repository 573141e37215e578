// Placement of decoder layers, embedding, loss and MTP layers on virtual
// pipeline stages, as Megatron-Core places them: even splits, uneven first /
// last stages, embedding/loss accounted as layer slots, or an explicit
// `--pipeline-model-parallel-layout` string.
#ifndef OOMGUARD_ESTIMATOR_PIPELINE_LAYOUT_H_
#define OOMGUARD_ESTIMATOR_PIPELINE_LAYOUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "estimator/validated_job.h"

namespace oomguard {

struct PlacementInput {
  int64_t num_layers = 0;
  int64_t mtp_layers = 0;
  int64_t pp = 1;
  int64_t vpp = 1;                  // Ignored when layout is set (the layout defines it).
  int64_t first_stage_layers = -1;  // -1 = unset.
  int64_t last_stage_layers = -1;
  bool account_for_embedding = false;
  bool account_for_loss = false;
  absl::string_view layout;
};

// Returns pp * vpp stages; stage index = pp_rank + chunk * pp.
// InvalidArgument names the parallelism field that makes the split
// impossible.
absl::StatusOr<std::vector<StageContents>> PlaceLayers(const PlacementInput& in);

// The longest layout string ExpandLayout takes.
inline constexpr size_t kMaxLayoutChars = 4096;

// Expands a layout string ("Et|(tt|)*30mL") into its virtual stages, each a
// string of the symbols E, t, m, L, with Megatron-Core's grammar: commas are
// cosmetic, "(...)*n" then "x*n" are unrolled, groups do not nest, nothing
// else (no spaces) may appear. InvalidArgument on what Megatron-Core would
// refuse. PlaceLayers then applies its rules: 'E' first and 'L' last, each
// once; the decoder and MTP layer counts; the MTP layers after the decoder
// layers, together, in the last virtual stage of a pipeline rank.
absl::StatusOr<std::vector<std::string>> ExpandLayout(absl::string_view layout);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_PIPELINE_LAYOUT_H_
