// The flags of estimate, check and report (see command_flags.h).
#include "tools/command_flags.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "estimator/peak_bound.h"
#include "tools/shown_value.h"

namespace oomguard {

bool IsFlag(const std::string& a, absl::string_view name) {
  return a == name || absl::StartsWith(a, absl::StrCat(name, "="));
}

absl::StatusOr<std::string> TakeFlagValue(const std::vector<std::string>& args, size_t& i,
                                          absl::string_view name) {
  const std::string& a = args[i];
  if (absl::StartsWith(a, absl::StrCat(name, "="))) return a.substr(name.size() + 1);
  if (i + 1 >= args.size())
    return absl::InvalidArgumentError(absl::StrCat(name, ": missing value"));
  return args[++i];
}

absl::Status CheckServerFlag(const std::string& server) {
  if (server.empty() || std::any_of(server.begin(), server.end(), [](char c) {
        return absl::ascii_isspace(static_cast<unsigned char>(c));
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("--server: expected HOST:PORT, got \"", ShownValue(server), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckTlsFlags(const std::string& tls_ca, const std::string& tls_cert,
                           const std::string& tls_key) {
  if (tls_ca.empty() && (!tls_cert.empty() || !tls_key.empty())) {
    return absl::InvalidArgumentError("--tls-cert/--tls-key need --tls-ca");
  }
  if (tls_cert.empty() != tls_key.empty()) {
    return absl::InvalidArgumentError("give both --tls-cert and --tls-key, or neither");
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseDeadlineMsFlag(const std::string& value) {
  int64_t ms = 0;
  if (!absl::SimpleAtoi(value, &ms) || ms < 1 || ms > 600000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--deadline-ms: expected milliseconds in [1, 600000], got \"", ShownValue(value), "\""));
  }
  return ms;
}

absl::Status AddEnvFlag(const std::string& value, std::map<std::string, std::string>& env) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--env: expected NAME=VALUE, got \"", ShownValue(value), "\""));
  }
  env[value.substr(0, eq)] = value.substr(eq + 1);
  return absl::OkStatus();
}

absl::StatusOr<double> ParseCoverageFlag(const std::string& value) {
  double coverage = 0;
  if (!absl::SimpleAtod(value, &coverage) || !(coverage >= kMinUpperBoundCoverage) ||
      !(coverage <= kMaxUpperBoundCoverage)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--coverage: expected a fraction in [", kMinUpperBoundCoverage, ", ",
                     kMaxUpperBoundCoverage, "], got \"", ShownValue(value), "\""));
  }
  return coverage;
}

absl::StatusOr<v1::PeakBound> ParsePeakBoundFlag(const std::string& value) {
  if (value == "upper") return v1::PEAK_BOUND_UPPER;
  if (value == "point") return v1::PEAK_BOUND_POINT;
  return absl::InvalidArgumentError(
      absl::StrCat("--peak-bound: expected upper or point, got \"", ShownValue(value), "\""));
}

namespace {

constexpr std::pair<absl::string_view, absl::string_view> kVersionFlags[] = {
    {"--megatron-core-version", "OOMGUARD_MEGATRON_CORE_VERSION"},
    {"--transformer-engine-version", "OOMGUARD_TRANSFORMER_ENGINE_VERSION"},
    {"--gpu-architecture", "OOMGUARD_GPU_ARCHITECTURE"}};

}  // namespace

bool IsVersionFlag(const std::string& a) {
  for (const auto& [flag, variable] : kVersionFlags) {
    if (IsFlag(a, flag)) return true;
  }
  return false;
}

absl::Status TakeVersionFlag(const std::vector<std::string>& args, size_t& i,
                             std::map<std::string, std::string>& env) {
  for (const auto& [flag, variable] : kVersionFlags) {
    if (!IsFlag(args[i], flag)) continue;
    OOMGUARD_ASSIGN_OR_RETURN(std::string value, TakeFlagValue(args, i, flag));
    env[std::string(variable)] = std::move(value);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(ShownValue(args[i]), ": not a version flag"));
}

}  // namespace oomguard
