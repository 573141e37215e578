// Connections held open against a server on loopback, the way a client that
// means to tie it up holds them: silent, trickling the start of a TLS
// handshake, trickling their headers, or trickling a body after whole
// headers; over TLS or plain TCP, from any 127.0.0.0/8 source address (all of
// it is loopback on Linux), so that a test can tell one source from
// another. Shared by the webhook's and the HTTP API's held-connection tests.
// Every loop is bounded in time and count.
#ifndef OOMGUARD_TESTS_TESTING_HELD_CONNECTIONS_H_
#define OOMGUARD_TESTS_TESTING_HELD_CONNECTIONS_H_

#include <future>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace oomguard::testing {

// A nonblocking TCP connection from `source` (an IPv4 address on loopback)
// to 127.0.0.1:`port`; -1 when it is not up within 2 s.
int Connect(int port, const std::string& source = "127.0.0.1");

// How a held connection behaves.
enum class Hold {
  kSilent,          // TCP only: never sends a byte.
  kTrickleTls,      // Sends the start of a TLS record, a byte at a time.
  kTrickleHeaders,  // (Over TLS: completes the handshake.) Sends a request
                    // line, then a header's bytes, a few at a time.
  kTrickleBody,     // (Over TLS: completes the handshake.) Sends a POST's
                    // whole headers (Content-Length: 1 MB), then body bytes,
                    // a few at a time.
};

struct HoldSpec {
  int port = 0;
  int count = 0;
  Hold kind = Hold::kSilent;
  // How long they are held once they are all up; the hold ends early once
  // the server has closed them all.
  absl::Duration hold = absl::Seconds(1);
  // kTrickleHeaders, kTrickleBody: over TLS (a client context that trusts
  // anything).
  bool tls = false;
  std::string source = "127.0.0.1";
  std::string path = "/validate?timeout=3s";
  // Each connection sends `bytes_per_send` bytes every `interval`.
  absl::Duration interval = absl::Milliseconds(200);
  int bytes_per_send = 1;
};

struct HeldOutcome {
  int held = 0;     // Connected (over TLS: the handshake completed too).
  int hung_up = 0;  // Closed by the server while held.
  // The longest a connection stayed open before the server closed it.
  absl::Duration longest_until_hung_up;
};

// The connections of a HoldSpec, held on a thread of their own, which notes
// when the server closes each one.
class HeldConnections {
 public:
  explicit HeldConnections(HoldSpec spec);
  ~HeldConnections() { Finish(); }

  // How many are held, once they all are.
  int WaitUntilHeld() { return held_.get_future().get(); }

  // Waits for the hold to end; the connections are then closed.
  HeldOutcome Finish();

 private:
  HeldOutcome Run(const HoldSpec& spec);

  std::promise<int> held_;
  std::promise<HeldOutcome> outcome_;
  std::future<HeldOutcome> outcome_future_ = outcome_.get_future();
  std::thread thread_;  // Last: it uses the members above.
};

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_HELD_CONNECTIONS_H_
