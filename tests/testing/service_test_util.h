// Helpers for the service tests: child processes that the test owns (kill by
// PID, bounded waits), a loopback HTTP GET, free ports, temporary files.
#ifndef OOMGUARD_TESTS_SERVICE_TEST_UTIL_H_
#define OOMGUARD_TESTS_SERVICE_TEST_UTIL_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace oomguard::testing {

// A process started by a test. Its stdout and stderr go to files. The
// destructor kills it (SIGKILL) and reaps it if it is still running.
class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`; output goes to `output_path`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                             const std::string& output_path);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& output_path() const { return output_path_; }
  std::string Output() const;  // What it wrote so far.

  // Sends `signal` to the process.
  void Signal(int signal);
  // Waits up to `timeout` for it to exit; its exit code (128 + signal when
  // killed), or nullopt on timeout.
  std::optional<int> WaitForExit(absl::Duration timeout);

 private:
  ChildProcess(pid_t pid, std::string output_path)
      : pid_(pid), output_path_(std::move(output_path)) {}

  pid_t pid_;
  std::string output_path_;
  std::optional<int> exit_code_;
};

// Waits up to `timeout` until the child's output has a line containing
// `needle`; that line, or an error (with the output) on timeout or exit.
absl::StatusOr<std::string> WaitForOutputLine(ChildProcess& child, const std::string& needle,
                                              absl::Duration timeout);

// The integer value of `key=` in a logfmt line, or -1.
int LogValue(const std::string& line, const std::string& key);

// GET http://127.0.0.1:`port``path` (HTTP/1.0); the body, or an error for a
// connection failure, timeout or non-200 status.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path, absl::Duration timeout);

// A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's
// ephemeral range (so no outgoing connection takes it meanwhile); -1 if none.
int PickFreePort();

// A fresh directory under $TEST_TMPDIR or /tmp, removed by the caller.
std::string MakeTempDir();

void WriteFile(const std::string& path, const std::string& contents);
std::string ReadFile(const std::string& path);

// The stand-alone `oomguard serve` built beside the tests.
std::string ServerBinary();

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_SERVICE_TEST_UTIL_H_
