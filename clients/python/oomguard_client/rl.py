"""Pre-flight of an RL post-training job (a colocated RL step: the trainer, its
rollout engine, the log-prob passes, the reference and the critic on the same
GPUs) before a pipeline starts it.

    from oomguard_client import rl
    rl.preflight("ppo_megatron.yaml", gpu="H100-SXM-80GB", preset="qwen3-30b-a3b")

The job goes to the server as it is written (oomguard.v1.RlJob,
proto/oomguard/v1/rl_job.proto): veRL's resolved config or NeMo-RL's as YAML
text, slime's or Megatron-LM's RL argv as words. The server reads it and
answers Check with every phase's peaks (CheckResponse.rl_step) and a verdict
on the binding phase. preflight() returns when the job fits and raises
RlJobDoesNotFit (with the verdict, the binding phase and the recommendations,
changes of the framework's own keys) when it does not, and RlJobNotJudged when
the config sets something oomguard does not model.
"""

import dataclasses
import io
import json
import os
import re
import shlex
from collections.abc import Mapping
from typing import Any, List, Optional, Sequence, Union

from oomguard_client import client as _client
from oomguard_client.client import (Client, OomguardError, Recommendation, UnmodelledSetting,
                                    valid_text)

# Imported by the client (_stubs.load()), so importable here.
from oomguard.v1 import admission_pb2 as _admission_pb2  # pylint: disable=wrong-import-order
from oomguard.v1 import rl_job_pb2 as _rl_job_pb2  # pylint: disable=wrong-import-order

Config = Union[str, "os.PathLike[str]", Mapping, Sequence[str], io.TextIOBase]

# The environment variable naming the server ("host:port") when no server is
# given.
ADDRESS_VARIABLE = "OOMGUARD_ADDRESS"
DEFAULT_ADDRESS = "127.0.0.1:50051"


@dataclasses.dataclass(frozen=True)
class RlPhase:
    """One phase of the RL step on its worst pipeline rank (RlPhaseReport)."""
    phase: str                 # "generate", "weight_sync", "log_prob", "ref_log_prob", "critic", "actor_update".
    worst_rank: int            # The trainer's pipeline rank with the largest peak in this phase.
    peak_bytes: int            # Its device peak (point estimate).
    peak_upper_bytes: int      # The largest upper bound of any rank, at the report's coverage.
    largest_term: str          # The worst rank's largest term, e.g. "fp32 logits (2 copies)".
    key: str                   # The config key that moves it, as the framework spells it.
    failure: str               # Why the phase fails whatever the free memory; "" when it does not.


@dataclasses.dataclass(frozen=True)
class RlCheckResult:
    """The verdict on an RL step; `raw` is the oomguard.v1.CheckResponse."""
    verdict: str               # "FITS", "FITS_WITH_SETTINGS" or "DOES_NOT_FIT".
    summary: str               # One sentence naming the binding phase, its rank, term and key.
    binding_phase: str         # The phase with the largest peak (by the compared bound).
    worst_rank: int            # That phase's worst pipeline rank.
    compared_peak_bytes: int   # The peak the verdict compared (the upper bound unless the policy says point).
    usable_bytes: int          # The GPU's memory less the safety margin.
    phases: List[RlPhase]      # In the order the step runs them.
    host_bytes_per_node: int   # Host memory per node the offloads and the sleeping engine need.
    recommendations: List[Recommendation]  # `setting`: the framework's key=value (or flag).
    notes: List[str]
    unmodelled_settings: List[UnmodelledSetting] = dataclasses.field(default_factory=list)
    raw: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def fits(self) -> bool:
        """True only for FITS."""
        return self.verdict == "FITS"


class RlJobDoesNotFit(Exception):
    """The server judged the RL job: it does not fit as configured (or fits
    only with the settings its recommendations list: FITS_WITH_SETTINGS).

    Not an OomguardError, which means the call failed (a pipeline may go on
    unchecked when the server is unreachable); this is the server's answer.
    `result` is the RlCheckResult; `verdict`, `summary`, `binding_phase` and
    `recommendations` are its fields.
    """

    def __init__(self, result: RlCheckResult):
        self.result = result
        self.verdict = result.verdict
        self.summary = result.summary
        self.binding_phase = result.binding_phase
        self.recommendations = result.recommendations
        super().__init__(result.summary)


