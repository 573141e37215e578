#!/usr/bin/python3
"""Checks of deploy/systemd/oomguard.service.

    deploy_systemd_test.py verify    --oomguard BUILD/tools/oomguard
    deploy_systemd_test.py execstart --oomguard BUILD/tools/oomguard

verify: `systemd-analyze verify` of the unit (ExecStart pointed at the built
binary, since /usr/local/bin/oomguard is not installed here) reports nothing
at all: systemd-analyze exits 0 even for unknown keys or bad values, so any
output fails. Exits 77 (skipped) when systemd-analyze is not installed.

execstart: the unit's ExecStart, expanded the way systemd expands it (its
Environment= defaults, then deploy/systemd/oomguard.default as the
EnvironmentFile), with the built binary and loopback port 0, starts a
server that listens, and SIGTERM (the unit's KillSignal) makes it exit 0
well within TimeoutStopSec, which must exceed --shutdown_grace.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
UNIT = os.path.join(SOURCE_DIR, "deploy", "systemd", "oomguard.service")
DEFAULTS = os.path.join(SOURCE_DIR, "deploy", "systemd", "oomguard.default")
INSTALLED = "/usr/local/bin/oomguard"
SKIP = 77


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def unit_settings(text):
    """[(section, key, value)] with line continuations joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    section, out = None, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def environment_file(path):
    env = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            key, _, value = line.partition("=")
            env[key.strip()] = " ".join(shlex.split(value))
    return env


def seconds(value):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|min)?", value)
    if not match:
        fail(f"cannot read the duration {value!r}")
    scale = {"ms": 0.001, "s": 1, None: 1, "min": 60}[match.group(2)]
    return float(match.group(1)) * scale


def expand(command, env):
    """systemd's ExecStart expansion: ${VAR} stays one word, $VAR splits."""
    words = []
    for word in shlex.split(command):
        whole = re.fullmatch(r"\$([A-Za-z_]\w*)", word)
        if whole:
            words += env.get(whole.group(1), "").split()
            continue
        words.append(re.sub(r"\$\{([A-Za-z_]\w*)\}", lambda m: env.get(m.group(1), ""), word))
    return words


def check_verify(oomguard):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        print("skipped: systemd-analyze is not installed")
        return SKIP
    with open(UNIT, encoding="utf-8") as f:
        text = f.read()
    if INSTALLED not in text:
        fail(f"the unit does not run {INSTALLED}")
    with tempfile.TemporaryDirectory() as tmp:
        unit = os.path.join(tmp, "oomguard.service")
        with open(unit, "w", encoding="utf-8") as f:
            f.write(text.replace(INSTALLED, os.path.abspath(oomguard)))
        result = subprocess.run([analyze, "verify", unit], capture_output=True, text=True,
                                check=False, timeout=60)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or output:
        fail(f"systemd-analyze verify exited {result.returncode}:\n{output}")
    print("ok: systemd-analyze verify reports nothing")
    return 0


def check_execstart(oomguard):
    with open(UNIT, encoding="utf-8") as f:
        settings = unit_settings(f.read())
    service = {}
    env = {}
    for section, key, value in settings:
        if section == "Service":
            service.setdefault(key, []).append(value)
            if key == "Environment":
                name, _, default = value.partition("=")
                env[name] = default
    for key, want in (("Type", "simple"), ("DynamicUser", "yes"), ("User", "oomguard"),
                      ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                      ("ProtectHome", "yes"), ("PrivateTmp", "yes"), ("KillSignal", "SIGTERM"),
                      ("Restart", "on-failure"), ("EnvironmentFile", "-/etc/default/oomguard")):
        if service.get(key) != [want]:
            fail(f"{key}={service.get(key)}, want {want}")
    for key in ("MemoryMax", "LimitNOFILE", "TimeoutStopSec"):
        if key not in service:
            fail(f"{key} is not set")
    env.update(environment_file(DEFAULTS))
    argv = expand(service["ExecStart"][0], env)
    if argv[:2] != [INSTALLED, "serve"]:
        fail(f"ExecStart runs {argv[:2]}, want {INSTALLED} serve")
    flags = dict(a[2:].split("=", 1) for a in argv[2:] if a.startswith("--") and "=" in a)
    for flag in ("grpc_address", "metrics_address", "shutdown_grace", "threads"):
        if flag not in flags:
            fail(f"ExecStart (with {DEFAULTS}) lacks --{flag}: {argv}")
    if not flags["grpc_address"].startswith("127.0.0.1:") or \
            not flags["metrics_address"].startswith("127.0.0.1:"):
        fail(f"the default addresses are not loopback: {flags}")
    grace = seconds(flags["shutdown_grace"])
    stop_timeout = seconds(service["TimeoutStopSec"][0])
    if not grace < stop_timeout:
        fail(f"TimeoutStopSec={stop_timeout}s must exceed --shutdown_grace={grace}s, or systemd "
             "kills the server while calls drain")

    # Run it: the built binary, port 0 instead of the fixed ports.
    argv = [os.path.abspath(oomguard)] + [
        re.sub(r"^(--(?:grpc|metrics)_address=127\.0\.0\.1):\d+$", r"\1:0", a) for a in argv[1:]]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            output = ""
            while "msg=listening" not in output:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    fail(f"{argv} did not start (exit {process.poll()}):\n"
                         f"{log.read().decode(errors='replace')}")
                time.sleep(0.01)
                log.seek(0)
                output = log.read().decode(errors="replace")
            if "threads=4" not in output:
                fail(f"OOMGUARD_OPTS (--threads=4) did not reach the server:\n{output}")
            start = time.monotonic()
            process.send_signal(signal.SIGTERM)
            code = process.wait(stop_timeout)
            took = time.monotonic() - start
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if code != 0:
        fail(f"SIGTERM: exit {code}, want 0")
    print(f"ok: {' '.join(argv[1:])} listened and exited 0 {took:.2f}s after SIGTERM "
          f"(TimeoutStopSec {stop_timeout:g}s, --shutdown_grace {grace:g}s)")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=("verify", "execstart"))
    parser.add_argument("--oomguard", required=True, help="the built oomguard binary")
    options = parser.parse_args()
    if options.check == "verify":
        return check_verify(options.oomguard)
    return check_execstart(options.oomguard)


if __name__ == "__main__":
    sys.exit(main())
