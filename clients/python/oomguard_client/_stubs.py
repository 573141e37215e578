"""The generated protobuf/gRPC modules of proto/oomguard/v1, found or made.

Generated code is never committed. `load()` imports `oomguard.v1.*_pb2` from
sys.path when they are there (the installed package: `pip install
./clients/python` generates them into it, see setup.py; or
PYTHONPATH=build/clients/python/gen, which the CMake build generates), and
otherwise generates them once from the .proto files into a cache directory
and imports them from there.

Generators, in order:
  1. `protoc` with `grpc_python_plugin` (Debian: protobuf-compiler and
     protobuf-compiler-grpc, the packages the C++ build already needs);
  2. `python3 -m grpc_tools.protoc` (pip's grpcio-tools). Debian 12's
     python3-grpc-tools (1.14) bundles protoc 3.6, which rejects the proto3
     `optional` fields of job.proto, so it is only a fallback.
"""

import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

PROTO_FILES = ("job.proto", "report.proto", "rl_job.proto", "rl_report.proto", "admission.proto",
               "feedback.proto", "plan.proto", "service.proto", "error.proto")


class StubsUnavailable(ImportError):
    """The generated modules could not be imported or generated."""


def proto_dir():
    """The directory holding oomguard/v1/*.proto."""
    env = os.environ.get("OOMGUARD_PROTO_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    # clients/python/oomguard_client -> the repository's proto/.
    return os.path.normpath(os.path.join(here, "..", "..", "..", "proto"))


def _proto_paths(root):
    return [os.path.join(root, "oomguard", "v1", name) for name in PROTO_FILES]


def generate(out_dir, protos=None):
    """Generates oomguard/v1/*_pb2.py and *_pb2_grpc.py under `out_dir`.

    `protos` is the directory holding oomguard/v1/*.proto (default:
    proto_dir()). Raises StubsUnavailable when no generator works.
    """
    root = protos or proto_dir()
    files = _proto_paths(root)
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise StubsUnavailable(
            f"oomguard protos not found ({missing[0]}); set OOMGUARD_PROTO_DIR to the "
            "repository's proto/ directory")
    os.makedirs(out_dir, exist_ok=True)
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    errors = []
    if protoc and plugin:
        command = [protoc, f"-I{root}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
                   f"--plugin=protoc-gen-grpc_python={plugin}"] + files
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return out_dir
        errors.append(f"protoc: {result.stderr.strip()}")
    else:
        errors.append("protoc or grpc_python_plugin not on PATH "
                      "(apt-get install protobuf-compiler protobuf-compiler-grpc)")
    if importlib.util.find_spec("grpc_tools") is not None:
        command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}",
                   f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"] + files
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return out_dir
        errors.append(f"grpc_tools.protoc: {result.stderr.strip()}")
    else:
        errors.append("grpc_tools is not installed")
    raise StubsUnavailable("cannot generate the oomguard stubs: " + "; ".join(errors))


def _cache_dir(root):
    explicit = os.environ.get("OOMGUARD_STUBS_DIR")
    if explicit:
        return explicit
    digest = hashlib.sha256()
    for path in _proto_paths(root):
        with open(path, "rb") as f:
            digest.update(f.read())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "oomguard_client", "stubs-" + digest.hexdigest()[:16])


def _import_all():
    job = importlib.import_module("oomguard.v1.job_pb2")
    report = importlib.import_module("oomguard.v1.report_pb2")
    admission = importlib.import_module("oomguard.v1.admission_pb2")
    service = importlib.import_module("oomguard.v1.service_pb2")
    service_grpc = importlib.import_module("oomguard.v1.service_pb2_grpc")
    error = importlib.import_module("oomguard.v1.error_pb2")
    return job, report, admission, service, service_grpc, error


def load():
    """(job_pb2, report_pb2, admission_pb2, service_pb2, service_pb2_grpc, error_pb2)."""
    try:
        return _import_all()
    except ImportError:
        pass
    root = proto_dir()
    if not os.path.isdir(os.path.join(root, "oomguard", "v1")):
        raise StubsUnavailable(
            "the oomguard.v1 stubs are not importable and no protos to generate them from "
            f"were found at {root}: generate them (clients/python/README.md) and put them "
            "on PYTHONPATH, or set OOMGUARD_PROTO_DIR")
    cache = _cache_dir(root)
    marker = os.path.join(cache, "oomguard", "v1", "service_pb2_grpc.py")
    if not os.path.isfile(marker):
        parent = os.path.dirname(cache) or "."
        os.makedirs(parent, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=".stubs-", dir=parent)
        try:
            generate(scratch, root)
            try:
                os.rename(scratch, cache)  # Atomic; another process may have won.
            except OSError:
                if not os.path.isfile(marker):
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    sys.path.insert(0, cache)
    importlib.invalidate_caches()
    # A namespace package `oomguard` found earlier without v1 is cached; drop it.
    for name in ("oomguard.v1", "oomguard"):
        if name in sys.modules and not getattr(sys.modules[name], "__file__", None):
            del sys.modules[name]
    return _import_all()
