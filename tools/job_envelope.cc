// The `oomguard-job 1` job file (see job_envelope.h).
#include "tools/job_envelope.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/bounded_file.h"
#include "tools/check_flags.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

bool IsHeaderName(absl::string_view v) {
  return !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '+' || c == ':';
  });
}

bool IsEnvValue(absl::string_view v) {
  return v.size() <= 256 && std::all_of(v.begin(), v.end(), [](char c) {
           return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                  absl::StrContains("._+:,=-", c);
         });
}

// Sets `key` of `e` to `value`; the reason when the key or value is bad.
absl::Status SetHeader(absl::string_view key, absl::string_view value, JobEnvelope& e) {
  if (key == "gpus" || key == "gpus_per_node") {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(value, &n) || n == 0 || n > kMaxGpuCount) {
      return absl::InvalidArgumentError("expected a whole number in [1, 1048576]");
    }
    (key == "gpus" ? e.gpus : e.gpus_per_node) = n;
  } else if (key == "env.PYTORCH_CUDA_ALLOC_CONF" || key == "env.NCCL_GRAPH_REGISTER") {
    if (!IsEnvValue(value))
      return absl::InvalidArgumentError("expected 0-256 of [A-Za-z0-9._+:,=-]");
    e.env[std::string(key.substr(4))] = std::string(value);
  } else if (key == "gpu" || key == "default_gpu" || key == "partition") {
    if (!IsHeaderName(value))
      return absl::InvalidArgumentError("expected 1-128 of [A-Za-z0-9._+:-]");
    (key == "gpu"           ? e.gpu
     : key == "default_gpu" ? e.default_gpu
                            : e.partition) = std::string(value);
  } else {
    return absl::InvalidArgumentError(
        "unknown key; known: gpus, gpus_per_node, gpu, default_gpu, partition");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobEnvelope> ParseJobEnvelope(absl::string_view text) {
  if (text.size() > kMaxJobFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("job file is ", text.size(), " bytes, more than ", kMaxJobFileBytes));
  }
  JobEnvelope e;
  size_t pos = text.find('\n');
  if (pos == absl::string_view::npos || text.substr(0, pos) != "oomguard-job 1") {
    return absl::InvalidArgumentError(
        absl::StrCat("job file: the first line must be \"oomguard-job 1\", got \"",
                     ShownValue(text.substr(0, std::min(pos, text.size()))), "\""));
  }
  ++pos;
  std::set<std::string, std::less<>> seen;
  int line = 1;
  while (true) {
    ++line;
    const size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("job file line ", line, ": the header must end with an empty line"));
    }
    const absl::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) break;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("job file line ", line, ": \"", ShownValue(item), "\": ", why));
    };
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) return bad("expected key=value");
    const absl::string_view key = item.substr(0, eq);
    if (!seen.insert(std::string(key)).second) return bad("key given twice");
    if (const absl::Status s = SetHeader(key, item.substr(eq + 1), e); !s.ok()) {
      return bad(s.message());
    }
  }
  e.script = std::string(text.substr(pos));
  return e;
}

absl::StatusOr<std::string> ReadJobFile(absl::string_view flag, const std::string& path) {
  return ReadBoundedFile(flag, path, kMaxJobFileBytes);
}

}  // namespace oomguard
