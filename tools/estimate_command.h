// `oomguard estimate`: estimate a job given on the command line and print
// the per-rank table (or JSON, or the module tree).
#ifndef OOMGUARD_TOOLS_ESTIMATE_COMMAND_H_
#define OOMGUARD_TOOLS_ESTIMATE_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// `args` excludes the program and subcommand names. Returns the exit code;
// writes the result to `out` and errors (one line) to `err`.
int RunEstimateCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_ESTIMATE_COMMAND_H_
