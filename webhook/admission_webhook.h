// The Kubernetes admission webhook without the HTTP: an admission.k8s.io/v1
// AdmissionReview (JSON, as the API server posts it) in, the AdmissionReview
// answer out. webhook_server.h serves it over HTTPS, validating (POST
// /validate) or mutating (POST /mutate): both judge alike; a mutating answer
// that admits a judged job whose check has an id (a server with a store)
// also carries the JSONPatch of check_id_patch.h (patchType "JSONPatch").
//
// A CREATE of a Pod, batch/v1 Job, Kubeflow PyTorchJob or JobSet that
// launches Megatron-LM (webhook_workload.h) becomes a CheckRequest, run by
// the same in-process Check as the gRPC API. The answer:
// - VERDICT_DOES_NOT_FIT: `allowed: false`, `status.code` 403 and the
//   verdict's summary (worst rank, its peak, the capacity, what to try) in
//   `status.message`; the recommended changes as `warnings`.
// - VERDICT_FITS_WITH_SETTINGS: allowed, with a warning naming the settings.
// - VERDICT_FITS: allowed (warnings only for settings Megatron-LM refuses).
// - Everything that cannot be judged is allowed, with a warning saying why
//   when a Megatron-LM launch was found: no GPU type, an unknown GPU, no
//   GPUs, a malformed field, a job the Check calls invalid (INVALID_ARGUMENT,
//   e.g. an impossible layout) or cannot handle (e.g. Megatron-FSDP version
//   2), a check that ran out of time. oomguard denies only on a verdict: a
//   wrong denial blocks a valid job, while a really broken job fails within
//   seconds of starting anyway.
// - A launch with words only known at run time that may change memory
//   (`--micro-batch-size $MBS` with MBS set nowhere oomguard can see) is
//   judged without them, and a DOES_NOT_FIT is not enforced: allowed, with
//   a warning giving the verdict and the words.
// - Not a launch (or another operation, kind, or oomguard.io/skip): allowed
//   silently.
// Every answer echoes `request.uid` and carries `auditAnnotations` (verdict,
// peak, GPU and the check id when there is one; or why it was not judged).
// The check is given the job's handle (its namespace, name and kind, how
// oomguard finds the pods' measurements later) unless the request is a dry
// run (no pods will run) or the object has no name yet (`generateName`: the
// API server names it after the mutating webhooks). A body that is not an
// admission.k8s.io/v1 AdmissionReview with a `request.uid` gets HTTP 400.
// Any input is safe: size bounded by the server, nesting deeper than
// kMaxJsonDepth refused, wrong types reported by path.
#ifndef OOMGUARD_WEBHOOK_ADMISSION_WEBHOOK_H_
#define OOMGUARD_WEBHOOK_ADMISSION_WEBHOOK_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "admission/gpu_catalog.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/feedback.pb.h"
#include "webhook/webhook_workload.h"

namespace oomguard::webhook {

// Deepest JSON nesting accepted (real objects stay below 30).
inline constexpr int kMaxJsonDepth = 64;
// Longest warning sent; the API server may truncate longer ones.
inline constexpr size_t kMaxWarningBytes = 256;

// One Check, in-process (RequestHandlers::RunCheck in the server), kept
// with `handle` when the server keeps checks.
using CheckFunction =
    absl::FunctionRef<absl::Status(const v1::CheckRequest& request, const v1::JobHandle& handle,
                                   absl::Time deadline, v1::CheckResponse* response)>;

// Validating answers allow or deny; mutating ones also patch (see above).
enum class AdmissionMode { kValidate, kMutate };

// What happened, for metrics and the log.
struct AdmissionOutcome {
  // OK when answered (judged or not); else why the object could not be
  // judged (or, with HTTP 400, why the review was refused).
  absl::StatusCode code = absl::StatusCode::kOk;
  bool judged = false;  // A verdict was reached.
  bool allowed = true;
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  uint64_t peak_bytes = 0;
  std::string uid;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string operation;
  bool dry_run = false;
  // Why it was not judged or could not be; empty when judged.
  std::string reason;
  // The check's id (empty without a store), and whether the answer patched
  // the object with it.
  std::string check_id;
  bool patched = false;
};

struct AdmissionAnswer {
  // 200 with an AdmissionReview; 400 with a one-line text error.
  int http_status = 200;
  std::string body;
  AdmissionOutcome outcome;
};

// Answers one AdmissionReview `body`. `catalog` resolves GPU names (the
// server's, so that --gpu_catalog entries count); `check` runs with
// `deadline`.
AdmissionAnswer ReviewAdmission(absl::string_view body, const GpuCatalog& catalog,
                                absl::Time deadline, CheckFunction check,
                                AdmissionMode mode = AdmissionMode::kValidate);

// The CheckRequest of a judged workload. InvalidArgument for an unknown GPU
// (naming where the name came from and the known ones).
absl::StatusOr<v1::CheckRequest> CheckRequestFor(const WorkloadJob& job, const GpuCatalog& catalog);

// The catalog name of a GPU given as a catalog name/alias or as GPU feature
// discovery labels it (nvidia.com/gpu.product, e.g. "NVIDIA-H100-80GB-HBM3",
// "NVIDIA-A100-SXM4-80GB"); NotFound otherwise.
absl::StatusOr<std::string> ResolveGpuName(absl::string_view name, const GpuCatalog& catalog);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_ADMISSION_WEBHOOK_H_
