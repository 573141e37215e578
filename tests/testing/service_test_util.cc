// Helpers for the service tests (see service_test_util.h).
#include "tests/testing/service_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace oomguard::testing {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& output_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // The child gets default signal handling and an empty mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(rc)));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, output_path));
}

ChildProcess::~ChildProcess() {
  if (!exit_code_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::string ChildProcess::Output() const { return ReadFile(output_path_); }

void ChildProcess::Signal(int signal) {
  if (!exit_code_) kill(pid_, signal);
}

std::optional<int> ChildProcess::WaitForExit(absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (!exit_code_) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (absl::Now() >= end) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return exit_code_;
}

absl::StatusOr<std::string> WaitForOutputLine(ChildProcess& child, const std::string& needle,
                                              absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    for (absl::string_view line : absl::StrSplit(child.Output(), '\n')) {
      if (absl::StrContains(line, needle)) return std::string(line);
    }
    if (child.WaitForExit(absl::ZeroDuration()).has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("process exited before printing '", needle, "':\n", child.Output()));
    }
    if (absl::Now() >= end) {
      return absl::DeadlineExceededError(
          absl::StrCat("no '", needle, "' within the timeout:\n", child.Output()));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int LogValue(const std::string& line, const std::string& key) {
  for (absl::string_view field : absl::StrSplit(line, ' ')) {
    int value = 0;
    if (absl::ConsumePrefix(&field, absl::StrCat(key, "=")) && absl::SimpleAtoi(field, &value)) {
      return value;
    }
  }
  return -1;
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path, absl::Duration timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("connect to port ", port, ": ", std::strerror(errno)));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("write failed");
  }
  std::string response;
  const absl::Time end = absl::Now() + timeout;
  char buffer[16384];
  while (true) {
    const int left_ms = static_cast<int>(absl::ToInt64Milliseconds(end - absl::Now()));
    pollfd p{fd, POLLIN, 0};
    if (left_ms <= 0 || poll(&p, 1, left_ms) <= 0) {
      close(fd);
      return absl::DeadlineExceededError(absl::StrCat("GET ", path, ": timed out"));
    }
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos || !absl::StrContains(response.substr(0, body), " 200 ")) {
    return absl::UnavailableError(absl::StrCat("GET ", path, ": ", response.substr(0, 200)));
  }
  return response.substr(body + 4);
}

int PickFreePort() {
  // Below the kernel's ephemeral range, as free_port in
  // tests/testing/python_client_server.py (which says why).
  int low = 32768;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> low;
  if (low <= 10000) return -1;
  std::mt19937 random(std::random_device{}());
  for (int tries = 0; tries < 500; ++tries) {
    const int port = std::uniform_int_distribution<int>(10000, low - 1)(random);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (bound) return port;
  }
  return -1;
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base ? base : "/tmp", "/oomguard-test-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string ServerBinary() {
  return absl::StrCat(OOMGUARD_BINARY_DIR, "/tools/oomguard_server_for_test");
}

}  // namespace oomguard::testing