class RlJobNotJudged(OomguardError):
    """The server does not judge the job: its config sets something that
    changes memory in a way oomguard does not model (the message names each
    key and why). reason "JOB_NOT_MODELLED"; preflight(...,
    judge_unmodelled=True) judges it as if those settings were absent."""


def _framework(framework) -> int:
    """RlFramework from None, its enum value, or a name: "verl", "nemo_rl"
    ("nemo-rl"), "slime", "megatron_rl" (or "RL_FRAMEWORK_VERL", ...)."""
    if framework is None:
        return _rl_job_pb2.RL_FRAMEWORK_UNSPECIFIED
    if isinstance(framework, int) and not isinstance(framework, bool):
        return framework
    if isinstance(framework, str):
        name = framework.strip().upper().replace("-", "_")
        if not name.startswith("RL_FRAMEWORK_"):
            name = "RL_FRAMEWORK_" + name
        if name in _rl_job_pb2.RlFramework.keys() and name != "RL_FRAMEWORK_UNSPECIFIED":
            return _rl_job_pb2.RlFramework.Value(name)
    choices = ", ".join(n.removeprefix("RL_FRAMEWORK_").lower()
                        for n in _rl_job_pb2.RlFramework.keys() if not n.endswith("UNSPECIFIED"))
    raise ValueError(f"framework: expected one of {choices}, not {framework!r}")


