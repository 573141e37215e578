#!/usr/bin/python3
"""Tests of oomguard_client.rl (the pre-flight of an RL job) and of
examples/rl/verl_preflight.py against the real `oomguard serve`.

    /usr/bin/python3 tests/clients/python_rl_preflight_test.py \\
        --server-binary BUILD/tools/oomguard_server_for_test

CTest (python_rl_preflight_test, labels integration;python) runs it with
PYTHONPATH=BUILD/clients/python/gen:clients/python. Exits 77 (skipped) only
when /usr/bin/python3 has no grpc module (python3-grpcio).
"""

import argparse
import io
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import types
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "testing"))
sys.path.insert(1, os.path.join(SOURCE_DIR, "clients", "python"))

import python_client_server  # pylint: disable=wrong-import-position

grpc = python_client_server.import_grpc()

from oomguard_client import Client, OomguardError, rl  # pylint: disable=wrong-import-position
from oomguard.v1 import rl_job_pb2  # pylint: disable=wrong-import-position,wrong-import-order

OPTIONS = None
SERVER = None
GIB = 1024 ** 3

# A small veRL job that fits: Qwen3-8B on 8 GPUs (tests/data/rl/).
FITS_YAML = os.path.join(SOURCE_DIR, "tests", "data", "rl", "verl_qwen3_8b_8gpu.yaml")
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "rl", "verl_preflight.py")
PHASES = ["generate", "weight_sync", "log_prob", "ref_log_prob", "critic", "actor_update"]

# The shipped veRL example (examples/rl/): seed 000's RL story, Qwen3-30B-A3B
# on 4 x 8 H100s at prompt 2k + response 8k. It does not fit: the engine
# cannot start beside what the trainer keeps.
SHIPPED_YAML = os.path.join(SOURCE_DIR, "examples", "rl", "verl_qwen3_30b_a3b.yaml")

# FITS_YAML as a dict (the config itself, as a pipeline holds it).
FITS_DICT = {
    "data": {"max_prompt_length": 1024, "max_response_length": 2048},
    "actor_rollout_ref": {
        "hybrid_engine": True,
        "model": {"path": "Qwen/Qwen3-8B"},
        "actor": {
            "strategy": "megatron", "use_dynamic_bsz": True, "ppo_max_token_len_per_gpu": 6144,
            "ppo_mini_batch_size": 64, "use_kl_loss": True,
            "megatron": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1,
                         "param_offload": True, "grad_offload": True, "optimizer_offload": True,
                         "use_distributed_optimizer": True},
        },
        "ref": {"megatron": {"param_offload": True}},
        "rollout": {"name": "vllm", "tensor_model_parallel_size": 2,
                    "gpu_memory_utilization": 0.5, "n": 8, "log_prob_use_dynamic_bsz": True,
                    "log_prob_max_token_len_per_gpu": 6144},
    },
    "algorithm": {"adv_estimator": "grpo"},
    "trainer": {"nnodes": 1, "n_gpus_per_node": 8},
}


def setUpModule():  # pylint: disable=invalid-name
    global SERVER  # pylint: disable=global-statement
    SERVER = python_client_server.Server(OPTIONS.server_binary)


def tearDownModule():  # pylint: disable=invalid-name
    SERVER.close_checked()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text, executable=False):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    if executable:
        os.chmod(path, 0o755)
    return path


