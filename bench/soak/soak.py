#!/usr/bin/env python3
"""Soak of `oomguard serve` (a benchmark, not a test; see README.md).

Starts the real server (gRPC, metrics and the HTTPS webhook on loopback,
response cache off so every valid call estimates), learns the answer of
every valid request made alone, then for DURATION seconds keeps it
saturated with a mix of:
  - valid Checks (many distinct jobs): each answer must be byte-identical to
    the one the same request got alone;
  - invalid Checks (a bad field): INVALID_ARGUMENT naming the field;
  - oversized requests (over --max_request_bytes): RESOURCE_EXHAUSTED;
  - deadline-starved Checks (1 ms): DEADLINE_EXCEEDED, or the right answer;
  - webhook AdmissionReviews over HTTPS: the same answer as alone;
  - Slurm-hook calls: `oomguard check --server ... --job-file` processes,
    as deploy/slurm/job_submit.lua runs them: the same exit code as alone.
It samples the server's RSS, then sends SIGTERM while the load is still
running and measures how long the drain takes (must be within the grace).
Prints one JSON object and exits 1 on any wrong answer, crash or late exit.
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import grpc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    p.add_argument("--workers", type=int, default=12, help="client threads (gRPC)")
    p.add_argument("--grace", type=float, default=5.0, help="server --shutdown_grace, s")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


class Stubs:
    def __init__(self, build_dir):
        sys.path.insert(0, os.path.join(build_dir, "clients", "python", "gen"))
        from oomguard.v1 import admission_pb2, service_pb2, service_pb2_grpc  # noqa: E402
        self.admission, self.service, self.grpc = admission_pb2, service_pb2, service_pb2_grpc


def valid_requests(stubs, rng, count):
    """Distinct valid CheckRequests: presets x parallel layouts x batch shapes."""
    shapes = [
        ("deepseek-v3", 1024, "--tensor-model-parallel-size 2 --expert-model-parallel-size 64 "
         "--use-distributed-optimizer --sequence-parallel"),
        ("qwen3-235b-a22b", 256, "--pipeline-model-parallel-size 2 "
         "--expert-model-parallel-size 8 --use-distributed-optimizer"),
        ("llama3-70b", 64, "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
         "--use-distributed-optimizer --sequence-parallel"),
        ("llama3-8b", 8, "--tensor-model-parallel-size 1 --use-distributed-optimizer"),
        ("qwen3-30b-a3b", 32, "--expert-model-parallel-size 8 --use-distributed-optimizer"),
    ]
    gpus = ["H100-SXM-80GB", "H200-141GB", "A100-SXM-80GB", "A100-40GB"]
    seen, out = set(), []
    while len(out) < count:
        preset, n, args = rng.choice(shapes)
        mbs = rng.choice([1, 2, 4])
        seq = rng.choice([2048, 4096, 8192])
        recompute = rng.choice(["", " --recompute-granularity full --recompute-method uniform "
                                "--recompute-num-layers 1", " --recompute-granularity selective"])
        line = f"{args} --micro-batch-size {mbs} --seq-length {seq} --global-batch-size 4096" \
               f"{recompute}"
        gpu = rng.choice(gpus)
        if (preset, line, gpu) in seen:
            continue
        seen.add((preset, line, gpu))
        r = stubs.admission.CheckRequest(gpu_name=gpu)
        r.job.megatron.preset = preset
        r.job.megatron.args = line
        r.job.megatron.num_gpus = n
        out.append(r)
    return out


def invalid_request(stubs, rng):
    r = stubs.admission.CheckRequest(gpu_name="H100-SXM-80GB")
    r.job.megatron.preset = "llama3-8b"
    r.job.megatron.num_gpus = 8
    bad = rng.choice([("--tensor-model-parallel-size 3", "TP x PP x CP = 3 x 1 x 1"),
                      ("--micro-batch-size 0", "micro_batch_size"),
                      ("--seq-length -5", "seq-length")])
    r.job.megatron.args = bad[0]
    return r, bad[1]


class Server:
    def __init__(self, build_dir, grace, work):
        binary = os.path.join(build_dir, "tools", "oomguard")
        self.binary = binary
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        self.cert = cert
        self.log = open(os.path.join(work, "server.log"), "w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [binary, "serve", "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
             "--webhook_address=127.0.0.1:0", f"--webhook_tls_cert={cert}",
             f"--webhook_tls_key={key}", "--response_cache_mb=0", "--check_result_cache_mb=0",
             "--log_requests=false",
             f"--shutdown_grace={grace}s"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.log.seek(0)
            text = self.log.read()
            grpc_port = re.search(r"grpc_port=(\d+)", text)
            webhook_port = re.search(r"webhook_port=(\d+)", text)
            if grpc_port and webhook_port:
                self.grpc_port, self.webhook_port = int(grpc_port[1]), int(webhook_port[1])
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the server did not start:\n" + text)

    def rss_mib(self):
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0


def main():
    args = parse_args()
    rng = random.Random(args.seed)
    stubs = Stubs(args.build_dir)
    work = tempfile.mkdtemp(prefix="oomguard-soak-")
    server = Server(args.build_dir, args.grace, work)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}",
                                    options=[("grpc.max_send_message_length", 8 << 20)])
    stub = stubs.grpc.OomguardStub(channel)
    ssl_context = ssl.create_default_context(cafile=server.cert)
    webhook_url = f"https://127.0.0.1:{server.webhook_port}/validate"

    # The answers alone (every request is valid: one that is not fails here).
    requests = valid_requests(stubs, rng, 120)
    alone = [stub.Check(r, timeout=30).SerializeToString() for r in requests]
    reviews = []
    for name in ("pod_deepseek_v3_8gpu", "pytorchjob_deepseek_v3_1024gpu",
                 "job_llama3_8b_8gpu", "pod_not_training"):
        with open(os.path.join(ROOT, "tests", "data", "admission", name + ".json"), "rb") as f:
            body = f.read()
        reviews.append((body, post_review(webhook_url, body, ssl_context)))
    scripts = []
    for i, r in enumerate(requests[:8]):
        path = os.path.join(work, f"job{i}.sh")
        with open(path, "w", encoding="utf-8") as f:
            # The job file deploy/slurm/job_submit.lua writes (tools/job_envelope.h).
            f.write(f"oomguard-job 1\ngpus={r.job.megatron.num_gpus}\ngpu={r.gpu_name}\n\n"
                    f"#!/bin/bash\n#OOMGUARD preset={r.job.megatron.preset}\n"
                    f"torchrun pretrain_gpt.py {r.job.megatron.args}\n")
        scripts.append((path, run_hook(server, path)))

    stop = threading.Event()
    lock = threading.Lock()
    counts = {"valid": 0, "invalid": 0, "oversized": 0, "starved": 0, "webhook": 0,
              "slurm_hook": 0, "unavailable_during_drain": 0}
    wrong, latencies = [], []

    def record_wrong(what):
        if draining.is_set():  # Calls cut by the SIGTERM drain are not answers.
            with lock:
                counts["unavailable_during_drain"] += 1
            return
        with lock:
            wrong.append(what)

    def grpc_worker(seed):
        local = random.Random(seed)
        while not stop.is_set():
            kind = local.random()
            try:
                if kind < 0.70:
                    i = local.randrange(len(requests))
                    t0 = time.perf_counter()
                    got = stub.Check(requests[i], timeout=30).SerializeToString()
                    dt = time.perf_counter() - t0
                    with lock:
                        counts["valid"] += 1
                        latencies.append(dt)
                    if got != alone[i]:
                        record_wrong(f"valid request {i}: answer differs from the one alone")
                elif kind < 0.82:
                    r, field = invalid_request(stubs, local)
                    try:
                        stub.Check(r, timeout=30)
                        record_wrong("invalid request answered OK")
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.INVALID_ARGUMENT or field not in e.details():
                            record_wrong(f"invalid request: {e.code()} {e.details()[:120]}")
                    with lock:
                        counts["invalid"] += 1
                elif kind < 0.88:
                    r = stubs.admission.CheckRequest(gpu_name="H100-SXM-80GB")
                    r.job.megatron.preset = "llama3-8b"
                    r.job.megatron.num_gpus = 8
                    r.job.megatron.args = "--micro-batch-size 1 " + "x" * (2 << 20)
                    try:
                        stub.Check(r, timeout=30)
                        record_wrong("oversized request answered OK")
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                            record_wrong(f"oversized request: {e.code()} {e.details()[:120]}")
                    with lock:
                        counts["oversized"] += 1
                else:
                    i = local.randrange(len(requests))
                    try:
                        got = stub.Check(requests[i], timeout=0.001).SerializeToString()
                        if got != alone[i]:
                            record_wrong(f"starved request {i}: wrong answer")
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                            record_wrong(f"starved request: {e.code()} {e.details()[:120]}")
                    with lock:
                        counts["starved"] += 1
            except grpc.RpcError as e:
                if stop.is_set() or draining.is_set():
                    with lock:
                        counts["unavailable_during_drain"] += 1
                    return
                record_wrong(f"valid request failed: {e.code()} {e.details()[:120]}")

    def webhook_worker(seed):
        local = random.Random(seed)
        while not stop.is_set():
            body, expected = local.choice(reviews)
            try:
                got = post_review(webhook_url, body, ssl_context)
            except OSError as e:
                if draining.is_set():
                    return
                record_wrong(f"webhook: {e}")
                continue
            if got != expected:
                record_wrong("webhook answer differs from the one alone")
            with lock:
                counts["webhook"] += 1

    def slurm_worker(seed):
        local = random.Random(seed)
        while not stop.is_set():
            path, expected = local.choice(scripts)
            got = run_hook(server, path)
            if draining.is_set():
                return
            if got != expected:
                record_wrong(f"slurm hook exit {got}, alone {expected}")
            with lock:
                counts["slurm_hook"] += 1

    draining = threading.Event()
    rss = [("start", 0.0, server.rss_mib())]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.workers + 3) as pool:
        futures = [pool.submit(grpc_worker, args.seed * 100 + i) for i in range(args.workers)]
        futures += [pool.submit(webhook_worker, args.seed * 100 + 50 + i) for i in range(2)]
        futures.append(pool.submit(slurm_worker, args.seed * 100 + 60))
        while time.monotonic() - start < args.duration:
            time.sleep(5)
            rss.append(("t", round(time.monotonic() - start, 1), server.rss_mib()))
        # SIGTERM while the load is still on.
        draining.set()
        sigterm_at = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            code = server.process.wait(timeout=args.grace + 10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            code = "killed"
        exit_s = time.monotonic() - sigterm_at
        stop.set()
        for f in futures:
            f.result()

    latencies.sort()
    result = {
        "duration_s": args.duration,
        "counts": counts,
        "valid_per_s": round(counts["valid"] / args.duration, 1),
        "valid_latency_ms": {
            "p50": round(1000 * latencies[len(latencies) // 2], 2) if latencies else None,
            "p99": round(1000 * latencies[int(len(latencies) * 0.99)], 2) if latencies else None,
        },
        "rss_mib": {"start": round(rss[0][2], 1), "end": round(rss[-1][2], 1),
                    "max": round(max(r[2] for r in rss), 1),
                    # Growth over the second half of the run: a leak keeps
                    # climbing there, warm-up (thread caches, arenas) does not.
                    "second_half_growth": round(rss[-1][2] - rss[(len(rss) + 1) // 2][2], 1),
                    # Least-squares slope over the second half, MiB per minute:
                    # a leak is a steady positive slope, noise is not.
                    "second_half_slope_per_min": round(60 * slope(rss[(len(rss) + 1) // 2:]), 2),
                    "samples": [[r[1], round(r[2], 1)] for r in rss]},
        "wrong_answers": len(wrong),
        "wrong_examples": sorted(set(w[:100] for w in wrong))[:5],
        "sigterm_exit_code": code,
        "sigterm_to_exit_s": round(exit_s, 2),
        "grace_s": args.grace,
    }
    print(json.dumps(result, indent=2))
    ok = not wrong and code == 0 and exit_s <= args.grace + 1
    return 0 if ok else 1


def slope(samples):
    """Least-squares slope of RSS over time, MiB per second, of (_, t, mib) samples."""
    if len(samples) < 2:
        return 0.0
    ts = [t for _, t, _ in samples]
    ms = [m for _, _, m in samples]
    mean_t, mean_m = sum(ts) / len(ts), sum(ms) / len(ms)
    var = sum((t - mean_t) ** 2 for t in ts)
    return sum((t - mean_t) * (m - mean_m) for t, m in zip(ts, ms)) / var if var else 0.0


def post_review(url, body, ssl_context):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10, context=ssl_context) as reply:
        answer = json.loads(reply.read())
    # The uid is echoed; the decision and its messages are what must agree.
    return json.dumps(answer.get("response", {}), sort_keys=True)


def run_hook(server, path):
    argv = [server.binary, "check", "--server", f"127.0.0.1:{server.grpc_port}",
            "--deadline-ms", "5000", "--job-file", path]
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
