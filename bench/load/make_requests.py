#!/usr/bin/env python3
"""Writes the gRPC request bodies bench/load/run_load.sh sends with h2load.

Each file is one gRPC message as it goes on the wire: a 0 byte (not
compressed), the 4-byte big-endian length, then the serialized protobuf.
The protobuf is encoded here by hand (no generated code needed); the field
numbers are those of proto/oomguard/v1/{admission,service}.proto.

  check.bin      oomguard.v1.CheckRequest: a realistic DeepSeek-V3
                 pre-training job (1024 GPUs, TP2 PP16 VPP2 EP64, selective
                 recompute), as its Megatron-LM argument line, on H100-SXM-80GB
  list_gpus.bin  oomguard.v1.ListGpusRequest (empty): the trivial handler
"""

import struct
import sys

DEEPSEEK_V3_ARGS = (
    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 16 "
    "--expert-model-parallel-size 64 --expert-tensor-parallel-size 1 --sequence-parallel "
    "--pipeline-model-parallel-layout 'Et|(tt|)*30mL' --seq-length 4096 "
    "--micro-batch-size 1 --global-batch-size 8192 --use-distributed-optimizer "
    "--recompute-granularity selective --recompute-modules mla_up_proj layernorm moe_act "
    "--moe-grouped-gemm --bf16 --lr 2.2e-4 --train-iters 500000 "
    "--data-path /lustre/data/dsv3_text_document --save /lustre/ckpt/dsv3")


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


def check_request():
    megatron = (length_delimited(1, DEEPSEEK_V3_ARGS.encode())  # MegatronJob.args
                + uint_field(2, 1024)                           # MegatronJob.num_gpus
                + length_delimited(3, b"deepseek-v3"))           # MegatronJob.preset
    job = length_delimited(2, megatron)                          # JobSource.megatron
    return (length_delimited(1, job)                             # CheckRequest.job
            + length_delimited(2, b"H100-SXM-80GB"))             # CheckRequest.gpu_name


def main(out_dir):
    with open(f"{out_dir}/check.bin", "wb") as f:
        f.write(grpc_frame(check_request()))
    with open(f"{out_dir}/list_gpus.bin", "wb") as f:
        f.write(grpc_frame(b""))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
