// Renders an EstimateReport for people (a per-rank table, the module tree)
// and for programs (JSON with integer byte counts); and an RL step's report
// (RlStepReport) the same two ways.
#ifndef OOMGUARD_TOOLS_REPORT_FORMAT_H_
#define OOMGUARD_TOOLS_REPORT_FORMAT_H_

#include <cstdint>
#include <string>

#include "oomguard/v1/report.pb.h"
#include "oomguard/v1/rl_report.pb.h"

namespace oomguard {

// `capacity_bytes` = 0 leaves out the comparison with the GPU.
std::string FormatTable(const v1::EstimateReport& report, uint64_t capacity_bytes);
std::string FormatTree(const v1::EstimateReport& report);
std::string FormatJson(const v1::EstimateReport& report, uint64_t capacity_bytes);

// The RL step: a table of phases x PP ranks (each cell "peak/upper" in GiB),
// the binding phase against the GPU, each phase's worst rank's terms
// itemised with the keys that move them, a phase that cannot run, the
// engine's KV pool, the host memory per node, the notes.
std::string FormatRlTable(const v1::RlStepReport& step);

// The RL step as JSON: `binding_phase`, its `worst_rank` and peaks, then
// `phases` (each with `phase`, its worst rank's `peak_device_bytes` and
// `peak_device_upper_bytes`, `worst_rank`, `largest_term`, `key`, `failure`
// when it has one, and `ranks` with their `terms`), the GPU, the engine's
// KV pool, the host bytes per node with their terms, `actor_update` (the
// actor update's report as FormatJson writes it, against the GPU) and the
// notes. Byte counts are integers.
std::string FormatRlJson(const v1::RlStepReport& step);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_REPORT_FORMAT_H_
