// Fuzzes the Kubernetes admission webhook without HTTP: the input is the
// body the API server posts (ReviewAdmission: the AdmissionReview, the
// workload reader, the launch in its containers, the one in-process Check).
// Every answer must be HTTP 200 with an AdmissionReview or 400.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "admission/gpu_catalog.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_service.h"
#include "service/oomguard_service.h"
#include "webhook/admission_webhook.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  static const GpuCatalog* catalog = new GpuCatalog(GpuCatalog::Builtin());
  const std::string body(reinterpret_cast<const char*>(data), size);
  const webhook::AdmissionAnswer answer = webhook::ReviewAdmission(
      body, *catalog, absl::InfiniteFuture(),
      [](const v1::CheckRequest& request, const v1::JobHandle&, absl::Time deadline,
         v1::CheckResponse* response) {
        const absl::Status status = fuzz::Service().RunCheck(request, deadline, response);
        fuzz::ExpectAnswerCode(status, "RunCheck");
        if (status.ok()) fuzz::ExpectCheckInvariants(request, *response, "RunCheck");
        // An id, as a server with a store gives: the mutating answer's patch
        // is built from the object too.
        if (status.ok()) response->set_check_id("0123456789abcdef0123456789abcdef");
        return status;
      },
      webhook::AdmissionMode::kMutate);
  fuzz::Expect(answer.http_status == 200 || answer.http_status == 400,
               "ReviewAdmission: HTTP " + std::to_string(answer.http_status));
  fuzz::Expect(!answer.body.empty(), "ReviewAdmission: empty body");
  return 0;
}
