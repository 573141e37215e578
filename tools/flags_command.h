// `oomguard flags`: what each Megatron-LM flag means to oomguard (modelled,
// with the JobSpec fields it sets; no memory effect, not modelled or
// refused, with the reason; unknown), from jobspec/flag_classification.h, so
// that an operator can see what a job's flags mean before trusting a
// verdict.
#ifndef OOMGUARD_TOOLS_FLAGS_COMMAND_H_
#define OOMGUARD_TOOLS_FLAGS_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// `args` (the program and subcommand names excluded): `--json`, `--class
// CLASS` (modelled, no-memory-effect, not-modelled, refused, unknown), and
// the flags to classify (`--lr --hybrid-layer-pattern`; after `--`, every
// word is a flag); no flag = every flag oomguard classifies. Returns the exit
// code (2 for a bad option); `out` gets the table or the JSON, `err` one
// error message.
int RunFlagsCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_FLAGS_COMMAND_H_
