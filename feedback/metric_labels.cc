// The label values of a report's enums (see metric_labels.h).
#include "feedback/metric_labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace oomguard::feedback {
namespace {

std::string EnumLabel(const std::string& name, absl::string_view prefix) {
  return absl::AsciiStrToLower(absl::StripPrefix(name, prefix));
}

}  // namespace

std::string SourceLabel(v1::MeasurementSource source) {
  return EnumLabel(v1::MeasurementSource_Name(source), "MEASUREMENT_SOURCE_");
}

std::string OutcomeLabel(v1::JobOutcome outcome) {
  return EnumLabel(v1::JobOutcome_Name(outcome), "JOB_OUTCOME_");
}

}  // namespace oomguard::feedback
