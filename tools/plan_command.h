// `oomguard plan`: every parallel and recompute configuration of a model that
// fits a cluster, ranked by expected speed (planner/planner.h), as a table
// or JSON.
#ifndef OOMGUARD_TOOLS_PLAN_COMMAND_H_
#define OOMGUARD_TOOLS_PLAN_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// `args` excludes the program and subcommand names. Returns the exit code:
// 0 with candidates, 4 when nothing fits, 2 for bad input (one line in
// `err`). Writes the plan to `out`.
int RunPlanCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_PLAN_COMMAND_H_
