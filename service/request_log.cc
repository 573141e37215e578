// Structured one-line logs (see request_log.h).
#include "service/request_log.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/status_mapping.h"

namespace oomguard::service {
namespace {

// `value`, quoted and escaped when it is empty or holds a space, a quote,
// '=' or a control character.
std::string LogValue(absl::string_view value) {
  bool plain = !value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\x%02x", c);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Timestamp(absl::Time now) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone());
}

}  // namespace

std::string FormatRequestLine(const RequestRecord& r, absl::Time now) {
  std::string line =
      absl::StrCat("ts=", Timestamp(now), " msg=request method=", r.method,
                   " code=", StatusCodeName(r.status->error_code()),
                   absl::StrFormat(" latency_ms=%.3f", absl::ToDoubleMilliseconds(r.latency)));
  if (!r.verdict.empty()) absl::StrAppend(&line, " verdict=", r.verdict);
  if (r.peak_bytes > 0) absl::StrAppend(&line, " peak_bytes=", r.peak_bytes);
  absl::StrAppend(&line, " peer=", LogValue(r.peer));
  if (!r.status->ok()) absl::StrAppend(&line, " error=", LogValue(r.status->error_message()));
  return line + "\n";
}

std::string FormatEventLine(absl::string_view event,
                            const std::vector<std::pair<std::string, std::string>>& fields,
                            absl::Time now) {
  std::string line = absl::StrCat("ts=", Timestamp(now), " msg=", LogValue(event));
  for (const auto& [key, value] : fields) absl::StrAppend(&line, " ", key, "=", LogValue(value));
  return line + "\n";
}

void WriteLogLine(absl::string_view line) {
  while (!line.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
    if (n <= 0) return;  // Nowhere to report a failing stderr.
    line.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace oomguard::service
