#!/usr/bin/python3
"""Tests of clients/python (oomguard_client) against the real `oomguard serve`.

    /usr/bin/python3 tests/clients/python_client_test.py --server-binary BUILD/tools/oomguard_server_for_test \
        [--stubs-dir BUILD/clients/python/gen]

CTest (python_client_test, labels integration;python) runs it with
PYTHONPATH=BUILD/clients/python/gen:clients/python. Exits 77 (skipped) only
when /usr/bin/python3 has no grpc module (python3-grpcio).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "testing"))
sys.path.insert(1, os.path.join(SOURCE_DIR, "clients", "python"))

import python_client_server  # pylint: disable=wrong-import-position

grpc = python_client_server.import_grpc()

from oomguard_client import Client, OomguardError, megatron_args  # pylint: disable=wrong-import-position
from oomguard_client import _stubs  # pylint: disable=wrong-import-position

_feedback_pb2 = _stubs.load()[6]

OPTIONS = None
SERVER = None

GIB = 1024 ** 3

# Llama-3-8B on 8 GPUs, full recompute: fits on an 80 GB GPU
# (tests/testing/service_test_jobs.h, Llama3With8GpusFits).
LLAMA_FITS = {
    "tensor-model-parallel-size": 1,
    "pipeline-model-parallel-size": 1,
    "use-distributed-optimizer": True,
    "seq-length": 4096,
    "micro-batch-size": 1,
    "global-batch-size": 128,
    "recompute-granularity": "full",
    "recompute-method": "uniform",
    "recompute-num-layers": 1,
}
LLAMA_FITS_LINE = ("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
                   "--use-distributed-optimizer --seq-length 4096 --micro-batch-size 1 "
                   "--global-batch-size 128 --recompute-granularity full "
                   "--recompute-method uniform --recompute-num-layers 1")

# The shipped DeepSeek-V3 job (examples/deepseek_v3_256gpu.args).
with open(os.path.join(SOURCE_DIR, "examples", "deepseek_v3_256gpu.args"), encoding="utf-8") as f:
    DEEPSEEK_256_LINE = " ".join(f.read().split())


def setUpModule():  # pylint: disable=invalid-name
    global SERVER  # pylint: disable=global-statement
    SERVER = python_client_server.Server(OPTIONS.server_binary)


def tearDownModule():  # pylint: disable=invalid-name
    SERVER.close_checked()


class MegatronArgsTest(unittest.TestCase):
    def test_dict_becomes_flags(self):
        self.assertEqual(
            megatron_args({"tensor-model-parallel-size": 8, "use_distributed_optimizer": True,
                           "--sequence-parallel": False, "vocab-size": None,
                           "recompute-modules": ["core_attn", "moe_act"],
                           "pipeline-model-parallel-layout": "Et|(tt|)*30mL",
                           "hidden-dropout": 0.0}),
            "--tensor-model-parallel-size 8 --use-distributed-optimizer "
            "--recompute-modules core_attn moe_act "
            "--pipeline-model-parallel-layout 'Et|(tt|)*30mL' --hidden-dropout 0.0")

    def test_tokens_and_strings(self):
        self.assertEqual(megatron_args(["--seq-length", 4096, "--num-layers-per-virtual"
                                        "-pipeline-stage", "2"]),
                         "--seq-length 4096 --num-layers-per-virtual-pipeline-stage 2")
        self.assertEqual(megatron_args("--bf16  --seq-length 8"), "--bf16  --seq-length 8")
        self.assertEqual(megatron_args(None), "")
        with self.assertRaises(TypeError):
            megatron_args(42)
        with self.assertRaises(TypeError):
            megatron_args({"seq-length": {"nested": 1}})


class StubsTest(unittest.TestCase):
    def test_stubs_come_from_the_build(self):
        if not OPTIONS.stubs_dir:
            self.skipTest("no --stubs-dir given")
        module = sys.modules["oomguard.v1.service_pb2"]
        self.assertTrue(os.path.realpath(module.__file__).startswith(
            os.path.realpath(OPTIONS.stubs_dir)), module.__file__)

    def test_every_proto_is_generated(self):
        # A .proto that admission.proto or service.proto imports and the
        # list lacks leaves the client unable to import its stubs.
        protos = sorted(name for name in os.listdir(os.path.join(_stubs.proto_dir(), "oomguard", "v1"))
                        if name.endswith(".proto"))
        self.assertEqual(sorted(_stubs.PROTO_FILES), protos)
        with open(os.path.join(SOURCE_DIR, "clients", "python", "CMakeLists.txt"),
                  encoding="utf-8") as f:
            listed = next(line for line in f if line.startswith("set(_protos "))
        self.assertEqual(sorted(listed[len("set(_protos "):].strip().rstrip(")").split()),
                         [name.removesuffix(".proto") for name in protos])

    def test_generate_makes_importable_modules(self):
        with tempfile.TemporaryDirectory() as out:
            _stubs.generate(out)
            names = sorted(os.listdir(os.path.join(out, "oomguard", "v1")))
            for proto in ("admission", "job", "report", "service"):
                self.assertIn(f"{proto}_pb2.py", names)
            # A fresh interpreter imports them and sees the Check RPC.
            code = ("import sys; sys.path.insert(0, sys.argv[1]); "
                    "from oomguard.v1 import service_pb2, service_pb2_grpc; "
                    "print(service_pb2.DESCRIPTOR.services_by_name['Oomguard']"
                    ".methods_by_name['Check'].input_type.full_name)")
            result = subprocess.run([sys.executable, "-c", code, out], capture_output=True,
                                    text=True, check=False, timeout=30)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.strip(), "oomguard.v1.CheckRequest")


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(SERVER.address, timeout=10.0)

    def tearDown(self):
        self.client.close()

    def test_fitting_job(self):
        result = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b")
        self.assertEqual(result.verdict, "FITS", result.summary)
        self.assertTrue(result.fits)
        self.assertEqual(result.gpu_name, "H100-SXM-80GB")
        # The server's defaults: nothing kept free, the upper bound compared.
        self.assertEqual(result.safety_margin, 0.0)
        self.assertEqual(result.usable_bytes, result.capacity_bytes)
        self.assertGreater(result.peak_bytes, 8 * GIB)
        self.assertGreater(result.peak_upper_bytes, result.peak_bytes)
        self.assertEqual(result.compared_peak_bytes, result.peak_upper_bytes)
        self.assertEqual(result.headroom_bytes, result.usable_bytes - result.compared_peak_bytes)
        self.assertGreater(result.headroom_bytes, 0)
        self.assertEqual(result.peak_bytes, result.raw.peak_device_bytes)
        self.assertEqual(result.worst_rank, 0)  # PP 1: one rank.
        self.assertTrue(result.summary.startswith("Fits"), result.summary)
        # Full recompute at TP 1 PP 1: the planner knows a clearly faster
        # layout on the same 8 GPUs (at least 10 % more tokens/GPU/s).
        self.assertEqual(len(result.alternatives), 1)
        faster = result.alternatives[0]
        self.assertGreaterEqual(faster.speedup, 1.1)
        self.assertLessEqual(faster.peak_bytes, result.usable_bytes)
        self.assertIn("--pipeline-model-parallel-size", faster.megatron_args)
        self.assertEqual(faster.description, result.raw.alternatives[0].description)

    def test_non_fitting_job_has_recommendations(self):
        result = self.client.check(
            args="--expert-model-parallel-size 8 --seq-length 4096 --micro-batch-size 1 "
                 "--use-distributed-optimizer",
            num_gpus=8, preset="deepseek-v3")
        self.assertEqual(result.verdict, "DOES_NOT_FIT", result.summary)
        self.assertFalse(result.fits)
        self.assertLess(result.headroom_bytes, 0)
        self.assertGreater(result.peak_bytes, result.capacity_bytes)
        self.assertTrue(result.recommendations)
        for rec in result.recommendations:
            self.assertGreater(rec.saved_bytes, 0, rec)
            self.assertIn(rec.kind, ("ENVIRONMENT", "CONFIG_CHANGE", "INCOMPATIBILITY"))
            self.assertTrue(rec.setting)
        first = result.recommendations[0]
        self.assertEqual((first.kind, first.id), ("ENVIRONMENT", "expandable_segments"))
        # Steps are measured on the peak the verdict compares.
        self.assertEqual(first.peak_bytes_after, result.compared_peak_bytes - first.saved_bytes)
        self.assertEqual(result.env_settings(),
                         {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
        # No configuration of DeepSeek-V3 fits 8 GPUs: no alternatives.
        self.assertEqual(result.alternatives, [])

    def test_non_fitting_job_names_configurations_that_fit(self):
        # Llama-3 70B on 32 GPUs at TP 1 (DP 32) is far over 80 GB; other
        # layouts of the same 32 GPUs fit, fastest first.
        result = self.client.check(
            args="--seq-length 4096 --global-batch-size 64 --micro-batch-size 1 "
                 "--use-distributed-optimizer",
            num_gpus=32, preset="llama3-70b")
        self.assertEqual(result.verdict, "DOES_NOT_FIT", result.summary)
        self.assertTrue(result.alternatives)
        for alternative in result.alternatives:
            self.assertEqual(alternative.speedup, 0)
            self.assertLessEqual(alternative.peak_bytes, result.usable_bytes)
            self.assertIn("--micro-batch-size 1", alternative.megatron_args)
        speeds = [a.tokens_per_gpu_per_second for a in result.alternatives]
        self.assertEqual(speeds, sorted(speeds, reverse=True))

    def test_without_the_report_the_verdict_is_the_same(self):
        full = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3")
        brief = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3",
                                  with_report=False)
        self.assertEqual(len(full.raw.report.ranks), 8)
        self.assertEqual(len(brief.raw.report.ranks), 0)
        self.assertEqual(full, brief)  # Every field but raw (compare=False).

    def test_env_recommendation_matches_passing_the_env(self):
        # The shipped DeepSeek-V3 256-GPU job: what the server says the
        # expandable-segments step saves is what passing that env saves.
        plain = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3")
        step = next(r for r in plain.recommendations if r.id == "expandable_segments")
        with_env = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3",
                                     env=plain.env_settings())
        self.assertGreater(step.saved_bytes, 0)
        self.assertEqual(with_env.compared_peak_bytes, step.peak_bytes_after)
        self.assertEqual(plain.compared_peak_bytes - with_env.compared_peak_bytes, step.saved_bytes)
        self.assertNotIn("expandable_segments", [r.id for r in with_env.recommendations])

    def test_dict_list_and_string_args_agree(self):
        by_dict = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b")
        by_line = self.client.check(args=LLAMA_FITS_LINE, num_gpus=8, preset="llama3-8b")
        by_tokens = self.client.check(args=LLAMA_FITS_LINE.split(), num_gpus=8,
                                      preset="llama3-8b")
        self.assertEqual(by_dict.raw, by_line.raw)
        self.assertEqual(by_dict.raw, by_tokens.raw)
        # Underscore keys (Megatron's argparse namespace) work too.
        by_namespace_keys = self.client.check(
            args={k.replace("-", "_"): v for k, v in LLAMA_FITS.items()}, num_gpus=8,
            preset="llama3-8b")
        self.assertEqual(by_dict.raw, by_namespace_keys.raw)

    def test_dict_with_quoted_layout(self):
        # The layout has shell metacharacters; the dict form quotes it.
        result = self.client.check(
            args={"pipeline-model-parallel-size": 8, "expert-model-parallel-size": 32,
                  "expert-tensor-parallel-size": 1,
                  "pipeline-model-parallel-layout": "Et|(tt|)*30mL", "seq-length": 4096,
                  "micro-batch-size": 1, "global-batch-size": 1024,
                  "recompute-granularity": "full", "recompute-method": "uniform",
                  "recompute-num-layers": 1, "use-distributed-optimizer": True},
            num_gpus=256, preset="deepseek-v3")
        by_line = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3")
        self.assertEqual(result.raw, by_line.raw)
        self.assertEqual(result.raw.report.pipeline_parallel, 8)
        self.assertEqual(result.raw.report.virtual_pipeline_chunks, 4)

    def test_safety_margin_and_gpu_bytes(self):
        result = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b",
                                   gpu=80 * GIB, safety_margin=0.0)
        self.assertEqual(result.capacity_bytes, 80 * GIB)
        self.assertEqual(result.usable_bytes, 80 * GIB)
        self.assertEqual(result.safety_margin, 0.0)
        self.assertEqual(result.gpu_name, "")

    def test_unmodelled_flag_is_not_judged_unless_asked(self):
        args = dict(LLAMA_FITS, **{"tp-comm-overlap-cfg": "x.yaml"})
        with self.assertRaises(OomguardError) as caught:
            self.client.check(args=args, num_gpus=8, preset="llama3-8b")
        error = caught.exception
        self.assertEqual(error.code, grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(error.reason, "JOB_NOT_MODELLED")
        self.assertTrue(error.not_modelled)
        self.assertEqual(error.field_violations, [])
        self.assertIn("--tp-comm-overlap-cfg: a custom TP communication overlap", error.message)

        result = self.client.check(args=args, num_gpus=8, preset="llama3-8b",
                                   judge_unmodelled=True)
        self.assertEqual(result.verdict, "FITS")
        self.assertTrue(result.summary.startswith(
            "Fits, judged without modelling --tp-comm-overlap-cfg: "), result.summary)
        self.assertEqual([s.flag for s in result.unmodelled_settings], ["--tp-comm-overlap-cfg"])
        self.assertEqual(result.unmodelled_settings[0].value, "")
        plain = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b")
        self.assertEqual(plain.unmodelled_settings, [])
        self.assertEqual(result.peak_bytes, plain.peak_bytes)

    def test_invalid_flag_value_names_the_flag(self):
        with self.assertRaises(OomguardError) as caught:
            self.client.check(args=dict(LLAMA_FITS, **{"micro-batch-size": -1}), num_gpus=8,
                              preset="llama3-8b")
        error = caught.exception
        self.assertEqual(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(error.code_name, "INVALID_ARGUMENT")
        self.assertEqual(error.method, "Check")
        # The field comes from the BadRequest detail; the message names the flag.
        self.assertEqual(error.field, "job.megatron")
        self.assertEqual(error.field_path, ["job", "megatron"])
        self.assertEqual(len(error.field_violations), 1)
        self.assertEqual(error.field_violations[0].field, "job.megatron")
        self.assertEqual(error.field_violations[0].description, error.message)
        self.assertIn("job.megatron: --micro-batch-size: ", error.message)
        self.assertIn('"-1"', error.message)

    def test_bytes_that_are_not_utf8_are_judged(self):
        # A path is bytes: os.fsdecode and sys.argv give its bytes that are
        # not UTF-8 as surrogate escapes, which protobuf cannot send
        # (UnicodeEncodeError); a bytes token was sent as its repr. Each such
        # byte becomes U+FFFD (common/valid_utf8.h): the job is judged as
        # without it, and a value that matters is refused naming its flag.
        tokens = LLAMA_FITS_LINE.split()
        plain = self.client.check(args=tokens, num_gpus=8, preset="llama3-8b")
        for path in (os.fsdecode(b"/data/\xff\xfe/text"), b"/data/\xc3(/text"):
            with self.subTest(path=path):
                judged = self.client.check(args=tokens + ["--data-path", path], num_gpus=8,
                                           preset="llama3-8b")
                self.assertEqual(judged.verdict, plain.verdict)
                self.assertEqual(judged.peak_bytes, plain.peak_bytes)
        self.assertEqual(megatron_args(["--data-path", b"/d/\xff", os.fsdecode(b"\xe2\x82")]),
                         "--data-path '/d/\ufffd' '\ufffd\ufffd'")
        with self.assertRaises(OomguardError) as caught:
            self.client.check(args=tokens + ["--num-layers", os.fsdecode(b"32\xff")], num_gpus=8,
                              preset="llama3-8b")
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(caught.exception.field, "job.megatron")
        self.assertIn("--num-layers", caught.exception.message)

    def test_invalid_fields_of_the_request(self):
        cases = [
            (dict(args=LLAMA_FITS, num_gpus=0, preset="llama3-8b"), "job.megatron.num_gpus"),
            (dict(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b", gpu="H900"), "gpu_name"),
            (dict(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b", safety_margin=1.5),
             "policy.safety_margin"),
            (dict(args="", num_gpus=8, preset="no-such-model"), "job.megatron"),
        ]
        for kwargs, field in cases:
            with self.subTest(field=field), self.assertRaises(OomguardError) as caught:
                self.client.check(**kwargs)
            self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertEqual(caught.exception.field, field, caught.exception.message)
            self.assertEqual(caught.exception.field_path, field.split("."))

    def test_the_field_is_read_from_the_status_details_not_the_message(self):
        # A server whose message names no field at all still names it in the
        # grpc-status-details-bin trailer, and one without details names none.
        # pylint: disable=import-outside-toplevel,import-error,protected-access
        from oomguard_client import client as client_module
        from oomguard.v1 import error_pb2
        status_details = client_module._status_details

        def field_violations(error):
            return status_details(error)[0]

        class FakeError(grpc.RpcError):
            def __init__(self, trailers):
                super().__init__()
                self.trailers = trailers

            def trailing_metadata(self):
                return self.trailers

        bad_request = error_pb2.BadRequest()
        bad_request.field_violations.add(field="job.megatron.num_gpus", description="why")
        status = error_pb2.RpcStatus(code=3, message="no field named here")
        detail = status.details.add()
        detail.type_url = "type.googleapis.com/google.rpc.BadRequest"
        detail.value = bad_request.SerializeToString()
        other = status.details.add()
        other.type_url = "type.googleapis.com/google.rpc.DebugInfo"
        other.value = b"\x0a\x01x"
        violations = field_violations(
            FakeError((("grpc-status-details-bin", status.SerializeToString()),)))
        self.assertEqual(violations, [client_module.FieldViolation("job.megatron.num_gpus", "why")])
        error = OomguardError(grpc.StatusCode.INVALID_ARGUMENT, "gpu_name: looks like a field",
                              "Check", field_violations(FakeError(())))
        self.assertIsNone(error.field)
        self.assertEqual(error.field_path, [])
        self.assertEqual(
            field_violations(FakeError((("grpc-status-details-bin", b"\xff\xff"),))), [])
        # oomguard's reason comes from an ErrorInfo of its domain; another
        # domain's is not oomguard's.
        info = error_pb2.ErrorInfo(reason="JOB_NOT_MODELLED", domain="oomguard.io")
        unimplemented = error_pb2.RpcStatus(code=12, message="not modelled")
        detail = unimplemented.details.add()
        detail.type_url = "type.googleapis.com/google.rpc.ErrorInfo"
        detail.value = info.SerializeToString()
        self.assertEqual(status_details(FakeError(
            (("grpc-status-details-bin", unimplemented.SerializeToString()),))),
            ([], "JOB_NOT_MODELLED"))
        detail.value = error_pb2.ErrorInfo(reason="JOB_NOT_MODELLED",
                                           domain="example.com").SerializeToString()
        self.assertEqual(status_details(FakeError(
            (("grpc-status-details-bin", unimplemented.SerializeToString()),))), ([], ""))

    def test_estimate(self):
        result = self.client.estimate(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3")
        self.assertEqual(len(result.ranks), 8)
        self.assertEqual([r.pp_rank for r in result.ranks], list(range(8)))
        self.assertEqual(result.peak_bytes, max(r.peak_bytes for r in result.ranks))
        self.assertEqual(result.ranks[result.worst_rank].peak_bytes, result.peak_bytes)
        self.assertGreater(result.total_parameters, 600e9)  # DeepSeek-V3: 671B.
        check = self.client.check(args=DEEPSEEK_256_LINE, num_gpus=256, preset="deepseek-v3")
        self.assertEqual(check.peak_bytes, result.peak_bytes)
        self.assertEqual(check.worst_rank, result.worst_rank)

    def test_hf_config_dict(self):
        hf_config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
                     "intermediate_size": 8192, "num_attention_heads": 32,
                     "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
                     "max_position_embeddings": 8192, "hidden_act": "silu",
                     "rms_norm_eps": 1e-5, "tie_word_embeddings": True}
        result = self.client.estimate(args="--seq-length 4096 --micro-batch-size 1",
                                      num_gpus=8, hf_config=hf_config)
        self.assertEqual(len(result.ranks), 1)
        # About 1.2B parameters (Llama-3.2-1B's shape).
        self.assertGreater(result.total_parameters, 1.0e9)
        self.assertLess(result.total_parameters, 1.5e9)

    def test_list_gpus_and_presets(self):
        gpus = {g.name: g for g in self.client.list_gpus()}
        self.assertIn("H100-SXM-80GB", gpus)
        self.assertGreater(gpus["H100-SXM-80GB"].memory_bytes, 70 * GIB)
        self.assertLess(gpus["H100-SXM-80GB"].memory_bytes, 81 * GIB)
        result = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b")
        self.assertEqual(result.capacity_bytes, gpus["H100-SXM-80GB"].memory_bytes)
        presets = self.client.list_presets()
        self.assertIn("deepseek-v3", presets)
        self.assertIn("llama3-8b", presets)
        self.assertEqual(list(presets), sorted(presets))

    def test_unreachable_server_is_unavailable(self):
        with Client(f"127.0.0.1:{python_client_server.free_port()}", timeout=1.0) as client:
            with self.assertRaises(OomguardError) as caught:
                client.list_gpus()
        self.assertIn(caught.exception.code,
                      (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED))
        self.assertIsNone(caught.exception.field)


REPORT_TOKEN = "0123456789abcdef0123456789abcdef"


class FeedbackTest(unittest.TestCase):
    """report() and get_check() against a server with a store (--store
    sqlite:...) that knows one reporter's token (--report_tokens_file)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="oomguard-feedback-")
        tokens = os.path.join(cls.dir.name, "tokens")
        with open(tokens, "w", encoding="utf-8") as f:
            f.write(f"training-pipeline {REPORT_TOKEN}\n")
        cls.server = python_client_server.Server(
            OPTIONS.server_binary,
            extra_flags=[f"--store=sqlite:{os.path.join(cls.dir.name, 'checks.db')}",
                         f"--report_tokens_file={tokens}", "--cluster=test-cluster"])

    @classmethod
    def tearDownClass(cls):
        cls.server.close_checked()
        cls.dir.cleanup()

    def setUp(self):
        self.client = Client(self.server.address, timeout=10.0)

    def tearDown(self):
        self.client.close()

    def check_id(self):
        result = self.client.check(args=LLAMA_FITS, num_gpus=8, preset="llama3-8b",
                                   with_report=False)
        self.assertEqual(result.verdict, "FITS", result.summary)
        self.assertRegex(result.raw.check_id, "^[0-9a-f]{32}$")
        return result.raw.check_id

    def test_a_reported_oom_is_in_the_checks_record(self):
        check_id = self.check_id()
        line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        result = self.client.report(
            check_id,
            {1: {"max_allocated_bytes": 60 * GIB, "max_reserved_bytes": 64 * GIB},
             0: 61 * GIB},
            outcome="cuda_oom", detail=line, slurm_job_id="4242", token=REPORT_TOKEN)
        self.assertEqual(result.check_id, check_id)
        self.assertEqual(result.ranks_stored, 2)
        record = self.client.get_check(check_id)
        self.assertEqual(record.check_id, check_id)
        self.assertEqual(record.cluster, "test-cluster")
        self.assertEqual(len(record.reports), 1)
        report = record.reports[0]
        self.assertEqual(report.reporter, "training-pipeline")
        self.assertEqual(report.source, _feedback_pb2.MEASUREMENT_SOURCE_CLIENT)
        self.assertEqual(report.outcome, _feedback_pb2.JOB_OUTCOME_CUDA_OOM)
        self.assertEqual(report.detail, line)
        self.assertEqual([(m.rank, m.max_allocated_bytes, m.HasField("max_reserved_bytes"))
                          for m in report.ranks],
                         [(0, 61 * GIB, False), (1, 60 * GIB, True)])
        self.assertEqual(report.ranks[1].max_reserved_bytes, 64 * GIB)
        self.assertEqual(record.outcome, _feedback_pb2.JOB_OUTCOME_CUDA_OOM)

    def test_the_outcome_and_source_by_name_or_number(self):
        check_id = self.check_id()
        self.client.report(check_id, {0: {"max_allocated_bytes": GIB, "phase": "log_prob"}},
                           outcome="JOB_OUTCOME_RAN", source="MEGATRON_LOG", token=REPORT_TOKEN)
        self.client.report(check_id, outcome=_feedback_pb2.JOB_OUTCOME_FAILED, source="slurm",
                           token=REPORT_TOKEN)
        reports = self.client.get_check(check_id).reports
        self.assertEqual([(r.source, r.outcome) for r in reports],
                         [(_feedback_pb2.MEASUREMENT_SOURCE_MEGATRON_LOG,
                           _feedback_pb2.JOB_OUTCOME_RAN),
                          (_feedback_pb2.MEASUREMENT_SOURCE_SLURM,
                           _feedback_pb2.JOB_OUTCOME_FAILED)])
        self.assertEqual(reports[0].ranks[0].phase, "log_prob")

    def test_refusals(self):
        check_id = self.check_id()
        with self.assertRaises(OomguardError) as caught:
            self.client.report(check_id, {0: GIB}, outcome="ran")
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        with self.assertRaises(OomguardError) as caught:
            self.client.report("f" * 32, {0: GIB}, outcome="ran", token=REPORT_TOKEN)
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(OomguardError) as caught:
            self.client.report(check_id, {0: {"max_reserved_bytes": 1 << 60}}, token=REPORT_TOKEN)
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("ranks[0].max_reserved_bytes", caught.exception.message)
        with self.assertRaises(OomguardError) as caught:
            self.client.get_check("0" * 32)
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(len(self.client.get_check(check_id).reports), 0)

    def test_bad_arguments_are_refused_before_sending(self):
        with self.assertRaisesRegex(ValueError, "outcome: 'oom' is not one of ran, cuda_oom"):
            self.client.report("0" * 32, {0: GIB}, outcome="oom")
        with self.assertRaisesRegex(ValueError, "source: 'stdout' is not one of"):
            self.client.report("0" * 32, {0: GIB}, source="stdout")
        with self.assertRaisesRegex(ValueError, r"per_rank_peaks\[3\]: unknown field 'peak'"):
            self.client.report("0" * 32, {3: {"peak": GIB}})
        with self.assertRaisesRegex(TypeError, "a rank is a global rank"):
            self.client.report("0" * 32, {"0": GIB})
        with self.assertRaisesRegex(TypeError, r"per_rank_peaks\[0\]: expected bytes"):
            self.client.report("0" * 32, {0: 1.5})


class ExampleTest(unittest.TestCase):
    def test_check_job_example(self):
        example = os.path.join(SOURCE_DIR, "clients", "python", "examples", "check_job.py")
        result = subprocess.run([sys.executable, example, "--server", SERVER.address],
                                capture_output=True, text=True, check=False, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0], "DeepSeek-V3, 256 GPUs on H100-SXM-80GB: DOES_NOT_FIT")
        self.assertIn("Llama-3-8B, 8 GPUs on H100-SXM-80GB: FITS", lines)
        self.assertIn("[ENVIRONMENT] PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                      result.stdout)

    def test_example_reports_a_bad_server(self):
        example = os.path.join(SOURCE_DIR, "clients", "python", "examples", "check_job.py")
        result = subprocess.run(
            [sys.executable, example, "--server", SERVER.address, "--gpu", "H900"],
            capture_output=True, text=True, check=False, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("INVALID_ARGUMENT: gpu_name: unknown GPU 'H900'", result.stderr)


def main():
    global OPTIONS  # pylint: disable=global-statement
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--stubs-dir")
    OPTIONS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
