// Fuzzes a Check call from its wire bytes: the input is the request body as
// the service receives it (ParseRequest), then the whole in-process Check
// (RequestHandlers::RunCheck: ResolveJobSource, ResolveGpu, the estimate,
// the verdict and every recommendation's re-estimate). The same bytes are
// also parsed as an EstimateRequest and its job resolved, as Estimate does.
// A request with omit_report is checked again with the report: the answer
// must be the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_service.h"
#include "oomguard/v1/service.pb.h"
#include "service/oomguard_service.h"
#include "service/request_resolution.h"
#include "service/wire_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  v1::CheckRequest request;
  const absl::Status parsed = service::ParseRequest(bytes, request);
  fuzz::ExpectAnswerCode(parsed, "ParseRequest(CheckRequest)");
  if (parsed.ok()) {
    v1::CheckResponse response;
    const absl::Status checked =
        fuzz::Service().RunCheck(request, absl::InfiniteFuture(), &response);
    fuzz::ExpectAnswerCode(checked, "RunCheck");
    if (checked.ok()) fuzz::ExpectCheckInvariants(request, response, "RunCheck");
    if (checked.ok() && request.omit_report()) {
      // Without the report, the same answer as with it (its notes kept).
      request.set_omit_report(false);
      v1::CheckResponse full;
      fuzz::Expect(fuzz::Service().RunCheck(request, absl::InfiniteFuture(), &full).ok(),
                   "RunCheck: refused with the report what it answered without");
      full.mutable_report()->clear_ranks();
      v1::EstimateReport notes;
      *notes.mutable_notes() = full.report().notes();
      *full.mutable_report() = std::move(notes);
      fuzz::Expect(full.SerializeAsString() == response.SerializeAsString(),
                   "RunCheck: omit_report changed the answer");
    }
  }
  v1::EstimateRequest estimate;
  if (service::ParseRequest(bytes, estimate).ok()) {
    fuzz::ExpectAnswerCode(service::ResolveJobSource(estimate.job(), "job").status(),
                           "ResolveJobSource");
  }
  return 0;
}
