#!/usr/bin/python3
"""Tests of clients/python as a pip package: `pip install ./clients/python`
into a fresh virtual environment, offline, then oomguard_client imported from
outside the source tree calls a live `oomguard serve` (Estimate and Check).

    /usr/bin/python3 tests/clients/python_package_test.py \
        --server-binary BUILD/tools/oomguard_server_for_test

The venv is made with --system-site-packages so that Debian's python3-grpcio
and python3-protobuf serve as the package's dependencies; pip runs with
--no-index --no-build-isolation (nothing downloaded: setuptools and wheel are
Debian's too). The package is built from a copy of clients/python and proto/
laid out as in the checkout, so the build leaves nothing in the source tree.
Exits 77 (skipped) only when /usr/bin/python3 has no grpc module or cannot
make a venv with pip (python3-grpcio, python3-venv).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "testing"))

import python_client_server  # pylint: disable=wrong-import-position

OPTIONS = None

# Run by the venv's python from a directory outside the sources: imports the
# installed package, checks where it and its stubs come from, calls the server
# (Estimate, Check, an invalid field, an RL job's check).
PROBE = r'''
import json, os, sys
import oomguard_client
from oomguard_client import Client, OomguardError
import oomguard.v1.job_pb2, oomguard.v1.service_pb2_grpc, oomguard.v1.error_pb2
out = {"package": oomguard_client.__file__, "stubs": oomguard.v1.job_pb2.__file__,
       "error_stubs": oomguard.v1.error_pb2.__file__}
args = ("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
        "--use-distributed-optimizer --seq-length 4096 --micro-batch-size 1 "
        "--global-batch-size 128 --recompute-granularity full --recompute-method uniform "
        "--recompute-num-layers 1")
with Client(sys.argv[1], timeout=30.0) as oomguard:
    estimate = oomguard.estimate(args=args, num_gpus=8, preset="llama3-8b")
    out["estimate_ranks"] = len(estimate.ranks)
    out["estimate_peak"] = estimate.peak_bytes
    check = oomguard.check(args=args, num_gpus=8, preset="llama3-8b", gpu="H100-SXM-80GB")
    out["verdict"] = check.verdict
    out["check_peak"] = check.peak_bytes
    try:
        oomguard.check(args=args, num_gpus=0, preset="llama3-8b")
    except OomguardError as error:
        out["error"] = [error.code_name, error.field, error.message]
# An RL job's pre-flight (oomguard_client.rl), from a veRL config as a dict.
from oomguard_client import rl
verl = {"actor_rollout_ref": {"model": {"path": "Qwen/Qwen3-8B"},
                              "actor": {"megatron": {"tensor_model_parallel_size": 2},
                                        "use_dynamic_bsz": True,
                                        "ppo_max_token_len_per_gpu": 6144},
                              "rollout": {"name": "vllm", "tensor_model_parallel_size": 2}},
        "data": {"max_prompt_length": 1024, "max_response_length": 2048},
        "trainer": {"nnodes": 1, "n_gpus_per_node": 8}}
out["rl_phases"] = [p.phase for p in rl.check(verl, server=sys.argv[1], timeout=30.0).phases]
print(json.dumps(out))
'''


def _env():
    """The environment of the venv's commands: nothing from the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "OOMGUARD_PROTO_DIR", "OOMGUARD_STUBS_DIR",
                        "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="oomguard-pip-")
        src = os.path.join(cls.work, "src")
        shutil.copytree(os.path.join(SOURCE_DIR, "clients", "python"),
                        os.path.join(src, "clients", "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        shutil.copytree(os.path.join(SOURCE_DIR, "proto"), os.path.join(src, "proto"))
        cls.venv = os.path.join(cls.work, "venv")
        cls.python = os.path.join(cls.venv, "bin", "python")
        made = subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages",
                               cls.venv], capture_output=True, text=True, check=False, env=_env())
        if made.returncode != 0:
            raise unittest.SkipTest(f"python3 -m venv failed (python3-venv?): {made.stderr}")
        cls.install = subprocess.run(
            [cls.python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
             "./clients/python"],
            cwd=src, capture_output=True, text=True, check=False, timeout=300, env=_env())
        cls.server = python_client_server.Server(OPTIONS.server_binary)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        output = cls.server.output()
        cls.server.close()
        shutil.rmtree(cls.work, ignore_errors=True)
        if code != 0:
            raise AssertionError(f"oomguard serve exited {code} after SIGTERM:\n{output}")

    def test_installed_package_calls_a_live_server(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        elsewhere = os.path.join(self.work, "elsewhere")
        os.makedirs(elsewhere, exist_ok=True)
        env = _env()
        # No generator to fall back on: the stubs must come with the package.
        env["OOMGUARD_PROTO_DIR"] = os.path.join(self.work, "no-protos")
        probe = subprocess.run([self.python, "-c", PROBE, self.server.address], cwd=elsewhere,
                               capture_output=True, text=True, check=False, timeout=120, env=env)
        self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
        out = json.loads(probe.stdout)
        site = os.path.join(self.venv, "lib")
        for key in ("package", "stubs", "error_stubs"):
            self.assertTrue(out[key].startswith(site + os.sep), f"{key}: {out[key]}")
            self.assertIn("site-packages", out[key])
        self.assertEqual(out["estimate_ranks"], 1)
        self.assertGreater(out["estimate_peak"], 10 * 1024 ** 3)
        self.assertEqual(out["verdict"], "FITS")
        self.assertEqual(out["check_peak"], out["estimate_peak"])
        code_name, field, message = out["error"]
        self.assertEqual(code_name, "INVALID_ARGUMENT")
        self.assertEqual(field, "job.megatron.num_gpus")  # From the status details.
        self.assertIn("num_gpus", message)
        self.assertEqual(out["rl_phases"][0], "generate")
        self.assertEqual(out["rl_phases"][-1], "actor_update")


def main():
    global OPTIONS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    OPTIONS, rest = parser.parse_known_args()
    try:
        import grpc  # pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        print(f"skipped: {sys.executable} has no grpc module (apt-get install python3-grpcio)")
        sys.exit(python_client_server.SKIP)
    result = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False).result
    if result.skipped and not result.failures and not result.errors:
        sys.exit(python_client_server.SKIP)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
