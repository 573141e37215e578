#!/usr/bin/env python3
"""The curl examples in the docs work (issue 25, item 11): each one that sends
a body sends it as JSON (--data-binary, Content-Type: application/json), and
each one, run with the real curl against `oomguard serve --http_address`,
gets HTTP 200. A file an example names (@check.json) is written as the
inline example's request, its args padded past 8 KiB: `curl -d` sent form
encoding, cut at 8 KiB with a 413. The same file sent with -d alone gets 415.

Fails when curl is not installed (`.ci/install test` installs it).

Usage: curl_examples_test.py --source-dir DIR --oomguard BINARY
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

DOCS = ["README.md", "docs/*.md", "deploy/**/*.md", "http/page/*"]
DATA_OPTIONS = ("-d", "--data", "--data-raw", "--data-ascii", "--data-urlencode", "--data-binary",
                "-F", "--form", "--json")
JSON_HEADER = "content-type: application/json"


def curl_commands(text):
    """Each curl command in fenced code blocks, as its words (quoted parts may span lines)."""
    commands = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```$", text, flags=re.S | re.M):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].lstrip().startswith("curl "):
                i += 1
                continue
            command = lines[i]
            i += 1
            while True:
                try:
                    words = shlex.split(command)
                    break
                except ValueError:  # An open quote: the command goes on.
                    if i == len(lines):
                        raise
                    command += "\n" + lines[i]
                    i += 1
            commands.append(words)
    return commands


def json_problems(words):
    """Why a command that sends a body does not send it as JSON; [] when it does."""
    sent = [w for w in words if w.split("=")[0] in DATA_OPTIONS]
    if not sent:
        return []
    problems = []
    if any(w != "--data-binary" for w in sent):
        problems.append(f"sends its body with {sent}: use --data-binary")
    headers = [words[i + 1].lower() for i, w in enumerate(words[:-1]) if w in ("-H", "--header")]
    if not any(h.replace(" ", "").startswith(JSON_HEADER.replace(" ", "")) for h in headers):
        problems.append("no -H 'Content-Type: application/json'")
    return problems


def start_server(oomguard):
    server = subprocess.Popen(
        [oomguard, "serve", "--grpc_address=127.0.0.1:0", "--metrics_address=",
         "--http_address=127.0.0.1:0", "--log_requests=false"],
        stderr=subprocess.PIPE, text=True)
    give_up = time.time() + 30
    while time.time() < give_up:
        line = server.stderr.readline()
        match = re.search(r"http_port=(\d+)", line)
        if match:
            return server, int(match.group(1))
        if not line and server.poll() is not None:
            break
    server.kill()
    sys.exit("oomguard serve did not log its http_port")


def run_curl(words, port, cwd):
    """HTTP status and body of `words` run against 127.0.0.1:`port`."""
    words = [re.sub(r"^(http://)?(localhost|127\.0\.0\.1):8080", f"127.0.0.1:{port}", w)
             for w in words]
    out = os.path.join(cwd, "answer")
    result = subprocess.run(words + ["-o", out, "-w", "%{http_code}"], cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    body = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
    return result.returncode, result.stdout, body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--oomguard", required=True)
    args = parser.parse_args()
    failures = []
    examples = []
    for pattern in DOCS:
        for path in sorted(glob.glob(os.path.join(args.source_dir, pattern), recursive=True)):
            if not os.path.isfile(path):
                continue
            text = open(path, encoding="utf-8", errors="replace").read()
            name = os.path.relpath(path, args.source_dir)
            for words in curl_commands(text):
                examples.append((name, words))
                failures += [f"{name}: {shlex.join(words)}: {p}" for p in json_problems(words)]
    if not any("--data-binary" in words for _, words in examples):
        failures.append("no curl example sends a body: the docs lost their examples?")

    if shutil.which("curl") is None:
        # A failure, not a skip: `.ci/install test` installs curl.
        failures.append("curl is not installed (.ci/install test installs it): the examples were not run")
        for failure in failures:
            print("FAIL:", failure)
        sys.exit(1)

    server, port = start_server(os.path.abspath(args.oomguard))
    try:
        with tempfile.TemporaryDirectory() as cwd:
            # The file examples name: the inline example's request, padded past 8 KiB.
            inline = [json.loads(w) for _, words in examples for w in words if w.startswith("{")]
            if not inline:
                failures.append("no inline JSON example to write @check.json from")
            else:
                request = inline[0]
                request["job"]["megatron"]["args"] += " " * 9000
                with open(os.path.join(cwd, "check.json"), "w", encoding="utf-8") as f:
                    json.dump(request, f, indent=2)
            for name, words in examples:
                code, status, body = run_curl(words, port, cwd)
                if code != 0 or status != "200":
                    failures.append(f"{name}: {shlex.join(words)}: exit {code}, HTTP {status}: "
                                    f"{body[:200]}")
                else:
                    print(f"ok {name}: {shlex.join(words)[:80]}... HTTP 200, {len(body)} bytes")
            # What -d alone would have done: a clear 415, whatever the size.
            code, status, body = run_curl(
                ["curl", "-s", "localhost:8080/v1/check", "-d", "@check.json"], port, cwd)
            if status != "415" or "application/x-www-form-urlencoded" not in body:
                failures.append(f"curl -d @check.json: HTTP {status}, {body[:200]}; want 415")
            else:
                print(f"ok curl -d @check.json: HTTP 415 {body[:100]}")
    finally:
        server.terminate()
        server.wait(timeout=30)

    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(failures)} failed, {len(examples)} curl examples")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