class RlJobTest(unittest.TestCase):
    """What preflight sends, from each form of the config (no server)."""

    def test_yaml_path_is_sent_as_written(self):
        for path in (FITS_YAML, pathlib.Path(FITS_YAML)):
            job = rl.rl_job(path)
            self.assertEqual(job.config_yaml, read(FITS_YAML))
            self.assertEqual(len(job.argv), 0)
            self.assertEqual(job.framework, rl_job_pb2.RL_FRAMEWORK_UNSPECIFIED)
            self.assertEqual(job.num_gpus, 0)
            self.assertEqual(job.WhichOneof("model"), None)

    def test_args_path_is_split_into_words(self):
        with tempfile.TemporaryDirectory() as work:
            path = write(os.path.join(work, "slime.args"),
                         "--colocate --max-tokens-per-gpu 9216 \\\n"
                         "  --rollout-function-path 'slime.rollout:generate'  # the default\n"
                         '--sglang-mem-fraction-static "0.5"\n')
            self.assertEqual(list(rl.rl_job(path).argv),
                             ["--colocate", "--max-tokens-per-gpu", "9216",
                              "--rollout-function-path", "slime.rollout:generate",
                              "--sglang-mem-fraction-static", "0.5"])
            write(path, "--colocate 'open\n")
            with self.assertRaises(ValueError) as raised:
                rl.rl_job(path)
            self.assertIn(path, str(raised.exception))

    def test_dict_is_sent_as_json_text(self):
        job = rl.rl_job(FITS_DICT)
        self.assertEqual(json.loads(job.config_yaml), FITS_DICT)
        # Any Mapping (an OmegaConf DictConfig is one), nested too.
        proxy = types.MappingProxyType({"trainer": types.MappingProxyType({"nnodes": 4}),
                                        "list": (1, 2)})
        self.assertEqual(json.loads(rl.rl_job(proxy).config_yaml),
                         {"trainer": {"nnodes": 4}, "list": [1, 2]})

    def test_open_file_and_words(self):
        self.assertEqual(rl.rl_job(io.StringIO("trainer:\n  nnodes: 4\n")).config_yaml,
                         "trainer:\n  nnodes: 4\n")
        self.assertEqual(list(rl.rl_job(["--perform-rl-step", "--seq-length", 4096]).argv),
                         ["--perform-rl-step", "--seq-length", "4096"])
        with self.assertRaises(TypeError):
            rl.rl_job(42)

    def test_framework_model_and_gpus(self):
        for name, value in (("verl", rl_job_pb2.RL_FRAMEWORK_VERL),
                            ("nemo-rl", rl_job_pb2.RL_FRAMEWORK_NEMO_RL),
                            ("NEMO_RL", rl_job_pb2.RL_FRAMEWORK_NEMO_RL),
                            ("slime", rl_job_pb2.RL_FRAMEWORK_SLIME),
                            ("megatron_rl", rl_job_pb2.RL_FRAMEWORK_MEGATRON_RL),
                            ("RL_FRAMEWORK_VERL", rl_job_pb2.RL_FRAMEWORK_VERL),
                            (rl_job_pb2.RL_FRAMEWORK_SLIME, rl_job_pb2.RL_FRAMEWORK_SLIME)):
            self.assertEqual(rl.rl_job(FITS_YAML, framework=name).framework, value)
        for bad in ("openrlhf", "unspecified", True):
            with self.assertRaises(ValueError) as raised:
                rl.rl_job(FITS_YAML, framework=bad)
            self.assertIn("verl, nemo_rl, slime, megatron_rl", str(raised.exception))
        job = rl.rl_job(FITS_YAML, gpus=16, preset="qwen3-8b")
        self.assertEqual((job.num_gpus, job.preset), (16, "qwen3-8b"))
        job = rl.rl_job(FITS_YAML, hf_config={"model_type": "qwen3"})
        self.assertEqual(json.loads(job.hf_config_json), {"model_type": "qwen3"})
        with self.assertRaises(ValueError):
            rl.rl_job(FITS_YAML, preset="qwen3-8b", hf_config={"model_type": "qwen3"})


