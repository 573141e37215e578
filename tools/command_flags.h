// Reading the `--name value` / `--name=value` flags of the oomguard
// subcommands that take Megatron-LM arguments after their own (estimate,
// check), where Abseil flags cannot be used.
#ifndef OOMGUARD_TOOLS_COMMAND_FLAGS_H_
#define OOMGUARD_TOOLS_COMMAND_FLAGS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard {

// True when args `a` is flag `name`, alone or as "name=value".
bool IsFlag(const std::string& a, absl::string_view name);

// The value of flag `name` at args[i]: after "=", or the next argument (i
// then moves to it). InvalidArgument "NAME: missing value" when there is none.
absl::StatusOr<std::string> TakeFlagValue(const std::vector<std::string>& args, size_t& i,
                                          absl::string_view name);

// OK when `server`, the value of --server, is HOST:PORT-like (not empty,
// no spaces); InvalidArgument naming --server otherwise.
absl::Status CheckServerFlag(const std::string& server);

// OK when the TLS files of a client command go together: --tls-cert and
// --tls-key both or neither, and only with --tls-ca.
absl::Status CheckTlsFlags(const std::string& tls_ca, const std::string& tls_cert,
                           const std::string& tls_key);

// The value of `--deadline-ms N`: milliseconds in [1, 600000].
absl::StatusOr<int64_t> ParseDeadlineMsFlag(const std::string& value);

// Adds the NAME=VALUE of an `--env` flag to `env`. InvalidArgument quoting the
// value (cut, as ShownValue cuts it) when it has no NAME=.
absl::Status AddEnvFlag(const std::string& value, std::map<std::string, std::string>& env);

// The value of `--coverage F`: the upper bounds' coverage, in
// [0.5, 0.999] (estimator/peak_bound.h).
absl::StatusOr<double> ParseCoverageFlag(const std::string& value);

// The value of `--peak-bound upper|point`: which peak the verdict compares.
absl::StatusOr<v1::PeakBound> ParsePeakBoundFlag(const std::string& value);
// True when args `a` is `--megatron-core-version`,
// `--transformer-engine-version` or `--gpu-architecture` (alone or as
// "name=value").
bool IsVersionFlag(const std::string& a);

// Takes the version flag at args[i] (i moves past its value) into `env` as
// the variable ApplyEnvironment reads (OOMGUARD_MEGATRON_CORE_VERSION,
// OOMGUARD_TRANSFORMER_ENGINE_VERSION, OOMGUARD_GPU_ARCHITECTURE), which
// validates the value.
// InvalidArgument "NAME: missing value" when there is none.
absl::Status TakeVersionFlag(const std::vector<std::string>& args, size_t& i,
                             std::map<std::string, std::string>& env);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_COMMAND_FLAGS_H_
