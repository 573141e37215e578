"""What a job's own output says about its GPU memory, as oomguard's feedback readers see it.

Runs on a GPU with PyTorch (no Megatron) and writes, under $OUT (or the current directory):

- memory_lines.txt: Megatron-LM's `report_memory` line and Megatron-Bridge's line, formatted as their
  sources do (megatron/training/utils/common_utils.py report_memory; Megatron-Bridge
  training/utils/train_utils.py), from the real torch.cuda counters after a step of known size;
- oom_stderr.txt: the stderr of a child process that dies of an uncaught CUDA OOM (the traceback
  and the `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...` line as a job's log
  holds it), with its exit code;
- probe.json: the counters, the device's used memory (torch.cuda.mem_get_info, nvidia-smi's view)
  and the child's exit code.

Never run by CI or the tests: tests/data/feedback holds what it wrote on a lent GPU.
"""

import json
import os
import subprocess
import sys
import textwrap

import torch

MiB = 1024 * 1024
OUT = os.environ.get("OUT", ".")


def megatron_line(rank, iteration):
    # megatron/training/utils/common_utils.py report_memory: MB = 1024^2.
    return (
        f"[Rank {rank}] (after {iteration} iterations) memory (MB)"
        f" | allocated: {torch.cuda.memory_allocated() / MiB:.2f}"
        f" | max allocated: {torch.cuda.max_memory_allocated() / MiB:.2f}"
        f" | reserved: {torch.cuda.memory_reserved() / MiB:.2f}"
        f" | max reserved: {torch.cuda.max_memory_reserved() / MiB:.2f}"
    )


def bridge_line(rank, iteration):
    # Megatron-Bridge train_utils.py: GB = 1e9, 5 significant digits.
    s = torch.cuda.memory_stats()
    g = lambda v: f"{v / 1e9:.5g}"
    fields = [
        ("mem-allocated-gigabytes", g(s["allocated_bytes.all.current"])),
        ("mem-active-gigabytes", g(s["active_bytes.all.current"])),
        ("mem-inactive-gigabytes", g(s["inactive_split_bytes.all.current"])),
        ("mem-reserved-gigabytes", g(s["reserved_bytes.all.current"])),
        ("mem-max-allocated-gigabytes", g(s["allocated_bytes.all.peak"])),
        ("mem-max-active-gigabytes", g(s["active_bytes.all.peak"])),
        ("mem-max-inactive-gigabytes", g(s["inactive_split_bytes.all.peak"])),
        ("mem-max-reserved-gigabytes", g(s["reserved_bytes.all.peak"])),
        ("mem-alloc-retires", str(s["num_alloc_retries"])),
        ("mem-allocated-count", str(s["allocation.all.current"])),
    ]
    return f"[Rank {rank}] (after {iteration} iterations) memory (GB) | " + " | ".join(
        f"{k}: {v}" for k, v in fields
    )


def main():
    torch.cuda.init()
    # A "step": 3 GiB kept, 5 GiB transient on top (so max allocated = 8 GiB + small).
    kept = torch.empty(3 * 1024 * MiB, dtype=torch.uint8, device="cuda")
    transient = torch.empty(5 * 1024 * MiB, dtype=torch.uint8, device="cuda")
    del transient
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    lines = [megatron_line(0, 1), bridge_line(0, 1)]
    with open(os.path.join(OUT, "memory_lines.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    counters = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "max_allocated_bytes": torch.cuda.max_memory_allocated(),
        "max_reserved_bytes": torch.cuda.max_memory_reserved(),
        "device_used_bytes": total - free,
        "total_bytes": total,
        "kept_bytes": kept.numel(),
    }
    del kept

    # The uncaught OOM as a job's stderr holds it: ask for more than the GPU has, in two steps so
    # that "Process ... has ... in use" and the allocated/reserved split are non-trivial.
    child = textwrap.dedent(
        """
        import torch
        a = torch.empty(int(torch.cuda.mem_get_info()[1] * 0.6), dtype=torch.uint8, device="cuda")
        b = torch.empty(int(torch.cuda.mem_get_info()[1] * 0.6), dtype=torch.uint8, device="cuda")
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    with open(os.path.join(OUT, "oom_stderr.txt"), "w") as f:
        f.write(proc.stderr)
    counters["oom_child_exit_code"] = proc.returncode
    with open(os.path.join(OUT, "probe.json"), "w") as f:
        json.dump(counters, f, indent=1)
    print("\n".join(lines))
    print(proc.stderr[-1500:])
    print(json.dumps(counters, indent=1))


if __name__ == "__main__":
    main()
