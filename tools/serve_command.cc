// `oomguard serve` (see serve_command.h): flags -> ServerOptions, start,
// wait for a signal, graceful shutdown.
#include "tools/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flag_file.h"
#include "common/status_macros.h"
#include "server/server.h"
#include "service/protobuf_log.h"
#include "service/request_log.h"
#include "tools/serve_flags.h"

namespace oomguard {

using server::Server;
using server::ServerOptions;
using service::FormatEventLine;
using service::RouteProtobufLogging;
using service::WriteLogLine;
namespace {

// At most one of protobuf's own log lines a minute (service/protobuf_log.h).
constexpr absl::Duration kProtobufLogInterval = absl::Minutes(1);

constexpr char kUsage[] =
    "oomguard serve [flags]\n\n"
    "Serves the oomguard gRPC API (oomguard.v1.Oomguard: Estimate, Check, ListPresets,\n"
    "ListGpus, and with --store Report and GetCheck; grpc.health.v1.Health; server\n"
    "reflection), Prometheus metrics, with\n"
    "--webhook_address a Kubernetes validating admission webhook and with --http_address\n"
    "the same API as HTTP/JSON and a web page, until SIGTERM or SIGINT.";

// The bytes of a cache whose size `flag` gives in MiB (>= 0).
absl::StatusOr<size_t> CacheBytes(const absl::Flag<int32_t>& flag) {
  const int32_t mib = absl::GetFlag(flag);
  if (mib < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::GetFlagReflectionHandle(flag).Name(), " = ", mib, ": must be >= 0"));
  }
  return static_cast<size_t>(mib) << 20;
}

absl::StatusOr<ServerOptions> OptionsFromFlags() {
  ServerOptions options;
  options.grpc_address = absl::GetFlag(FLAGS_grpc_address);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.threads == 0) {
    options.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.service.log_requests = absl::GetFlag(FLAGS_log_requests);
  OOMGUARD_ASSIGN_OR_RETURN(options.service.response_cache_bytes,
                            CacheBytes(FLAGS_response_cache_mb));
  OOMGUARD_ASSIGN_OR_RETURN(options.service.check_result_cache_bytes,
                            CacheBytes(FLAGS_check_result_cache_mb));
  OOMGUARD_ASSIGN_OR_RETURN(options.service.plan_cache_bytes, CacheBytes(FLAGS_plan_cache_mb));
  const double margin = absl::GetFlag(FLAGS_default_safety_margin);
  if (!(margin >= 0 && margin < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_safety_margin = ", margin, ": must be in [0, 1)"));
  }
  options.service.default_safety_margin = margin;
  const std::string bound = absl::GetFlag(FLAGS_default_peak_bound);
  if (bound != "upper" && bound != "point") {
    return absl::InvalidArgumentError(
        absl::StrCat("default_peak_bound = \"", bound, "\": must be upper or point"));
  }
  options.service.default_peak_bound =
      bound == "upper" ? v1::PEAK_BOUND_UPPER : v1::PEAK_BOUND_POINT;
  options.service.default_judge_unmodelled = absl::GetFlag(FLAGS_judge_unmodelled);
  options.webhook.address = absl::GetFlag(FLAGS_webhook_address);
  options.webhook.tls_cert_file = absl::GetFlag(FLAGS_webhook_tls_cert);
  options.webhook.tls_key_file = absl::GetFlag(FLAGS_webhook_tls_key);
  options.webhook.insecure_http = absl::GetFlag(FLAGS_webhook_insecure_http_for_testing);
  options.webhook.check_timeout = absl::GetFlag(FLAGS_webhook_check_timeout);
  options.webhook.limits.max_connections = absl::GetFlag(FLAGS_webhook_max_connections);
  options.webhook.limits.max_connections_per_source =
      absl::GetFlag(FLAGS_webhook_max_connections_per_source);
  options.webhook.limits.header_timeout = absl::GetFlag(FLAGS_webhook_header_timeout);
  options.http.address = absl::GetFlag(FLAGS_http_address);
  options.http.limits.max_connections_per_source =
      absl::GetFlag(FLAGS_http_max_connections_per_source);
  options.http.request_timeout = absl::GetFlag(FLAGS_http_request_timeout);
  if (options.webhook.address.empty() &&
      (!options.webhook.tls_cert_file.empty() || !options.webhook.tls_key_file.empty())) {
    return absl::InvalidArgumentError(
        "webhook_tls_cert/webhook_tls_key: set without --webhook_address");
  }

  struct PemFlag {
    const char* name;
    std::string path;
    std::string* pem;
  };
  for (const PemFlag& f :
       {PemFlag{"tls_cert", absl::GetFlag(FLAGS_tls_cert), &options.tls_cert_pem},
        PemFlag{"tls_key", absl::GetFlag(FLAGS_tls_key), &options.tls_key_pem},
        PemFlag{"tls_client_ca", absl::GetFlag(FLAGS_tls_client_ca), &options.tls_client_ca_pem}}) {
    absl::StatusOr<std::string> pem = ReadFlagFile(f.name, f.path);
    if (!pem.ok()) return pem.status();
    *f.pem = *std::move(pem);
  }

  options.store_url = absl::GetFlag(FLAGS_store);
  options.service.cluster = absl::GetFlag(FLAGS_cluster);
  options.service.report_auth.allow_unauthenticated =
      absl::GetFlag(FLAGS_allow_unauthenticated_reports);
  const std::string tokens_path = absl::GetFlag(FLAGS_report_tokens_file);
  if (!tokens_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string tokens,
                              ReadFlagFile("report_tokens_file", tokens_path));
    OOMGUARD_ASSIGN_OR_RETURN(
        options.service.report_auth.tokens,
        service::ParseReportTokens(tokens, absl::StrCat("report_tokens_file = ", tokens_path)));
  }

  const std::string catalog_path = absl::GetFlag(FLAGS_gpu_catalog);
  absl::StatusOr<std::string> catalog_text = ReadFlagFile("gpu_catalog", catalog_path);
  if (!catalog_text.ok()) return catalog_text.status();
  if (!catalog_path.empty()) {
    absl::StatusOr<GpuCatalog> catalog = options.service.catalog.WithOverrides(*catalog_text);
    if (!catalog.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_catalog = ", catalog_path, ": ", catalog.status().message()));
    }
    options.service.catalog = *std::move(catalog);
  }
  return options;
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return absl::StrCat("signal ", signal);
  }
}

}  // namespace