def _plain(value):
    """A mapping's values as JSON has them (an OmegaConf DictConfig, any
    Mapping, becomes a dict; a list or tuple a list)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# A backslash at a line's end (not itself escaped) joins the lines, as in a
# shell; shlex would keep the newline as a word.
_LINE_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")


def _read_config(config, job) -> None:
    """Fills job.config_yaml or job.argv from `config`."""
    if isinstance(config, Mapping):
        # JSON is YAML: the server's YAML reader takes it as it is.
        job.config_yaml = json.dumps(_plain(config))
    elif isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        with open(path, "rb") as f:
            text = valid_text(f.read())
        if path.endswith(".args"):
            try:
                words = shlex.split(_LINE_CONTINUATION.sub(r"\1", text), comments=True)
            except ValueError as error:  # An open quote.
                raise ValueError(f"{path}: {error}") from None
            job.argv.extend(words)
        else:
            job.config_yaml = text
    elif hasattr(config, "read"):
        # An open file or io.StringIO holding YAML (e.g. what
        # `python3 -m verl.trainer.main_ppo --cfg job --resolve` prints).
        text = config.read()
        job.config_yaml = valid_text(text)
    elif isinstance(config, (list, tuple)):
        job.argv.extend(_client._text(word) for word in config)  # pylint: disable=protected-access
    else:
        raise TypeError(f"config: expected a path, a dict or a list of words, not "
                        f"{type(config).__name__}")


def rl_job(config: Config, *, gpus: Optional[int] = None, preset: Optional[str] = None,
           hf_config=None, framework=None):
    """The oomguard.v1.RlJob preflight() sends.

    config: a path (str or os.PathLike) to the YAML config (veRL's resolved
    Hydra config, NeMo-RL's), read as it is, or, for a path ending ".args", to
    an argument line (slime's or Megatron-LM's RL flags), split into words as
    a POSIX shell would (quotes, comments; nothing expanded); a dict (the
    config itself: sent as JSON text, which is YAML); an open file or
    io.StringIO holding the YAML; or a list of words (the argv). gpus: the world size (default: the config's). preset / hf_config:
    where the model comes from when the config does not say (hf_config: the
    config.json as a dict, its text, or a path). framework: "verl",
    "nemo_rl", "slime" or "megatron_rl" (default: recognised from the keys).
    """
    job = _rl_job_pb2.RlJob(framework=_framework(framework))
    _read_config(config, job)
    _client.set_size_and_model(job, gpus, preset, hf_config)
    return job


def _result(response) -> RlCheckResult:
    step = response.rl_step
    return RlCheckResult(
        verdict=_client.verdict_name(response),
        summary=response.summary,
        binding_phase=step.binding_phase,
        worst_rank=response.worst_pp_rank,
        compared_peak_bytes=response.compared_peak_bytes,
        usable_bytes=response.usable_bytes,
        phases=[RlPhase(phase=p.phase, worst_rank=p.worst_rank, peak_bytes=p.peak_device_bytes,
                        peak_upper_bytes=p.peak_device_upper_bytes, largest_term=p.largest_term,
                        key=p.key, failure=p.failure) for p in step.phases],
        host_bytes_per_node=step.host_bytes_per_node,
        recommendations=_client.recommendations(response),
        notes=list(step.notes),
        unmodelled_settings=[UnmodelledSetting(flag=s.flag, value=s.value, reason=s.reason)
                             for s in response.unmodelled_settings],
        raw=response)


def check(config: Config, *, gpu: Union[str, int] = "H100-SXM-80GB",
          gpus: Optional[int] = None, preset: Optional[str] = None, hf_config=None,
          framework=None, server: Union[None, str, Client] = None, timeout: float = 10.0,
          safety_margin: Optional[float] = None, judge_unmodelled: Optional[bool] = None,
          with_report: bool = True) -> RlCheckResult:
    """The server's verdict on the RL job, whatever it is (see preflight)."""
    source = _admission_pb2.JobSource()
    source.rl.CopyFrom(rl_job(config, gpus=gpus, preset=preset, hf_config=hf_config,
                              framework=framework))
    own = not isinstance(server, Client)
    oomguard = (Client(server or os.environ.get(ADDRESS_VARIABLE, DEFAULT_ADDRESS),
                       timeout=timeout) if own else server)
    try:
        response = oomguard.check_response(
            source, gpu=gpu, safety_margin=safety_margin, judge_unmodelled=judge_unmodelled,
            with_report=with_report, timeout=timeout)
    except OomguardError as error:
        if error.not_modelled:
            raise RlJobNotJudged(error.code, error.message, error.method,
                                 error.field_violations, error.reason) from None
        raise
    finally:
        if own:
            oomguard.close()
    return _result(response)


def preflight(config: Config, *, gpu: Union[str, int] = "H100-SXM-80GB",
              gpus: Optional[int] = None, preset: Optional[str] = None, hf_config=None,
              framework=None, server: Union[None, str, Client] = None, timeout: float = 10.0,
              safety_margin: Optional[float] = None, judge_unmodelled: Optional[bool] = None,
              with_report: bool = True) -> RlCheckResult:
    """Checks an RL job before it starts; returns its RlCheckResult when it fits.

    config, gpus, preset, hf_config, framework: the job (see rl_job). gpu: a
    catalog name or alias, or the device memory in bytes (an int). server:
    "host:port" of `oomguard serve` (default: $OOMGUARD_ADDRESS, else
    127.0.0.1:50051) or a Client (for TLS). timeout: seconds for the call.
    safety_margin, judge_unmodelled, with_report: as Client.check.

    Raises RlJobDoesNotFit unless the verdict is FITS; RlJobNotJudged when the
    server does not judge the job (a setting it does not model), unless
    judge_unmodelled; OomguardError for a bad job (`field` names it) or a
    server that cannot be reached or answer in time (UNAVAILABLE,
    DEADLINE_EXCEEDED: the pipeline decides whether to go on unchecked);
    OSError for a config file that cannot be read.
    """
    result = check(config, gpu=gpu, gpus=gpus, preset=preset, hf_config=hf_config,
                   framework=framework, server=server, timeout=timeout,
                   safety_margin=safety_margin, judge_unmodelled=judge_unmodelled,
                   with_report=with_report)
    if not result.fits:
        raise RlJobDoesNotFit(result)
    return result
