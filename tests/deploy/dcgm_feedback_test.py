#!/usr/bin/python3
"""The DCGM reader of `oomguard serve --prometheus_url` against a real Prometheus.

    /usr/bin/python3 tests/deploy/dcgm_feedback_test.py --server-binary BUILD/tools/oomguard_server_for_test

A test exporter serves DCGM_FI_DEV_FB_USED in the DCGM exporter's exposition
format, with the labels ../shared/design/FEEDBACK_SOURCES.md lists (gpu, UUID,
pci_bus_id, device, modelName, Hostname/hostname, hpc_job; pod, namespace,
container with --kubernetes); a real Prometheus (/usr/bin/prometheus) scrapes
it every second; `oomguard serve --store sqlite:... --prometheus_url ...
--dcgm_interval 1s --http_address ...` checks two jobs, learns their handles
from a report (a Slurm job id; a Kubernetes workload whose name has a '.'),
and the DCGM reports appear in GET /v1/checks/{check_id}: one device per GPU
of that job only, MiB turned into bytes, a new report only when a peak rose,
holding every device's largest. Exits 77 (skipped) only when prometheus is
not installed.
"""

import argparse
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
import urllib.error

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "testing"))

import prometheus_server  # noqa: E402  pylint: disable=wrong-import-position
import python_client_server  # noqa: E402  pylint: disable=wrong-import-position

MIB = 1 << 20
OPTIONS = None

# What the exporter serves: {labels (tuple of pairs): MiB}. The Slurm job
# 4242 runs on node1 (GPUs 0, 1) and node2 (GPU 0); job 999 is another job.
# The workload team-a/llama.pretrain has pods llama.pretrain-worker-{0,1};
# llamaXpretrain-worker-0 (which an unescaped '.' would match) and team-b's
# pod of the same name are others.
SLURM_JOB = "4242"
NAMESPACE, WORKLOAD = "team-a", "llama.pretrain"


def bare_metal(host, gpu, job):
    return (("gpu", str(gpu)), ("UUID", f"GPU-{host}-{gpu}"),
            ("pci_bus_id", f"00000000:{gpu + 7:02X}:00.0"), ("device", f"nvidia{gpu}"),
            ("modelName", "NVIDIA H100 80GB HBM3"), ("Hostname", host), ("hostname", host),
            ("hpc_job", job))


def pod(namespace, name, gpu):
    return (("gpu", str(gpu)), ("UUID", f"GPU-k8s-{name}-{gpu}"),
            ("pci_bus_id", f"00000000:{gpu + 7:02X}:00.0"), ("device", f"nvidia{gpu}"),
            ("modelName", "NVIDIA H100 80GB HBM3"), ("Hostname", "k8s-node"),
            ("hostname", "k8s-node"), ("namespace", namespace), ("pod", name),
            ("container", "trainer"))


