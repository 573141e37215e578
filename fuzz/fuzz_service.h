// The in-process service the Check fuzz targets call (its transport-free
// handlers, as the webhook and the HTTP/JSON API call them): one per process,
// its Check caches off (the response cache and the answers by job), so that
// every input is resolved and checked rather than answered from memory.
#ifndef OOMGUARD_FUZZ_FUZZ_SERVICE_H_
#define OOMGUARD_FUZZ_FUZZ_SERVICE_H_

#include "service/metrics.h"
#include "service/request_handlers.h"

namespace oomguard::fuzz {

inline service::RequestHandlers& Service() {
  static service::ServiceMetrics* metrics = new service::ServiceMetrics("fuzz");
  static service::RequestHandlers* service = new service::RequestHandlers(
      service::ServiceConfig{
          .log_requests = false, .response_cache_bytes = 0, .check_result_cache_bytes = 0},
      metrics);
  return *service;
}

}  // namespace oomguard::fuzz

#endif  // OOMGUARD_FUZZ_FUZZ_SERVICE_H_
