// The flags of `oomguard serve` (see serve_flags.h).
#include "tools/serve_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/match.h"

ABSL_FLAG(std::string, grpc_address, "127.0.0.1:50051",
          "host:port the gRPC API listens on (port 0: any free port; the chosen port is "
          "logged as msg=listening grpc_port=...). Use 0.0.0.0:PORT to serve other hosts.");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "host:port of the Prometheus /metrics endpoint (port 0: any free port); empty "
          "disables it.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file with the server certificate chain; with --tls_key turns on TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM file with the server private key.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM file with the CA(s) client certificates must chain to; when set, clients must "
          "present a verified certificate (mutual TLS). Needs --tls_cert/--tls_key.");
ABSL_FLAG(int32_t, threads, 0,
          "Worker threads running the RPC handlers; 0 = one per CPU core. Calls beyond them "
          "wait in the queue (their deadlines still apply) rather than being refused.");
ABSL_FLAG(int32_t, max_request_bytes, 1 << 20,
          "Largest request message accepted, in bytes; larger ones get RESOURCE_EXHAUSTED.");
ABSL_FLAG(double, default_safety_margin, 0.0,
          "Fraction of GPU memory Check keeps free when a request sets no "
          "policy.safety_margin, in [0, 1): memory the job cannot use (other processes, a "
          "reserve). The estimate's own error is in the upper bound Check compares, not here.");
ABSL_FLAG(std::string, default_peak_bound, "upper",
          "The peak Check compares with the usable memory when a request sets no "
          "policy.peak_bound: upper (each rank's upper bound at policy.upper_bound_coverage, "
          "default 0.95) or point (the point estimate).");
ABSL_FLAG(bool, judge_unmodelled, false,
          "Judge a job with settings oomguard does not model (a Megatron-LM flag it does not "
          "model or know, a choice value it does not model) as if they were absent, when a "
          "request sets no policy.judge_unmodelled: its verdict then says \"judged without "
          "modelling --FLAG\". false: such a job is not judged (UNIMPLEMENTED with the reason "
          "JOB_NOT_MODELLED, naming each setting; oomguard check exits 5).");
ABSL_FLAG(std::string, gpu_catalog, "",
          "File with GPU catalog entries (oomguard.v1.GpuCatalog, protobuf text format) that "
          "replace built-in entries of the same name or add new ones.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(10),
          "On SIGTERM/SIGINT: how long in-flight calls may take to finish before they are "
          "cancelled and the server exits 0.");
ABSL_FLAG(bool, log_requests, true, "Log one line per request on stderr.");
ABSL_FLAG(int32_t, response_cache_mb, 64,
          "Memory for cached Check responses, in MiB; 0 disables the cache. A Check is a "
          "pure function of its request bytes for the life of the server, so a repeated "
          "request is answered from the cache without estimating again.");
ABSL_FLAG(int32_t, check_result_cache_mb, 16,
          "Memory for Check answers by resolved job, GPU and policy, in MiB; 0 disables it. "
          "It answers a request whose bytes differ from one seen before but whose job is the "
          "same (e.g. a resubmission with another --save or --data-path), with that "
          "request's own notes.");
ABSL_FLAG(int32_t, plan_cache_mb, 16,
          "Memory for the plans behind Check's alternatives (the configurations that fit, or "
          "a clearly faster one), in MiB; 0 disables it. The checks of one model and shape "
          "share a plan whatever their layout, so it is computed once per shape.");
ABSL_FLAG(std::string, webhook_address, "",
          "host:port (or a port: 127.0.0.1) of the Kubernetes validating admission webhook "
          "(HTTPS, POST /validate with an admission.k8s.io/v1 AdmissionReview; GET /healthz), "
          "e.g. 0.0.0.0:8443 to serve the API server; port 0: any free port, logged as "
          "webhook_port=. Empty disables it.");
ABSL_FLAG(std::string, webhook_tls_cert, "",
          "PEM file with the webhook's certificate chain (required with --webhook_address). "
          "Re-read when it changes, so a rotated Secret needs no restart.");
