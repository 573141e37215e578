// Who may send a Report, and under which name it is stored
// (StoredReport.reporter): a bearer token of the server's
// --report_tokens_file (`authorization: Bearer TOKEN`, gRPC metadata or HTTP
// header; the file names each token), or a client certificate the server's
// mutual TLS verified (its subject's common name). Neither: UNAUTHENTICATED,
// unless the server was started with --allow_unauthenticated_reports.
// GetCheck needs no credentials (the check id is the capability).
#ifndef OOMGUARD_SERVICE_REPORT_AUTH_H_
#define OOMGUARD_SERVICE_REPORT_AUTH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::service {

// What a call carried to say who sent it.
struct CallerCredentials {
  // The `authorization` metadata or header as received; empty when none.
  std::string authorization = {};
  // The subject common name of the client certificate the transport's
  // mutual TLS verified; empty without one.
  std::string client_identity = {};
};

struct ReportToken {
  std::string name;   // StoredReport.reporter of the reports it sends.
  std::string token;  // At least kMinReportTokenLength characters.
};

inline constexpr size_t kMinReportTokenLength = 16;

// The tokens of a --report_tokens_file's `contents`: one `NAME TOKEN` per
// line (blank lines and lines starting with '#' skipped), names and tokens
// unique. InvalidArgument naming `file` and the line.
absl::StatusOr<std::vector<ReportToken>> ParseReportTokens(absl::string_view contents,
                                                           absl::string_view file);

struct ReportAuthOptions {
  std::vector<ReportToken> tokens = {};
  // Reports without credentials are taken, as reporter "unauthenticated".
  bool allow_unauthenticated = false;
};

// The reporter name of a call with `credentials`: the token's name, else the
// client certificate's identity, else "unauthenticated" where allowed.
// Unauthenticated naming what is missing or wrong (a token presented that
// is not one of the file's is refused whatever else the call carries).
absl::StatusOr<std::string> AuthenticateReporter(const ReportAuthOptions& options,
                                                 const CallerCredentials& credentials);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_REPORT_AUTH_H_
