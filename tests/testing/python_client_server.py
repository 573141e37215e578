"""Starts the built `oomguard serve` for the Python tests, as
tests/service_test_util.cc does for the C++ ones: loopback, port 0 for both
the gRPC and the metrics listener, ports read back from the
`msg=listening grpc_port=... metrics_port=...` log line. The process is
the test's own: stopped by its PID (SIGTERM, then SIGKILL).
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77  # CTest SKIP_RETURN_CODE of the Python tests.


def import_grpc():
    """The grpc module; exits SKIP when this Python has none."""
    try:
        import grpc  # pylint: disable=import-outside-toplevel
    except ImportError:
        print(f"skipped: {sys.executable} has no grpc module (apt-get install python3-grpcio)")
        sys.exit(SKIP)
    return grpc


class Server:
    def __init__(self, binary, extra_flags=(), start_timeout=20.0):
        self.binary = binary
        self.log = tempfile.NamedTemporaryFile(prefix="oomguard-serve-", suffix=".log",
                                               delete=False)
        argv = [binary]
        if os.path.basename(binary) == "oomguard":
            argv.append("serve")
        argv += ["--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0", "--threads=2",
                 *extra_flags]
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        self.grpc_port = self.metrics_port = self.http_port = None
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            match = re.search(r"msg=listening grpc_port=(\d+) metrics_port=(\d+).* http_port=(\d+)",
                              self.output())
            if match:
                self.grpc_port, self.metrics_port = int(match.group(1)), int(match.group(2))
                # 0 without --http_address.
                self.http_port = int(match.group(3)) or None
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"oomguard serve did not start:\n{self.output()}")

    @property
    def address(self):
        return f"127.0.0.1:{self.grpc_port}"

    def output(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def http_json(self, method, path, body=None, timeout=10.0):
        """The JSON answer of the HTTP/JSON API (--http_address) to `method`
        `path` with the JSON `body`; urllib.error.HTTPError for a status
        other than 2xx."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", data=data,
                                         method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.load(reply)

    def metrics(self, timeout=5.0):
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.read().decode()

    def stop(self, timeout=20.0):
        """SIGTERM, then SIGKILL after `timeout`; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def close(self):
        self.stop()
        self.log.close()
        os.unlink(self.log.name)

    def close_checked(self):
        """close(); raises AssertionError, with the server's log, unless it
        exited 0 on SIGTERM (a test's tearDownModule)."""
        code = self.stop()
        output = self.output()
        self.close()
        if code != 0:
            raise AssertionError(f"oomguard serve exited {code} after SIGTERM:\n{output}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def free_port():
    """A port on 127.0.0.1 free a moment ago, below the kernel's ephemeral
    range: whoever binds it binds it later, and a port from that range (what
    binding port 0 gives) may meanwhile become the local end of another
    test's outgoing connection (the held-connection tests open hundreds in
    parallel; CI saw slurmd fail with "Address already in use"). Nothing takes
    a port below the range unasked. The same rule as testing::PickFreePort."""
    import random  # pylint: disable=import-outside-toplevel
    import socket  # pylint: disable=import-outside-toplevel
    with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
        low = int(f.read().split()[0])
    for port in random.sample(range(10000, max(low, 10001)), min(500, max(low - 10000, 1))):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port below the ephemeral range ({low})")
