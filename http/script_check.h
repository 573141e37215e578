// POST /v1/check_script: a job script pasted on the page, read (never run)
// by jobscript/ and turned into the CheckRequest the scheduler hooks would
// send. The body is a CheckScriptRequest (admission.proto) in protobuf's
// JSON mapping:
//
//   {"script": "#!/bin/bash\n#SBATCH ...\ntorchrun ... pretrain_gpt.py ...",
//    "gpu": "H100", "gpus": 256, "gpusPerNode": 8, "preset": "deepseek-v3",
//    "policy": {"safetyMargin": 0.1}}
//
// where only `script` is required. The fields are the caller's, and win
// over the script as `oomguard check`'s flags do; what they leave out the
// script states (#OOMGUARD, the launch's world size, #SBATCH): the one rule
// of jobscript/job_sources.h.
#ifndef OOMGUARD_HTTP_SCRIPT_CHECK_H_
#define OOMGUARD_HTTP_SCRIPT_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard::http {

struct ScriptCheck {
  v1::CheckRequest request;
  // What the reader noticed (dropped words, assumptions) and the values the
  // request's fields override, for people.
  std::vector<std::string> notes;
};

// The CheckRequest of `body`. InvalidArgument naming the field ("script",
// "gpus", "gpu") for a missing script, one the reader refuses, no
// Megatron-LM launch in it, or no GPU count or GPU type from either the
// script or the fields. A script the reader cannot read within its bounds or
// before `deadline` keeps the reader's code (jobscript/job_script.h):
// RESOURCE_EXHAUSTED (HTTP 429) or DEADLINE_EXCEEDED (HTTP 504), naming the
// field, the line and the bound.
absl::StatusOr<ScriptCheck> ReadScriptCheck(const v1::CheckScriptRequest& body,
                                            const Deadline& deadline = Deadline());

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_SCRIPT_CHECK_H_
