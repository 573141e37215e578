// The flags of `oomguard serve` (Abseil flags), declared for serve_command.
// They live in their own file so that `--help` can list exactly them.
#ifndef OOMGUARD_TOOLS_SERVE_FLAGS_H_
#define OOMGUARD_TOOLS_SERVE_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

ABSL_DECLARE_FLAG(std::string, grpc_address);
ABSL_DECLARE_FLAG(std::string, metrics_address);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_client_ca);
ABSL_DECLARE_FLAG(int32_t, threads);
ABSL_DECLARE_FLAG(int32_t, max_request_bytes);
ABSL_DECLARE_FLAG(double, default_safety_margin);
ABSL_DECLARE_FLAG(std::string, default_peak_bound);
ABSL_DECLARE_FLAG(bool, judge_unmodelled);
ABSL_DECLARE_FLAG(std::string, gpu_catalog);
ABSL_DECLARE_FLAG(absl::Duration, shutdown_grace);
ABSL_DECLARE_FLAG(bool, log_requests);
ABSL_DECLARE_FLAG(int32_t, response_cache_mb);
ABSL_DECLARE_FLAG(int32_t, check_result_cache_mb);
ABSL_DECLARE_FLAG(int32_t, plan_cache_mb);
ABSL_DECLARE_FLAG(std::string, webhook_address);
ABSL_DECLARE_FLAG(std::string, webhook_tls_cert);
ABSL_DECLARE_FLAG(std::string, webhook_tls_key);
ABSL_DECLARE_FLAG(bool, webhook_insecure_http_for_testing);
ABSL_DECLARE_FLAG(absl::Duration, webhook_check_timeout);
ABSL_DECLARE_FLAG(int32_t, webhook_max_connections);
ABSL_DECLARE_FLAG(int32_t, webhook_max_connections_per_source);
ABSL_DECLARE_FLAG(absl::Duration, webhook_header_timeout);
ABSL_DECLARE_FLAG(std::string, http_address);
ABSL_DECLARE_FLAG(int32_t, http_max_connections_per_source);
ABSL_DECLARE_FLAG(absl::Duration, http_request_timeout);
ABSL_DECLARE_FLAG(std::string, store);
ABSL_DECLARE_FLAG(std::string, cluster);
ABSL_DECLARE_FLAG(std::string, report_tokens_file);
ABSL_DECLARE_FLAG(bool, allow_unauthenticated_reports);

namespace oomguard {

// True for the file that defines the flags above (for --help filtering).
bool IsServeFlagsFile(absl::string_view filename);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_SERVE_FLAGS_H_
