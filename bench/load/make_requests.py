#!/usr/bin/env python3
"""Writes the gRPC request bodies bench/load/run_load.sh sends with h2load.

Each file is one gRPC message as it goes on the wire: a 0 byte (not
compressed), the 4-byte big-endian length, then the serialized protobuf.
The protobuf is encoded here by hand (no generated code needed); the field
numbers are those of proto/oomguard/v1/{admission,service}.proto.

  check.bin         oomguard.v1.CheckRequest as the admission hooks send it
                    (`oomguard check`, the Kubernetes webhook): a realistic
                    DeepSeek-V3 pre-training job (1024 GPUs, TP2 PP16 VPP2
                    EP64, selective recompute: examples/deepseek_v3_1024gpu.args),
                    as the words of its Megatron-LM arguments, on H100-SXM-80GB,
                    with omit_report (no per-rank report in the answer)
  check_report.bin  the same request without omit_report: the answer carries
                    the 16-rank report (what the web page and `check --json` ask)
  list_gpus.bin     oomguard.v1.ListGpusRequest (empty): the trivial handler
"""

import os
import shlex
import struct
import sys

# The shipped example job (the argument words a launcher passes).
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "deepseek_v3_1024gpu.args")


def varint(value):
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def length_delimited(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def uint_field(number, value):
    return varint(number << 3) + varint(value)


def grpc_frame(message):
    return b"\0" + struct.pack(">I", len(message)) + message


def check_request(omit_report):
    with open(EXAMPLE, encoding="utf-8") as f:
        words = shlex.split(f.read())
    megatron = (b"".join(length_delimited(5, w.encode()) for w in words)  # MegatronJob.argv
                + uint_field(2, 1024)                           # MegatronJob.num_gpus
                + length_delimited(3, b"deepseek-v3"))           # MegatronJob.preset
    job = length_delimited(2, megatron)                          # JobSource.megatron
    return (length_delimited(1, job)                             # CheckRequest.job
            + length_delimited(2, b"H100-SXM-80GB")              # CheckRequest.gpu_name
            + (uint_field(5, 1) if omit_report else b""))        # CheckRequest.omit_report


def main(out_dir):
    with open(f"{out_dir}/check.bin", "wb") as f:
        f.write(grpc_frame(check_request(omit_report=True)))
    with open(f"{out_dir}/check_report.bin", "wb") as f:
        f.write(grpc_frame(check_request(omit_report=False)))
    with open(f"{out_dir}/list_gpus.bin", "wb") as f:
        f.write(grpc_frame(b""))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
