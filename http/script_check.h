// POST /v1/check_script: a job script pasted on the page, read (never run)
// by jobscript/ and turned into the CheckRequest the scheduler hooks would
// send (jobscript/check_request.h). The body is JSON:
//
//   {"script": "#!/bin/bash\n#SBATCH ...\ntorchrun ... pretrain_gpt.py ...",
//    "gpu": "H100", "gpus": 256, "gpusPerNode": 8, "preset": "deepseek-v3"}
//
// where only `script` is required: what the script states (its #OOMGUARD
// directives, and whatever jobscript reads of its scheduler directives)
// wins, and the other fields fill in what it leaves out, as the page's form
// gives them.
#ifndef OOMGUARD_HTTP_SCRIPT_CHECK_H_
#define OOMGUARD_HTTP_SCRIPT_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard::http {

struct ScriptCheck {
  v1::CheckRequest request;
  // What the reader noticed (dropped words, assumptions), for people.
  std::vector<std::string> notes;
};

// The CheckRequest of the script in `body`. InvalidArgument naming the body
// field ("script", "gpus", "gpu", ...) for malformed JSON, a wrong type, an
// unknown field, a script the reader refuses, no Megatron-LM launch in it,
// or no GPU count or GPU type from either the script or the fields.
absl::StatusOr<ScriptCheck> ReadScriptCheck(absl::string_view body);

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_SCRIPT_CHECK_H_
