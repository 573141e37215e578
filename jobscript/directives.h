// The `#OOMGUARD` directives of a job script: lines starting with
// `#OOMGUARD` (leading blanks allowed), then blank-separated `key=value`
// items that set what the script itself cannot say (preset, GPU type and
// count, GPUs per node, safety margin) or ask not to be judged (skip). See
// job_script.h for the keys. Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_DIRECTIVES_H_
#define OOMGUARD_JOBSCRIPT_DIRECTIVES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobscript/job_script.h"

namespace oomguard::job_script_internal {

// Reads every `#OOMGUARD` line of `script` into `job` (preset, gpu,
// num_gpus, gpus_per_node, safety_margin, skip), in order: a later
// directive overrides an earlier one. InvalidArgument for a malformed or
// unknown item, naming the line and the item.
absl::Status ReadDirectives(absl::string_view script, ScriptJob* job);

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_DIRECTIVES_H_
