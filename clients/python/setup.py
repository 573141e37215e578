"""Builds oomguard_client with its generated stubs (the `oomguard.v1` modules).

The stubs are generated while the package builds, from the .proto files of
this checkout (../../proto, or $OOMGUARD_PROTO_DIR), by the generator
oomguard_client._stubs.generate uses: protoc with grpc_python_plugin
(Debian: protobuf-compiler, protobuf-compiler-grpc), else grpc_tools. They
land next to oomguard_client in the build, so the installed package needs
neither the checkout nor a generator. Nothing generated is committed.

    pip install --no-index --no-build-isolation ./clients/python
"""

import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _stubs_module():
    """oomguard_client/_stubs.py, loaded alone (the package imports grpc)."""
    spec = importlib.util.spec_from_file_location(
        "_oomguard_client_stubs", os.path.join(HERE, "oomguard_client", "_stubs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithStubs(build_py):
    """build_py, then oomguard/v1/*_pb2.py and *_pb2_grpc.py into the build."""

    def run(self):
        super().run()
        stubs = _stubs_module()
        root = os.environ.get("OOMGUARD_PROTO_DIR") or os.path.join(HERE, "..", "..", "proto")
        stubs.generate(self.build_lib, os.path.normpath(root))
        # Regular packages, so that no other `oomguard` namespace shadows them.
        for package in ("oomguard", os.path.join("oomguard", "v1")):
            with open(os.path.join(self.build_lib, package, "__init__.py"), "a",
                      encoding="utf-8"):
                pass


setup(cmdclass={"build_py": BuildPyWithStubs})