class PreflightTest(unittest.TestCase):
    """preflight against the server."""

    def check_step(self, result):
        """The result's phases are the server's, in step order, and the
        binding phase is the one with the largest compared peak."""
        step = result.raw.rl_step
        names = [p.phase for p in result.phases]
        self.assertEqual(names, [p.phase for p in step.phases])
        self.assertEqual(names, [p for p in PHASES if p in names])
        self.assertIn("generate", names)
        self.assertIn("actor_update", names)
        self.assertIn(result.binding_phase, names)
        binding = next(p for p in result.phases if p.phase == result.binding_phase)
        self.assertEqual(binding.peak_upper_bytes, max(p.peak_upper_bytes for p in result.phases))
        self.assertEqual(result.compared_peak_bytes, binding.peak_upper_bytes)
        self.assertEqual(result.worst_rank, binding.worst_rank)
        for phase in step.phases:
            for rank in phase.ranks:
                self.assertEqual(sum(t.bytes for t in rank.terms), rank.peak_device_bytes)
        self.assertEqual(result.host_bytes_per_node, step.host_bytes_per_node)
        self.assertEqual(result.notes, list(step.notes))

    def test_job_that_fits_returns_the_step(self):
        result = rl.preflight(FITS_YAML, gpu="H100", server=SERVER.address)
        self.assertEqual(result.verdict, "FITS", result.summary)
        self.assertTrue(result.fits)
        self.assertLessEqual(result.compared_peak_bytes, result.usable_bytes)
        self.assertEqual(result.raw.gpu_name, "H100-SXM-80GB")
        self.assertEqual(result.raw.rl_step.framework, rl_job_pb2.RL_FRAMEWORK_VERL)
        self.check_step(result)
        # The reference is offloaded (ref.megatron.param_offload): its
        # weights wait in host memory.
        self.assertGreater(result.host_bytes_per_node, 0)

    def test_dict_is_the_same_job(self):
        # JSON is YAML: the dict reaches the server's YAML reader as the file does.
        from_dict = rl.preflight(FITS_DICT, gpu="H100", server=SERVER.address)
        from_file = rl.preflight(FITS_YAML, gpu="H100", server=SERVER.address)
        self.assertEqual(from_dict.raw, from_file.raw)

    def test_job_that_does_not_fit_raises_the_verdict(self):
        with self.assertRaises(rl.RlJobDoesNotFit) as raised:
            rl.preflight(SHIPPED_YAML, gpu="H100-SXM-80GB", server=SERVER.address)
        error = raised.exception
        self.assertNotIsInstance(error, OomguardError)  # An answer, not a failed call.
        self.assertEqual(error.verdict, "DOES_NOT_FIT")
        self.assertEqual(error.summary, error.result.raw.summary)
        self.assertEqual(str(error), error.summary)
        self.assertEqual(error.binding_phase, error.result.raw.rl_step.binding_phase)
        self.check_step(error.result)
        self.assertGreater(error.result.compared_peak_bytes, error.result.usable_bytes)
        # The recommendations change veRL's own keys, each re-estimated
        # lower than the job's own peak.
        self.assertTrue(error.recommendations)
        for rec in error.recommendations:
            self.assertRegex(rec.setting, r"^(actor_rollout_ref|critic|data)\.[\w.]+=\S+")
            self.assertLess(rec.peak_bytes_after, error.result.compared_peak_bytes)
            self.assertIn(rec.setting, [r.setting for r in error.result.recommendations])
        # rl.check gives the same answer without raising.
        result = rl.check(SHIPPED_YAML, gpu="H100-SXM-80GB", server=SERVER.address)
        self.assertEqual(result.raw, error.result.raw)

    def test_the_other_frameworks_shipped_examples(self):
        # slime's argv (an .args file, split into words), Megatron-LM's RL
        # loop (no world size or model in its argv: given here) and
        # NeMo-RL's YAML: each read as its framework's, every phase answered.
        examples = os.path.join(SOURCE_DIR, "examples", "rl")
        for name, options, framework in (
                ("slime_qwen3_30b_a3b.args", {}, rl_job_pb2.RL_FRAMEWORK_SLIME),
                ("megatron_rl.args", {"gpus": 32, "preset": "qwen3-30b-a3b"},
                 rl_job_pb2.RL_FRAMEWORK_MEGATRON_RL),
                ("nemo_rl_grpo_megatron.yaml", {}, rl_job_pb2.RL_FRAMEWORK_NEMO_RL)):
            with self.subTest(name):
                result = rl.check(os.path.join(examples, name), server=SERVER.address, **options)
                self.assertEqual(result.raw.rl_step.framework, framework)
                self.check_step(result)
        with self.assertRaises(OomguardError) as raised:
            rl.preflight(os.path.join(examples, "megatron_rl.args"), server=SERVER.address)
        self.assertEqual(raised.exception.field, "job.rl")

    def test_a_client_a_gpu_by_bytes_and_the_world_size(self):
        with Client(SERVER.address, timeout=10.0) as oomguard:
            result = rl.check(FITS_YAML, gpu=80 * GIB, gpus=16, server=oomguard)
            self.assertEqual(result.raw.rl_step.gpu_memory_bytes, 80 * GIB)
            self.assertEqual(result.raw.capacity_bytes, 80 * GIB)
            self.assertEqual(result.raw.gpu_name, "")
            # The client stays open for the caller.
            self.assertTrue(oomguard.list_gpus())

    def test_setting_not_modelled_is_not_judged(self):
        config = read(FITS_YAML).replace("  model:\n", "  model:\n    lora_rank: 8\n")
        with self.assertRaises(rl.RlJobNotJudged) as raised:
            rl.preflight(io.StringIO(config), server=SERVER.address)
        error = raised.exception
        self.assertIsInstance(error, OomguardError)
        self.assertEqual(error.code, grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(error.reason, "JOB_NOT_MODELLED")
        self.assertIn("lora_rank", error.message)
        result = rl.check(io.StringIO(config), server=SERVER.address, judge_unmodelled=True)
        self.assertTrue(result.unmodelled_settings)
        self.assertIn("lora_rank", result.summary)

    def test_bad_value_names_its_key(self):
        config = read(FITS_YAML).replace("gpu_memory_utilization: 0.5",
                                         "gpu_memory_utilization: high")
        with self.assertRaises(OomguardError) as raised:
            rl.preflight(io.StringIO(config), server=SERVER.address)
        error = raised.exception
        self.assertNotIsInstance(error, rl.RlJobNotJudged)
        self.assertEqual(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(error.field and error.field.startswith("job.rl"), error.field)
        self.assertIn("actor_rollout_ref.rollout.gpu_memory_utilization", error.message)

    def test_unreachable_server(self):
        with self.assertRaises(OomguardError) as raised:
            rl.preflight(FITS_YAML, server="127.0.0.1:1", timeout=2.0)
        self.assertEqual(raised.exception.code, grpc.StatusCode.UNAVAILABLE)


class VerlPreflightExampleTest(unittest.TestCase):
    """examples/rl/verl_preflight.py, --dry-run (no Ray here)."""

    def run_example(self, *args, server=None):
        env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        return subprocess.run(
            [sys.executable, EXAMPLE, "--server", server or SERVER.address, "--dry-run", *args],
            capture_output=True, text=True, check=False, timeout=60, env=env)

    def test_fits_prints_the_launch(self):
        run = self.run_example("--config", FITS_YAML, "--", "trainer.total_epochs=1")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("oomguard: FITS: ", run.stdout)
        self.assertTrue(run.stdout.rstrip().endswith(
            "ray job submit -- python3 -m verl.trainer.main_ppo trainer.total_epochs=1"),
            run.stdout)

    def test_does_not_fit_exits_1_with_the_verdict(self):
        run = self.run_example("--config", SHIPPED_YAML)
        self.assertEqual(run.returncode, 1, run.stderr)
        expected = rl.check(SHIPPED_YAML, server=SERVER.address)
        self.assertIn(f"oomguard: DOES_NOT_FIT: {expected.summary}", run.stdout)
        self.assertIn(f"  {expected.binding_phase:<13} PP rank", run.stdout)
        self.assertIn("<- binding", run.stdout)
        self.assertIn(f"1. {expected.recommendations[0].setting}", run.stdout)
        self.assertNotIn("ray job submit", run.stdout)

    def test_asks_verl_for_the_resolved_config(self):
        # veRL is not installed here: a stand-in for `python3 -m
        # verl.trainer.main_ppo --cfg job --resolve OVERRIDES`, which prints
        # the config Hydra composes; it checks the words it is called with.
        with tempfile.TemporaryDirectory() as work:
            python = write(os.path.join(work, "python3"),
                           "#!/bin/sh\n"
                           '[ "$*" = "-m verl.trainer.main_ppo --cfg job --resolve '
                           'trainer.nnodes=1" ] || { echo "called with: $*" >&2; exit 9; }\n'
                           f"cat '{FITS_YAML}'\n", executable=True)
            run = self.run_example("--python", python, "--", "trainer.nnodes=1")
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("oomguard: FITS: ", run.stdout)
            self.assertIn(f"ray job submit -- {python} -m verl.trainer.main_ppo trainer.nnodes=1",
                          run.stdout)
            failing = write(os.path.join(work, "false"),
                            "#!/bin/sh\necho 'no module named verl' >&2\nexit 1\n",
                            executable=True)
            run = self.run_example("--python", failing)
            self.assertEqual(run.returncode, 2)
            self.assertIn("no module named verl", run.stderr)

    def test_unreachable_server_fails_closed_unless_told(self):
        run = self.run_example("--config", FITS_YAML, "--timeout", "2", server="127.0.0.1:1")
        self.assertEqual(run.returncode, 3, run.stdout + run.stderr)
        self.assertIn("not launching", run.stderr)
        run = self.run_example("--config", FITS_YAML, "--timeout", "2", "--fail-open",
                               server="127.0.0.1:1")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("launching unchecked", run.stderr)
        self.assertIn("ray job submit --", run.stdout)


def main():
    global OPTIONS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    OPTIONS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
