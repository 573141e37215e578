#!/usr/bin/env python3
"""The README stays true: at most 6 KB for a newcomer; its install step and
test command are the ones CI runs (.ci/run); its links resolve; and its
shipped example, run with the built binary, prints the lines the README shows.

Usage: readme_test.py --source-dir DIR --oomguard BINARY
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

MAX_BYTES = 6 * 1024


def fenced_blocks(text):
    return re.findall(r"^```\n(.*?)^```$", text, flags=re.S | re.M)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--oomguard", required=True)
    args = parser.parse_args()
    root = args.source_dir
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    ci = open(os.path.join(root, ".ci", "run"), encoding="utf-8").read()
    failures = []

    size = len(readme.encode("utf-8"))
    if size > MAX_BYTES:
        failures.append(f"README.md is {size} bytes, over {MAX_BYTES}")

    blocks = fenced_blocks(readme)
    if len(blocks) < 3:
        sys.exit(f"README.md: expected the set-up command, the test command and an output; "
                 f"found {len(blocks)} code blocks")
    setup, tests, output = blocks[0].strip(), blocks[1].strip(), blocks[2]
    # The test command: CI runs it after the same install step.
    install, _, test_command = tests.partition(" && ")
    if install != "bash .ci/install test":
        failures.append(f"the test command does not start with the tests' install: {install!r}")
    if test_command not in ci.splitlines():
        failures.append(f".ci/run does not run the README's test command: {test_command!r}")
    if "bash .ci/install test" not in ci:
        failures.append(".ci/run does not install with .ci/install test")
    # The set-up command: the build's install, a build, then the example.
    steps = setup.split(" && ")
    if steps[0] != "bash .ci/install":
        failures.append(f"the set-up command does not start with .ci/install: {steps[0]!r}")
    run = steps[-1]
    if not run.startswith("./build-release/tools/oomguard estimate "):
        failures.append(f"the set-up command does not end in the example's estimate: {run!r}")

    # Relative links.
    for target in re.findall(r"\]\(([^)#:]+)\)", readme):
        if not os.path.exists(os.path.join(root, target)):
            failures.append(f"link to {target} does not exist")

    # The example, with this build's binary: every line the README shows is
    # printed (the README leaves ranks out with "...").
    words = shlex.split(run.replace("$(cat examples/deepseek_v3_256gpu.args)", ""))[1:]
    with open(os.path.join(root, "examples", "deepseek_v3_256gpu.args"), encoding="utf-8") as f:
        words += f.read().split()
    result = subprocess.run([os.path.abspath(args.oomguard)] + words, cwd=root, capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 0:
        failures.append(f"the example exits {result.returncode}: {result.stderr.strip()}")
    printed = result.stdout.splitlines()
    for line in output.splitlines():
        if line.strip() in ("", "...") or line in printed:
            continue
        failures.append(f"the example does not print the README's line {line!r}")

    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(failures)} failed, README.md {size} bytes")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
