#include "tools/bounded_file.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/config_json.h"
#include "tools/shown_value.h"

namespace oomguard {

absl::StatusOr<std::string> ReadBoundedFile(absl::string_view flag, const std::string& path,
                                            size_t max_bytes) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", ShownValue(path), "\" is a directory, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read \"", ShownValue(path), "\""));
  }
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read \"", ShownValue(path), "\""));
  }
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", ShownValue(path), "\" is larger than ", max_bytes, " bytes"));
  }
  return text;
}

absl::StatusOr<std::string> ReadHfConfigFlag(const std::string& path) {
  OOMGUARD_ASSIGN_OR_RETURN(std::string text,
                            ReadBoundedFile("--hf-config", path, kMaxConfigBytes));
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hf-config: \"", ShownValue(path), "\" is empty; expected a config.json"));
  }
  return text;
}

}  // namespace oomguard