int RunServeCommand(int argc, char** argv) {
  // Block the shutdown signals before any thread exists, so that every
  // thread inherits the mask and only the sigwait below sees them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);

  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = IsServeFlagsFile;
  usage.contains_helpshort_flags = IsServeFlagsFile;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(kUsage);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    WriteLogLine(
        absl::StrCat("oomguard serve: unexpected argument '", positional[1], "' (see --help)\n"));
    return 2;
  }
  absl::StatusOr<ServerOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    WriteLogLine(absl::StrCat("oomguard serve: ", options.status().message(), "\n"));
    return 2;
  }
  // Before any request is parsed: a client sending invalid UTF-8 makes
  // protobuf log a line per request, which must not flood the log.
  RouteProtobufLogging(kProtobufLogInterval);
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(*std::move(options));
  if (!server.ok()) {
    WriteLogLine(absl::StrCat("oomguard serve: ", server.status().message(), "\n"));
    // A bad option (e.g. an unreadable webhook certificate) is a configuration
    // error like a bad flag: 2. An address in use may clear up: 1.
    return server.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  WriteLogLine(FormatEventLine("listening",
                               {{"grpc_port", absl::StrCat((*server)->grpc_port())},
                                {"metrics_port", absl::StrCat((*server)->metrics_port())},
                                {"webhook_port", absl::StrCat((*server)->webhook_port())},
                                {"http_port", absl::StrCat((*server)->http_port())},
                                {"threads", absl::StrCat((*server)->threads())}},
                               absl::Now()));

  int signal = 0;
  sigwait(&shutdown_signals, &signal);
  const absl::Duration grace = absl::GetFlag(FLAGS_shutdown_grace);
  WriteLogLine(FormatEventLine(
      "shutting down", {{"signal", SignalName(signal)}, {"grace", absl::FormatDuration(grace)}},
      absl::Now()));
  (*server)->Shutdown(grace);
  WriteLogLine(FormatEventLine("stopped", {}, absl::Now()));
  return 0;
}

}  // namespace oomguard
