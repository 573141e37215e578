// Who may Report (service/report_auth.h): the tokens file's format and the
// reporter name each kind of credentials gives.
#include "service/report_auth.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::service {
namespace {

using ::testing::HasSubstr;

constexpr char kTokens[] =
    "# Reporters of the cluster\n"
    "slurm-jobcomp 0123456789abcdef0123\n"
    "\n"
    "  pipeline   fedcba9876543210fedc  \n";

TEST(ParseReportTokensTest, ReadsNamesAndTokensSkippingCommentsAndBlankLines) {
  const absl::StatusOr<std::vector<ReportToken>> tokens = ParseReportTokens(kTokens, "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].name, "slurm-jobcomp");
  EXPECT_EQ((*tokens)[0].token, "0123456789abcdef0123");
  EXPECT_EQ((*tokens)[1].name, "pipeline");
  EXPECT_EQ((*tokens)[1].token, "fedcba9876543210fedc");
}

TEST(ParseReportTokensTest, NamesTheFileAndLineOfABadLine) {
  struct Case {
    std::string contents;
    std::string message;
  };
  for (const Case& c : {
           Case{"a 0123456789abcdef\nonlyname\n", "tokens line 2: expected `NAME TOKEN`"},
           Case{"a 0123456789abcdef extra\n", "tokens line 1: expected `NAME TOKEN`"},
           Case{"a short\n", "tokens line 1: the token of a has 5 characters; need at least 16"},
           Case{"a 0123456789abcdef\na fedcba9876543210\n", "tokens line 2: the name a again"},
           Case{"a 0123456789abcdef\nb 0123456789abcdef\n",
                "tokens line 2: the token of b is another name's too"},
       }) {
    const absl::StatusOr<std::vector<ReportToken>> tokens = ParseReportTokens(c.contents, "tokens");
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument) << c.contents;
    EXPECT_THAT(tokens.status().message(), HasSubstr(c.message)) << c.contents;
  }
}

TEST(AuthenticateReporterTest, ATokenOfTheFileIsItsName) {
  ReportAuthOptions options;
  options.tokens = *ParseReportTokens(kTokens, "tokens");
  EXPECT_EQ(*AuthenticateReporter(options, {.authorization = "Bearer fedcba9876543210fedc"}),
            "pipeline");
  // A token wins over a client certificate: the token names the sender.
  EXPECT_EQ(*AuthenticateReporter(options, {.authorization = "Bearer 0123456789abcdef0123",
                                            .client_identity = "host-7"}),
            "slurm-jobcomp");
}

TEST(AuthenticateReporterTest, AnUnknownOrMalformedTokenIsRefusedWhateverElseTheCallCarries) {
  ReportAuthOptions options;
  options.tokens = *ParseReportTokens(kTokens, "tokens");
  options.allow_unauthenticated = true;
  for (const std::string& authorization :
       {std::string("Bearer 0123456789abcdef0124"), std::string("Bearer 0123456789abcdef012"),
        std::string("Basic dXNlcjpwYXNz"), std::string("0123456789abcdef0123")}) {
    const absl::StatusOr<std::string> reporter =
        AuthenticateReporter(options, {.authorization = authorization, .client_identity = "h"});
    EXPECT_EQ(reporter.status().code(), absl::StatusCode::kUnauthenticated) << authorization;
    EXPECT_THAT(reporter.status().message(), HasSubstr("authorization")) << authorization;
  }
}

TEST(AuthenticateReporterTest, AVerifiedClientCertificateIsItsCommonName) {
  EXPECT_EQ(*AuthenticateReporter({}, {.client_identity = "slurmctld.example"}),
            "slurmctld.example");
}

TEST(AuthenticateReporterTest, NoCredentialsAreRefusedUnlessAllowed) {
  const absl::StatusOr<std::string> refused = AuthenticateReporter({}, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("--allow_unauthenticated_reports"));
  EXPECT_EQ(*AuthenticateReporter({.allow_unauthenticated = true}, {}), "unauthenticated");
}

}  // namespace
}  // namespace oomguard::service
