// Renders an EstimateReport for people (a per-rank table, the module tree)
// and for programs (JSON with integer byte counts).
#ifndef OOMGUARD_TOOLS_REPORT_FORMAT_H_
#define OOMGUARD_TOOLS_REPORT_FORMAT_H_

#include <cstdint>
#include <string>

#include "oomguard/v1/report.pb.h"

namespace oomguard {

// `capacity_bytes` = 0 leaves out the comparison with the GPU.
std::string FormatTable(const v1::EstimateReport& report, uint64_t capacity_bytes);
std::string FormatTree(const v1::EstimateReport& report);
std::string FormatJson(const v1::EstimateReport& report, uint64_t capacity_bytes);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_REPORT_FORMAT_H_