ABSL_FLAG(std::string, webhook_tls_key, "",
          "PEM file with the webhook's private key (required with --webhook_address).");
ABSL_FLAG(bool, webhook_insecure_http_for_testing, false,
          "Serve the webhook over plain HTTP instead of TLS. For local tests only: the API "
          "server only calls webhooks over HTTPS.");
ABSL_FLAG(absl::Duration, webhook_check_timeout, absl::Seconds(2),
          "Longest time one admission check may take; less when the API server's timeout "
          "(its ?timeout= parameter) leaves less. A check that runs out of time allows the "
          "object with a warning.");
ABSL_FLAG(int32_t, webhook_max_connections, 512,
          "Most webhook connections open at once; a new one beyond it closes the one that has "
          "waited longest without its request being handled (idle, or still sending its "
          "headers or body), or is closed when every one is being handled, so held "
          "connections cannot keep the API server out.");
ABSL_FLAG(int32_t, webhook_max_connections_per_source, 128,
          "Most webhook connections open at once from one IP address (>= 1); a new one beyond "
          "it closes that address's connection that has waited longest, as above, so one "
          "client cannot fill --webhook_max_connections.");
ABSL_FLAG(absl::Duration, webhook_header_timeout, absl::Seconds(2),
          "Time from a connection's accept (or a kept-alive request's first byte) by which "
          "the TLS handshake and the request line and headers must have arrived, however "
          "slowly the bytes come.");

ABSL_FLAG(std::string, http_address, "",
          "host:port (or a port: 127.0.0.1) of the HTTP/JSON API and the web page: POST "
          "/v1/estimate and /v1/check, GET /v1/presets and /v1/gpus (the RPCs in protobuf's "
          "JSON mapping), GET / (the page); port 0: any free port, logged as http_port=. Served "
          "with --tls_cert/--tls_key/--tls_client_ca like gRPC, bodies capped by "
          "--max_request_bytes (413). Empty disables it.");
ABSL_FLAG(int32_t, http_max_connections_per_source, 128,
          "Most HTTP/JSON API connections open at once from one IP address (>= 1; 512 in all); "
          "a new one beyond it closes that address's connection that has waited longest "
          "without its request being handled (idle, or still sending its headers or body).");
ABSL_FLAG(absl::Duration, http_request_timeout, absl::Seconds(10),
          "Longest time one HTTP/JSON call may take (less when its Grpc-Timeout header asks "
          "for less); a call past it gets 504.");

ABSL_FLAG(std::string, store, "",
          "Where checks and what came back for them are kept: sqlite:PATH (one server; e.g. "
          "sqlite:/var/lib/oomguard/checks.db) or postgresql://... (replicas serving one "
          "cluster). With it every Check's answer has a check_id, its record is kept, and the "
          "Report and GetCheck RPCs (POST /v1/report, GET /v1/checks/{check_id}) work. Empty: "
          "none.");
ABSL_FLAG(std::string, cluster, "",
          "The cluster's name, kept with every check's record (CheckRecord.cluster): replicas "
          "sharing a store across clusters keep their errors apart.");
ABSL_FLAG(std::string, report_tokens_file, "",
          "File of the bearer tokens that may Report: one `NAME TOKEN` a line (# comments; "
          "tokens of at least 16 characters); a report sent with `authorization: Bearer TOKEN` "
          "is kept as NAME's. A client certificate verified by --tls_client_ca is accepted "
          "too, as its common name.");
ABSL_FLAG(bool, allow_unauthenticated_reports, false,
          "Take reports without credentials (reporter \"unauthenticated\"). Otherwise a report "
          "without a token of --report_tokens_file or a client certificate is refused "
          "UNAUTHENTICATED (HTTP 401).");

namespace oomguard {

bool IsServeFlagsFile(absl::string_view filename) {
  return absl::EndsWith(filename, "serve_flags.cc");
}

}  // namespace oomguard
