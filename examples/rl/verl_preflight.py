#!/usr/bin/python3
"""Checks a veRL PPO/GRPO launch with oomguard before `ray job submit`.

    /usr/bin/python3 examples/rl/verl_preflight.py --server 127.0.0.1:50051 --gpu H100 \\
        [--config resolved.yaml] [--preset qwen3-30b-a3b | --hf-config config.json] \\
        [--dry-run] -- actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B trainer.nnodes=4 ...

The config checked is the one veRL will run: `--config FILE` (a resolved
config as YAML), else what `python3 -m verl.trainer.main_ppo --cfg job
--resolve <overrides>` prints (Hydra composes the config and prints it
without running anything). oomguard answers every phase of the RL step
(generate, weight sync, log-prob, reference, critic, actor update) against the
GPU. When the job fits, the launch is submitted:
`ray job submit [--address A] -- python3 -m verl.trainer.main_ppo <overrides>`
(with --dry-run, printed instead).

Exit status: 0 fits (submitted, or printed with --dry-run; else ray's own
status); 1 does not fit (the verdict, each phase's peak and the changes to
try are printed); 2 not judged (a setting oomguard does not model) or a
config oomguard refuses (the key is named); 3 oomguard could not be asked
(unless --fail-open, which launches unchecked).
"""

import argparse
import io
import os
import shlex
import subprocess
import sys

# Run from a checkout without installing the client: clients/python.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))

from oomguard_client import OomguardError, rl  # pylint: disable=wrong-import-position

GIB = 1024 ** 3
VERL_ENTRY = ["-m", "verl.trainer.main_ppo"]


def resolved_config(python, overrides):
    """The config veRL composes from its defaults and `overrides`, as YAML."""
    command = [python, *VERL_ENTRY, "--cfg", "job", "--resolve", *overrides]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({result.returncode}):\n"
                           f"{result.stderr.strip()}")
    return io.StringIO(result.stdout)


def local_hf_config(overrides):
    """actor_rollout_ref.model.path's config.json when the override names a
    local directory (a hub name such as Qwen/Qwen3-30B-A3B is the server's to
    recognise as a preset)."""
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if key == "actor_rollout_ref.model.path":
            path = os.path.join(os.path.expanduser(value), "config.json")
            if os.path.isfile(path):
                return path
    return None


def print_verdict(result):
    print(f"oomguard: {result.verdict}: {result.summary}")
    for phase in result.phases:
        mark = "  <- binding" if phase.phase == result.binding_phase else ""
        print(f"  {phase.phase:<13} PP rank {phase.worst_rank}: {phase.peak_bytes / GIB:6.1f} GiB "
              f"(at most {phase.peak_upper_bytes / GIB:.1f}){mark}")
        if phase.failure:
            print(f"    fails: {phase.failure}")
    print(f"  usable {result.usable_bytes / GIB:.1f} GiB per GPU; host memory per node "
          f"{result.host_bytes_per_node / GIB:.1f} GiB")
    for i, rec in enumerate(result.recommendations, 1):
        effect = "fits" if rec.sufficient else f"peak {rec.peak_bytes_after / GIB:.1f} GiB"
        print(f"  {i}. {rec.setting}  ({effect}): {rec.reason}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--server", default=os.environ.get(rl.ADDRESS_VARIABLE, rl.DEFAULT_ADDRESS),
                        help="host:port of oomguard serve (default $OOMGUARD_ADDRESS)")
    parser.add_argument("--gpu", default="H100-SXM-80GB", help="GPU catalog name or alias")
    parser.add_argument("--gpus", type=int, help="world size (default: trainer.nnodes x "
                        "trainer.n_gpus_per_node)")
    model = parser.add_mutually_exclusive_group()
    model.add_argument("--preset", help="oomguard preset of the model")
    model.add_argument("--hf-config", help="the model's config.json")
    parser.add_argument("--config", help="the resolved config as YAML, instead of asking veRL")
    parser.add_argument("--python", default="python3", help="the Python that runs veRL")
    parser.add_argument("--judge-unmodelled", action="store_true",
                        help="judge a config with settings oomguard does not model as if "
                             "they were absent")
    parser.add_argument("--fail-open", action="store_true",
                        help="launch unchecked when oomguard cannot be asked")
    parser.add_argument("--ray-address", help="ray job submit --address")
    parser.add_argument("--dry-run", action="store_true", help="print the launch, do not submit")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for the check")
    parser.add_argument("overrides", nargs="*", help="veRL's Hydra overrides (after --)")
    options = parser.parse_args()

    launch = ["ray", "job", "submit"]
    if options.ray_address:
        launch += ["--address", options.ray_address]
    launch += ["--", options.python, *VERL_ENTRY, *options.overrides]

    try:
        config = options.config or resolved_config(options.python, options.overrides)
        hf_config = options.hf_config or (None if options.preset
                                          else local_hf_config(options.overrides))
        result = rl.preflight(config, gpu=options.gpu, gpus=options.gpus, preset=options.preset,
                              hf_config=hf_config, framework="verl", server=options.server,
                              timeout=options.timeout,
                              judge_unmodelled=True if options.judge_unmodelled else None)
    except rl.RlJobDoesNotFit as verdict:
        print_verdict(verdict.result)
        return 1
    except rl.RlJobNotJudged as error:
        print(f"oomguard: not judged: {error.message}", file=sys.stderr)
        return 2
    except OomguardError as error:
        if error.code_name not in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            print(f"oomguard: the config is refused: {error.message}", file=sys.stderr)
            return 2
        if not options.fail_open:
            print(f"oomguard: cannot check the job ({error}); not launching", file=sys.stderr)
            return 3
        print(f"oomguard: cannot check the job ({error}); launching unchecked", file=sys.stderr)
    except (OSError, RuntimeError) as error:
        print(f"oomguard: cannot read the config: {error}", file=sys.stderr)
        return 2
    else:
        print_verdict(result)

    if options.dry_run:
        print(shlex.join(launch))
        return 0
    return subprocess.run(launch, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
