#!/usr/bin/python3
"""Asks a running `oomguard serve` whether two Megatron-Core jobs fit.

    /usr/bin/python3 clients/python/examples/check_job.py --server 127.0.0.1:50051

1. DeepSeek-V3 on 256 GPUs (PP 8 x VPP 4, EP 32), given as the argument
   line of its launch script on top of the deepseek-v3 preset;
2. Llama-3-8B on 8 GPUs, given as a dict of Megatron-LM arguments.

Prints each verdict with the worst rank's peak and the recommendations.
Exits 0 when the server answered both, 1 otherwise.
"""

import argparse
import os
import sys

# Run from a checkout without installing: the package is next to examples/
# (and no __pycache__ is left in the checkout).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from oomguard_client import Client, OomguardError  # pylint: disable=wrong-import-position

GIB = 1024 ** 3

# The checkout's shipped example job (examples/deepseek_v3_256gpu.args): the
# argument line of its launch script.
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples",
                       "deepseek_v3_256gpu.args")
with open(EXAMPLE, encoding="utf-8") as example_file:
    DEEPSEEK_V3_256_GPUS = example_file.read()

LLAMA3_8B_8_GPUS = {
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


def gib(n):
    return f"{n / GIB:.1f} GiB"


def show(title, result):
    print(f"{title} on {result.gpu_name or gib(result.capacity_bytes)}: {result.verdict}")
    print(f"  worst PP rank {result.worst_rank}: {gib(result.peak_bytes)} of "
          f"{gib(result.usable_bytes)} usable, headroom {gib(result.headroom_bytes)}")
    print(f"  {result.summary}")
    for i, rec in enumerate(result.recommendations, 1):
        effect = "fits" if rec.sufficient else f"peak {gib(rec.peak_bytes_after)}"
        print(f"  {i}. [{rec.kind}] {rec.setting}  (saves {gib(rec.saved_bytes)}; {effect})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", default="127.0.0.1:50051", help="host:port of oomguard serve")
    parser.add_argument("--gpu", default="H100-SXM-80GB", help="GPU catalog name (see ListGpus)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    parser.add_argument("--tls-ca", help="CA certificate (PEM) of a TLS server")
    options = parser.parse_args()

    try:
        with Client(options.server, timeout=options.timeout, tls_ca=options.tls_ca) as oomguard:
            show("DeepSeek-V3, 256 GPUs",
                 oomguard.check(args=DEEPSEEK_V3_256_GPUS, num_gpus=256, preset="deepseek-v3",
                                gpu=options.gpu))
            show("Llama-3-8B, 8 GPUs",
                 oomguard.check(args=LLAMA3_8B_8_GPUS, num_gpus=8, preset="llama3-8b",
                                gpu=options.gpu))
    except OomguardError as error:
        print(f"oomguard: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
