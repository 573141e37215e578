#include "tests/testing/postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace oomguard::testing {
namespace {

// setpriv(1) execs the program as the user (runuser forks, and killing it
// would leave the server running).
constexpr char kSetpriv[] = "/usr/bin/setpriv";

// argv run as the unprivileged `account` when we are root.
std::vector<std::string> AsServerUser(const passwd* account, std::vector<std::string> argv) {
  if (account == nullptr) return argv;
  std::vector<std::string> wrapped = {kSetpriv, absl::StrCat("--reuid=", account->pw_uid),
                                      absl::StrCat("--regid=", account->pw_gid), "--clear-groups",
                                      "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::string Uri(int port, const std::string& database) {
  return absl::StrCat("postgresql://oomguard@127.0.0.1:", port, "/", database,
                      "?connect_timeout=10");
}

}  // namespace

std::optional<std::string> PostgresServer::BinDir() {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", error)) {
    if (std::filesystem::exists(entry.path() / "bin" / "postgres") &&
        std::filesystem::exists(entry.path() / "bin" / "initdb")) {
      found.push_back((entry.path() / "bin").string());
    }
  }
  if (found.empty()) return std::nullopt;
  // The newest: versions are numbers of equal width in practice (15, 16).
  return *std::max_element(found.begin(), found.end());
}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  const std::optional<std::string> bin = BinDir();
  if (!bin.has_value()) return absl::FailedPreconditionError("PostgreSQL is not installed");
  const std::string dir = MakeTempDir();
  if (dir.empty()) return absl::InternalError("cannot make a temporary directory");
  const passwd* account = nullptr;
  if (geteuid() == 0) {
    account = getpwnam("postgres");
    if (account == nullptr) account = getpwnam("nobody");
    if (account == nullptr || chown(dir.c_str(), account->pw_uid, account->pw_gid) != 0) {
      return absl::InternalError(absl::StrCat("cannot give ", dir, " to the postgres user"));
    }
  }
  const std::string data = dir + "/data";
  absl::StatusOr<std::unique_ptr<ChildProcess>> initdb = ChildProcess::Start(
      AsServerUser(account, {*bin + "/initdb", "-D", data, "-U", "oomguard", "--auth=trust", "-E",
                             "UTF8", "--no-sync", "--no-instructions"}),
      dir + "/initdb.log");
  if (!initdb.ok()) return initdb.status();
  std::optional<int> initdb_exit = (*initdb)->WaitForExit(absl::Minutes(2));
  if (initdb_exit != 0) {
    return absl::InternalError(absl::StrCat("initdb failed: ", (*initdb)->Output()));
  }
  const int port = PickFreePort();
  if (port < 0) return absl::InternalError("no free port");
  absl::StatusOr<std::unique_ptr<ChildProcess>> postgres = ChildProcess::Start(
      AsServerUser(account,
                   {*bin + "/postgres", "-D", data, "-p", absl::StrCat(port), "-k", dir, "-c",
                    "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"}),
      dir + "/postgres.log");
  if (!postgres.ok()) return postgres.status();
  std::unique_ptr<PostgresServer> server(new PostgresServer(dir, port, *std::move(postgres)));
  const std::string uri = Uri(port, "postgres");
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (PQping(uri.c_str()) != PQPING_OK) {
    if (absl::Now() > deadline || server->process_->WaitForExit(absl::ZeroDuration()).has_value()) {
      return absl::InternalError(
          absl::StrCat("postgres did not start: ", server->process_->Output()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return server;
}

PostgresServer::~PostgresServer() {
  process_->Signal(SIGINT);  // Fast shutdown: disconnects clients, stops.
  process_->WaitForExit(absl::Seconds(30));
  process_.reset();  // SIGKILL and reap if it did not.
  std::error_code error;
  std::filesystem::remove_all(dir_, error);
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& name) {
  PGconn* connection = PQconnectdb(Uri(port_, "postgres").c_str());
  absl::Status status;
  if (PQstatus(connection) != CONNECTION_OK) {
    status = absl::UnavailableError(PQerrorMessage(connection));
  } else {
    PGresult* result = PQexec(connection, absl::StrCat("CREATE DATABASE ", name).c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) {
      status = absl::InternalError(PQerrorMessage(connection));
    }
    PQclear(result);
  }
  PQfinish(connection);
  if (!status.ok()) return status;
  return Uri(port_, name);
}

}  // namespace oomguard::testing
