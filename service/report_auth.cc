// Report authentication (see report_auth.h).
#include "service/report_auth.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace oomguard::service {
namespace {

// Equal, in a time that depends only on the lengths (a token is a secret).
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

bool Printable(absl::string_view word) {
  for (const char c : word) {
    if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<ReportToken>> ParseReportTokens(absl::string_view contents,
                                                           absl::string_view file) {
  std::vector<ReportToken> tokens;
  absl::flat_hash_set<std::string> names, secrets;
  int number = 0;
  for (const absl::string_view raw : absl::StrSplit(contents, '\n')) {
    ++number;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r\v\f"), absl::SkipEmpty());
    const std::string where = absl::StrCat(file, " line ", number);
    if (words.size() != 2 || !Printable(words[0]) || !Printable(words[1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected `NAME TOKEN` (two printable words)"));
    }
    if (words[1].size() < kMinReportTokenLength) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the token of ", words[0], " has ",
                                                     words[1].size(), " characters; need at least ",
                                                     kMinReportTokenLength));
    }
    if (!names.insert(std::string(words[0])).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the name ", words[0], " again"));
    }
    if (!secrets.insert(std::string(words[1])).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the token of ", words[0], " is another name's too"));
    }
    tokens.push_back({std::string(words[0]), std::string(words[1])});
  }
  return tokens;
}

absl::StatusOr<std::string> AuthenticateReporter(const ReportAuthOptions& options,
                                                 const CallerCredentials& credentials) {
  if (!credentials.authorization.empty()) {
    absl::string_view token = absl::StripAsciiWhitespace(credentials.authorization);
    if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
      return absl::UnauthenticatedError(
          "authorization: expected `Bearer TOKEN` (a token of the server's --report_tokens_file)");
    }
    token = absl::StripLeadingAsciiWhitespace(token);
    // Every token is compared, so that the time does not say which matched.
    const ReportToken* found = nullptr;
    for (const ReportToken& known : options.tokens) {
      if (SameSecret(known.token, token)) found = &known;
    }
    if (found == nullptr) {
      return absl::UnauthenticatedError(
          "authorization: the bearer token is not one of the server's --report_tokens_file");
    }
    return found->name;
  }
  if (!credentials.client_identity.empty()) return credentials.client_identity;
  if (options.allow_unauthenticated) return std::string("unauthenticated");
  return absl::UnauthenticatedError(
      "Report needs credentials: `authorization: Bearer TOKEN` with a token of the server's "
      "--report_tokens_file, or a client certificate (mutual TLS, --tls_client_ca); a server "
      "started with --allow_unauthenticated_reports takes reports without");
}

}  // namespace oomguard::service
