#include "service/protobuf_log.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/stubs/logging.h"
#include "service/request_log.h"

namespace oomguard::service {
namespace {

// The limit RouteProtobufLogging sets; protobuf's handler is a plain
// function, so it lives here.
LogRateLimit* protobuf_limit = nullptr;

const char* LevelName(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      return "INFO";
    case google::protobuf::LOGLEVEL_WARNING:
      return "WARNING";
    case google::protobuf::LOGLEVEL_ERROR:
      return "ERROR";
    case google::protobuf::LOGLEVEL_FATAL:
      return "FATAL";
  }
  return "UNKNOWN";
}

void WriteProtobufLine(google::protobuf::LogLevel level, const char* filename, int line,
                       const std::string& message) {
  int64_t left_out = 0;
  if (level != google::protobuf::LOGLEVEL_FATAL && !protobuf_limit->Admit(absl::Now(), &left_out)) {
    return;
  }
  WriteLogLine(FormatEventLine("protobuf",
                               {{"level", LevelName(level)},
                                {"source", absl::StrCat(filename, ":", line)},
                                {"message", message},
                                {"left_out", absl::StrCat(left_out)}},
                               absl::Now()));
}

}  // namespace

bool LogRateLimit::Admit(absl::Time now, int64_t* left_out) {
  absl::MutexLock lock(&mu_);
  if (now < next_) {
    ++dropped_;
    return false;
  }
  *left_out = dropped_;
  dropped_ = 0;
  next_ = now + interval_;
  return true;
}

void RouteProtobufLogging(absl::Duration interval) {
  static LogRateLimit* const limit = new LogRateLimit(interval);
  protobuf_limit = limit;
  google::protobuf::SetLogHandler(&WriteProtobufLine);
}

}  // namespace oomguard::service
