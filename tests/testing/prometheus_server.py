"""A real Prometheus (/usr/bin/prometheus) for the Python tests: started on a
free loopback port with a storage directory of its own, scraping the given
targets every second and evaluating the given rule files every second;
queried through its HTTP API. The process is the test's own: stopped by its
PID (SIGTERM, then SIGKILL).
"""

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import python_client_server


class PrometheusServer:
    def __init__(self, binary, directory, scrape_configs, rule_files=()):
        """`scrape_configs`: the YAML of the config's scrape_configs list,
        indented by two spaces; `directory`: the test's own, for the config,
        the data and the log (prometheus.log)."""
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
            if rule_files:
                f.write("rule_files:\n" + "".join(f"  - {path}\n" for path in rule_files))
            f.write("scrape_configs:\n" + scrape_configs)
        self.port = python_client_server.free_port()
        self.log = open(os.path.join(directory, "prometheus.log"), "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={directory}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def api(self, path, **params):
        """The JSON answer of /api/v1/`path`, Prometheus's error answers
        included."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            body = error.read().decode("utf-8", "replace")
            try:
                return json.loads(body)
            except ValueError:  # E.g. "Service Unavailable" while Prometheus starts.
                return {"status": "error", "errorType": f"HTTP {error.code}", "error": body}

    def query(self, expr):
        """The result of the instant query `expr`; AssertionError for an
        error answer."""
        reply = self.api("query", query=expr)
        if reply.get("status") != "success":
            raise AssertionError(f"{expr}: {reply.get('errorType')}: {reply.get('error')}")
        return reply["data"]["result"]

    def wait_for(self, expr, timeout=60.0):  # Generous: CI machines are loaded.
        """The first non-empty result of `expr`; AssertionError, with the
        log, when there is none within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                result = self.query(expr)
                if result:
                    return result
            except (OSError, AssertionError) as error:
                last = error
            time.sleep(0.2)
        raise AssertionError(f"no result for {expr} ({last}); prometheus log:\n{self.log_text()}")

    def log_text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
