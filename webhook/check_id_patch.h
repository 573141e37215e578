// What a mutating admission answer changes in an admitted job (POST /mutate,
// admission_webhook.h): the JSONPatch (RFC 6902) that carries the check's id
// to the job, so that what the job really used can be reported against the
// check (feedback.proto's ReportRequest.check_id):
// - the annotation oomguard.io/check-id on the object and on each pod
//   template (every pod carries it);
// - the environment variable OOMGUARD_CHECK_ID on each training container
//   (WorkloadJob::training_containers: the ones whose GPUs are the job's
//   ranks), replacing one that is there;
// - terminationMessagePolicy: FallbackToLogsOnError on those containers where
//   it is unset or "File", so that a CUDA OOM's last log lines reach the pod's
//   status (`state.terminated.message`, the log's last 2048 bytes / 80 lines)
//   without log access. "File" is the API server's default, written into
//   every Pod and pod template before admission (Kubernetes'
//   SetDefaults_Container), so a webhook cannot tell it from unset; the
//   fallback keeps File's behaviour whenever the program wrote the file, and
//   reads the log only when it did not and the container failed.
// Pure: the object in, the operations out; every path it adds to exists or
// has a parent that does (an "add" to a missing parent would fail the whole
// request at the API server).
#ifndef OOMGUARD_WEBHOOK_CHECK_ID_PATCH_H_
#define OOMGUARD_WEBHOOK_CHECK_ID_PATCH_H_

#include <nlohmann/json_fwd.hpp>

#include "absl/strings/string_view.h"
#include "webhook/webhook_workload.h"

namespace oomguard::webhook {

inline constexpr char kCheckIdAnnotation[] = "oomguard.io/check-id";
inline constexpr char kCheckIdEnv[] = "OOMGUARD_CHECK_ID";
inline constexpr char kTerminationMessagePolicy[] = "terminationMessagePolicy";
inline constexpr char kFallbackToLogsOnError[] = "FallbackToLogsOnError";

// The operations (a JSON array) for `job`, read from `object` (the
// AdmissionRequest's object) by ReadWorkload, checked with id `check_id`.
nlohmann::json CheckIdPatch(const nlohmann::json& object, const WorkloadJob& job,
                            absl::string_view check_id);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_CHECK_ID_PATCH_H_