class Exporter:
    """An HTTP server on 127.0.0.1 serving /metrics as dcgm-exporter does."""

    def __init__(self):
        self.lock = threading.Lock()
        self.values = {}
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # pylint: disable=invalid-name
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set(self, labels, mib):
        with self.lock:
            self.values[labels] = mib

    def exposition(self):
        lines = ["# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
                 "# TYPE DCGM_FI_DEV_FB_USED gauge"]
        with self.lock:
            for labels, mib in sorted(self.values.items()):
                text = ",".join(f'{k}="{v}"' for k, v in labels)
                lines.append(f"DCGM_FI_DEV_FB_USED{{{text}}} {mib}")
        return "\n".join(lines) + "\n"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for(what, predicate, timeout=60.0, diagnostics=lambda: ""):
    """predicate()'s first true value; generous: CI machines are loaded."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, ValueError, AssertionError) as error:
            last = error
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} ({last})\n{diagnostics()}")


class DcgmFeedbackTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="oomguard-dcgm-")
        cls.exporter = Exporter()
        cls.exporter.set(bare_metal("node1", 0, SLURM_JOB), 40000)
        cls.exporter.set(bare_metal("node1", 1, SLURM_JOB), 41000)
        cls.exporter.set(bare_metal("node2", 0, SLURM_JOB), 39000.5)
        cls.exporter.set(bare_metal("node2", 1, "999"), 70000)
        cls.exporter.set(pod(NAMESPACE, "llama.pretrain-worker-0", 0), 50000)
        cls.exporter.set(pod(NAMESPACE, "llama.pretrain-worker-1", 0), 51000)
        cls.exporter.set(pod(NAMESPACE, "llamaXpretrain-worker-0", 0), 60000)
        cls.exporter.set(pod("team-b", "llama.pretrain-worker-0", 0), 65000)
        # honor_labels: the exporter's namespace/pod labels are the job's, as
        # dcgm-exporter's own ServiceMonitor keeps them.
        cls.prometheus = prometheus_server.PrometheusServer(
            OPTIONS.prometheus, cls.dir,
            scrape_configs="  - job_name: dcgm\n    honor_labels: true\n    static_configs:\n"
                           f"      - targets: ['127.0.0.1:{cls.exporter.port}']\n")
        cls.server = None
        try:
            cls.prometheus.wait_for("count(DCGM_FI_DEV_FB_USED) == 8")
            cls.server = python_client_server.Server(OPTIONS.server_binary, extra_flags=[
                f"--store=sqlite:{cls.dir}/checks.db", "--cluster=test",
                f"--prometheus_url={cls.prometheus.url}", "--dcgm_interval=1s",
                "--allow_unauthenticated_reports", "--http_address=127.0.0.1:0"])
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.close()
        cls.prometheus.close()
        cls.exporter.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def server_log(self):
        return "oomguard log:\n" + self.server.output()

    def http(self, method, path, body=None):
        try:
            return self.server.http_json(method, path, body)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: HTTP {error.code}: "
                                 f"{error.read().decode('utf-8', 'replace')}") from error

    def checked_job(self, handle, source):
        """A check's id, its job's handle sent in a report as a hook does."""
        answer = self.http("POST", "/v1/check", {
            "job": {"megatron": {"preset": "llama3-8b", "numGpus": 8,
                                 "args": "--seq-length 4096 --micro-batch-size 1 "
                                         "--use-distributed-optimizer"}},
            "gpuName": "H100"})
        check_id = answer["checkId"]
        self.assertRegex(check_id, r"^[0-9a-f]{32}$")
        self.http("POST", "/v1/report", {"checkId": check_id, "source": source,
                                         "handle": handle})
        return check_id

    def dcgm_reports(self, check_id):
        record = self.http("GET", f"/v1/checks/{check_id}")
        return [r for r in record.get("reports", []) if r["source"] == "MEASUREMENT_SOURCE_DCGM"]

    def wait_for_reports(self, check_id, count):
        return wait_for(f"{count} DCGM report(s) of check {check_id}",
                        lambda: (lambda r: r if len(r) >= count else None)(
                            self.dcgm_reports(check_id)),
                        diagnostics=self.server_log)

    @staticmethod
    def peaks(report):
        """{device: bytes} of a stored report."""
        return {m["device"]: int(m["deviceUsedBytes"]) for m in report["ranks"]}

    def test_slurm_and_kubernetes_jobs_get_their_gpus_peaks(self):
        slurm = self.checked_job({"slurmJobId": SLURM_JOB}, "MEASUREMENT_SOURCE_SLURM")
        kubernetes = self.checked_job(
            {"kubernetesNamespace": NAMESPACE, "kubernetesWorkload": WORKLOAD},
            "MEASUREMENT_SOURCE_KUBERNETES")

        (first,) = self.wait_for_reports(slurm, 1)
        self.assertEqual(first["reporter"], "dcgm")
        self.assertEqual(first.get("outcome", "JOB_OUTCOME_UNSPECIFIED"),
                         "JOB_OUTCOME_UNSPECIFIED")
        # MiB x 2^20; 39000.5 MiB is 40894988288 bytes. Job 999's GPU is not
        # there.
        self.assertEqual(self.peaks(first), {"node1/0": 40000 * MIB, "node1/1": 41000 * MIB,
                                             "node2/0": 40894988288})
        (pods,) = self.wait_for_reports(kubernetes, 1)
        # Only the workload's pods in its namespace: not llamaXpretrain-...,
        # not team-b's.
        self.assertEqual(self.peaks(pods), {"llama.pretrain-worker-0/0": 50000 * MIB,
                                            "llama.pretrain-worker-1/0": 51000 * MIB})

        # A peak rises on node1's GPU 0: a second report, every device's
        # largest in it. The rounds between (one a second) found nothing new
        # and added nothing.
        self.exporter.set(bare_metal("node1", 0, SLURM_JOB), 45000)
        reports = self.wait_for_reports(slurm, 2)
        self.assertEqual(len(reports), 2, reports)
        self.assertEqual(self.peaks(reports[1]), {"node1/0": 45000 * MIB,
                                                  "node1/1": 41000 * MIB,
                                                  "node2/0": 40894988288})
        # The same GPU lower again changes nothing: the next report (when
        # node2's GPU 0 rises) still holds node1/0's 45000 MiB.
        self.exporter.set(bare_metal("node1", 0, SLURM_JOB), 100)
        self.prometheus.wait_for(
            f'DCGM_FI_DEV_FB_USED{{hpc_job="{SLURM_JOB}",hostname="node1",gpu="0"}} == 100')
        self.exporter.set(bare_metal("node2", 0, SLURM_JOB), 42000)
        reports = self.wait_for_reports(slurm, 3)
        self.assertEqual(len(reports), 3, reports)
        self.assertEqual(self.peaks(reports[2]), {"node1/0": 45000 * MIB,
                                                  "node1/1": 41000 * MIB,
                                                  "node2/0": 42000 * MIB})
        self.assertEqual(len(self.dcgm_reports(kubernetes)), 1)
        # Every query succeeded: a round logs its failures.
        self.assertNotRegex(self.server.output(), r"msg=dcgm_round .*failed=[1-9]")

    def test_check_without_handle_gets_no_dcgm_report(self):
        answer = self.http("POST", "/v1/check", {
            "job": {"megatron": {"preset": "llama3-8b", "numGpus": 8,
                                 "args": "--seq-length 4096 --micro-batch-size 1"}},
            "gpuName": "H100"})
        # A job with a handle checked after it is reported: the reader's
        # rounds have run past this check by then.
        later = self.checked_job({"slurmJobId": SLURM_JOB}, "MEASUREMENT_SOURCE_SLURM")
        self.wait_for_reports(later, 1)
        self.assertEqual(self.dcgm_reports(answer["checkId"]), [])


def main():
    global OPTIONS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--prometheus", default="/usr/bin/prometheus")
    OPTIONS, rest = parser.parse_known_args()
    if not os.access(OPTIONS.prometheus, os.X_OK):
        print(f"skipped: {OPTIONS.prometheus} is not installed")
        sys.exit(python_client_server.SKIP)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
