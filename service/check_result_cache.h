// A bounded LRU cache of Check answers keyed by what an answer is a function
// of: the resolved job (JobSpec), the GPU and the admission options. The
// response cache (response_cache.h) answers a request seen before byte for
// byte; this one answers a request whose bytes differ but whose job resolves
// to one seen before: the resubmissions of a job whose Megatron-LM arguments
// differ only in what the estimate ignores (--save, --data-path,
// --wandb-exp-name, ...), another request encoding (JSON, a job script), the
// webhook's pods of one workload. The stored answer holds no notes of the
// request's resolution (the parsers' assumptions, which the caller adds);
// those of the estimate, one per JobSpec.unmodelled_settings among them,
// (an RL job's: RlJobSpec, keyed apart from every JobSpec)
// are the job's, and the key holds the job and whether the policy judges
// such a job (AdmissionOptions.judge_unmodelled). Only
// successful answers are stored (an admission check never answers partly:
// its deadline ends it with an error). Thread-safe.
#ifndef OOMGUARD_SERVICE_CHECK_RESULT_CACHE_H_
#define OOMGUARD_SERVICE_CHECK_RESULT_CACHE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "admission/admission.h"
#include "common/lru_cache.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard::service {

// The key of the answer for `job` on `gpu` under `options`: the job's and
// the GPU's deterministic serializations, each after its length, then every
// AdmissionOptions field that changes the answer (all but the deadline).
std::string CheckResultKey(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options);
// The same for an RL job: its RlJobSpec's serialization after "rl|", so
// that no RL key equals a JobSpec's.
std::string CheckResultKey(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options);

using CheckResult = std::shared_ptr<const v1::CheckResponse>;  // Shared by every hit.

struct CheckResultBytes {
  size_t operator()(const CheckResult& result) const { return result->SpaceUsedLong(); }
};

class CheckResultCache : public LruCache<CheckResult, CheckResultBytes> {
 public:
  using LruCache::LruCache;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_CHECK_RESULT_CACHE_H_
