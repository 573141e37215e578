// A real PostgreSQL server for a test (Debian's `postgresql`): initdb and
// postgres in a fresh temporary directory, listening on a loopback port with
// trust authentication for the user `oomguard`. As root (CI's containers)
// it runs as the `postgres` user (else `nobody`) through setpriv(1), since
// PostgreSQL refuses to run as root. fsync is off: the tests kill
// processes, not machines.
#ifndef OOMGUARD_TESTS_TESTING_POSTGRES_SERVER_H_
#define OOMGUARD_TESTS_TESTING_POSTGRES_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::testing {

class PostgresServer {
 public:
  // The directory of initdb and postgres (/usr/lib/postgresql/N/bin, the
  // newest N), or nullopt when PostgreSQL is not installed: the only reason
  // a test may skip (CI installs it).
  static std::optional<std::string> BinDir();

  // Starts a server and waits (up to a minute) until it accepts
  // connections.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  // Stops the server and removes its directory.
  ~PostgresServer();

  // Creates database `name` and returns its URI,
  // postgresql://oomguard@127.0.0.1:PORT/NAME.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);

  int port() const { return port_; }

 private:
  PostgresServer(std::string dir, int port, std::unique_ptr<ChildProcess> process)
      : dir_(std::move(dir)), port_(port), process_(std::move(process)) {}

  std::string dir_;
  int port_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_POSTGRES_SERVER_H_
