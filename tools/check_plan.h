// What `oomguard check` asks the service: its command line (the caller), the
// scheduler's job descriptor (the --job-file header, with its default_gpu)
// and the job script, chosen between by the one precedence rule of
// jobscript/job_sources.h (command line > scheduler > #OOMGUARD > the
// launch's world size > #SBATCH). A value that overrides a different one is
// noted, never silently dropped. Or why the job is not judged at all.
#ifndef OOMGUARD_TOOLS_CHECK_PLAN_H_
#define OOMGUARD_TOOLS_CHECK_PLAN_H_

#include <string>
#include <vector>

#include "jobscript/job_script.h"
#include "oomguard/v1/admission.pb.h"
#include "tools/check_flags.h"
#include "tools/job_envelope.h"

namespace oomguard {

// What to send, or why nothing is judged.
struct CheckPlan {
  v1::CheckRequest request;
  // The request's gpu_name is what the scheduler allocates (the header's
  // gpu or default_gpu), not what the user named.
  bool gpu_from_scheduler = false;
  // "#OOMGUARD gpus=16 ignored: ..." and the script reader's notes.
  std::vector<std::string> notes;
  std::string not_judged;  // Non-empty: exit 5 with this reason.
  // Launch words only known at run time (ScriptJob::unresolved).
  std::vector<std::string> unresolved;
};

// `envelope` is null without --job-file.
CheckPlan MakeCheckPlan(const CheckFlags& flags, const JobEnvelope* envelope, const ScriptJob& job);

// The request of --rl-config, whose text is `config_yaml`: JobSource.rl
// with the command line's --preset, --gpus (0: the config's), --env and
// --gpus-per-node; the GPU of --gpu or --gpu-memory-gib, else
// H100-SXM-80GB (noted); the policy as for any check.
CheckPlan MakeRlCheckPlan(const CheckFlags& flags, std::string config_yaml);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CHECK_PLAN_H_
