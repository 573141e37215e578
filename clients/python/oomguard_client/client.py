"""A small client of `oomguard serve` (oomguard.v1.Oomguard) for pipelines.

    from oomguard_client import Client
    with Client("127.0.0.1:50051") as oomguard:
        result = oomguard.check(args={"tensor-model-parallel-size": 8, ...},
                                num_gpus=64, preset="qwen3-235b-a22b")
        if result.verdict == "DOES_NOT_FIT": ...
"""

import codecs
import dataclasses
import json
import os
import shlex
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Union

import grpc
from google.protobuf import message as _protobuf_message

from oomguard_client import _stubs

(_job_pb2, _report_pb2, _admission_pb2, _service_pb2, _service_pb2_grpc,
 _error_pb2, _feedback_pb2) = _stubs.load()

Args = Union[None, str, bytes, Sequence[Union[str, bytes]], Mapping]


def _surrogates_as_bytes(error):
    """Encoding error handler: a surrogate escape (U+DC80..U+DCFF, as
    os.fsdecode and sys.argv give a byte that is not UTF-8) as that byte, any
    other surrogate as its three bytes (not UTF-8 either)."""
    out = b""
    for char in error.object[error.start:error.end]:
        code = ord(char)
        out += (bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF
                else char.encode("utf-8", "surrogatepass"))
    return out, error.end


def _replace_each_byte(error):
    """Decoding error handler: U+FFFD for each byte that is not UTF-8."""
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("oomguard.surrogates_as_bytes", _surrogates_as_bytes)
codecs.register_error("oomguard.replace_each_byte", _replace_each_byte)


def valid_text(value: Union[str, bytes]) -> str:
    """`value` as text a request may carry.

    A path is bytes, and a protobuf string must be UTF-8 (protobuf cannot
    send a surrogate escape). Each byte that is not UTF-8 becomes U+FFFD,
    the server's rule (common/valid_utf8.h; MegatronJob.argv in
    admission.proto): the job is judged as it would be without it, and a
    value that matters is refused naming its flag.
    """
    if isinstance(value, str):
        value = value.encode("utf-8", "oomguard.surrogates_as_bytes")
    return value.decode("utf-8", "oomguard.replace_each_byte")


def _text(value) -> str:
    """A token or setting as text: bytes as they are, anything else by str(),
    then valid_text."""
    return valid_text(value if isinstance(value, bytes) else str(value))


@dataclasses.dataclass(frozen=True)
class FieldViolation:
    """A request field the server names as wrong (google.rpc.BadRequest)."""
    field: str                 # Proto field path from the request, e.g. "job.megatron.num_gpus".
    description: str           # Why (the call's error message).


class OomguardError(Exception):
    """A failed call: the gRPC status code, the server's message, the
    request fields it names and oomguard's reason.

    For INVALID_ARGUMENT the server attaches the fields that are wrong as a
    google.rpc.BadRequest in the call's `grpc-status-details-bin` trailer
    (oomguard.v1.RpcStatus, proto/oomguard/v1/error.proto); they are read
    from there, never from the message text. `field` is the first one
    ("job.megatron.num_gpus", "gpu_name", "job.megatron" for a bad Megatron
    flag, which the message names), `field_path` its proto field names,
    `field_violations` all of them. `reason` is oomguard's google.rpc.ErrorInfo
    reason ("" when none): "JOB_NOT_MODELLED" (also `not_modelled`) for
    UNIMPLEMENTED on a job oomguard does not model, e.g. one with a flag it
    does not model or know, which the message names (check(...,
    judge_unmodelled=True) judges it anyway). UNAVAILABLE /
    DEADLINE_EXCEEDED mean the server could not be reached or answer in time:
    a pipeline decides whether to go on unchecked.
    """

    def __init__(self, code: grpc.StatusCode, message: str, method: str = "",
                 field_violations: Sequence[FieldViolation] = (), reason: str = ""):
        self.code = code
        self.reason = reason
        self.not_modelled = reason == _JOB_NOT_MODELLED
        self.code_name = code.name if code is not None else "UNKNOWN"
        self.message = message
        self.method = method
        self.field_violations = list(field_violations)
        self.field = self.field_violations[0].field if self.field_violations else None
        self.field_path = self.field.split(".") if self.field else []
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{self.code_name}: {message}")


_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest"
_ERROR_INFO_TYPE_URL = "type.googleapis.com/google.rpc.ErrorInfo"
_ERROR_DOMAIN = "oomguard.io"
_JOB_NOT_MODELLED = "JOB_NOT_MODELLED"


def _status_details(error: grpc.RpcError):
    """The BadRequest field violations and oomguard's ErrorInfo reason ("" when
    none) in a failed call's status details."""
    trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    details = next((value for key, value in trailers or () if key == _STATUS_DETAILS_KEY), None)
    if not details:
        return [], ""
    status = _error_pb2.RpcStatus()
    try:
        status.ParseFromString(details)
        violations, reason = [], ""
        for detail in status.details:
            if detail.type_url == _BAD_REQUEST_TYPE_URL:
                bad_request = _error_pb2.BadRequest()
                bad_request.ParseFromString(detail.value)
                violations.extend(FieldViolation(v.field, v.description)
                                  for v in bad_request.field_violations)
            elif detail.type_url == _ERROR_INFO_TYPE_URL:
                info = _error_pb2.ErrorInfo()
                info.ParseFromString(detail.value)
                if info.domain == _ERROR_DOMAIN:
                    reason = info.reason
        return violations, reason
    except _protobuf_message.DecodeError:
        return [], ""


def megatron_args(args: Args) -> str:
    """A Megatron-LM argument line from a str, a list of tokens or a dict.

    Dict keys are flag names with or without the leading "--", in either
    spelling ("tensor-model-parallel-size" or "tensor_model_parallel_size",
    as in Megatron's argparse namespace). Values: True -> the bare flag;
    False or None -> the flag is left out (for flags that default to on,
    pass their "no-..." form as True); a list or tuple -> the flag followed
    by each item; anything else -> the flag and str(value). Bytes, and
    bytes that are not UTF-8 in a str (surrogate escapes), are read by
    valid_text.
    """
    if args is None:
        return ""
    if isinstance(args, (str, bytes)):
        return valid_text(args)
    if isinstance(args, Mapping):
        tokens = []
        for key, value in args.items():
            if not isinstance(key, str) or not key.strip("-"):
                raise TypeError(f"megatron args: key {key!r} is not a flag name")
            flag = "--" + key.lstrip("-").replace("_", "-")
            if value is None or value is False:
                continue
            tokens.append(flag)
            if value is True:
                continue
            if isinstance(value, (list, tuple)):
                tokens.extend(_token(flag, item) for item in value)
            else:
                tokens.append(_token(flag, value))
        return shlex.join(tokens)
    if isinstance(args, (list, tuple)):
        return shlex.join(_text(token) for token in args)
    raise TypeError(f"megatron args: expected a str, a list of tokens or a dict, not "
                    f"{type(args).__name__}")


def _token(flag, value):
    if isinstance(value, bool) or isinstance(value, (Mapping, list, tuple)) or value is None:
        raise TypeError(f"megatron args: {flag}: unsupported value {value!r}")
    return _text(value)


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """One change to the job and its effect (see admission.proto)."""
    kind: str                  # "ENVIRONMENT", "CONFIG_CHANGE" or "INCOMPATIBILITY".
    id: str                    # e.g. "expandable_segments", "more_pipeline_parallel".
    setting: str               # What to set, ready to paste.
    reason: str
    saved_bytes: int           # Worst-rank peak lowered by this step.
    peak_bytes_after: int      # Worst-rank peak once this step is applied.
    sufficient: bool           # The job fits once this step is applied.


@dataclasses.dataclass(frozen=True)
class Alternative:
    """A configuration the planner proposes on the same GPUs (see admission.proto)."""
    megatron_args: str         # The arguments that change, to put in place of the job's own.
    description: str           # e.g. "TP 1 PP 8 VPP 4 CP 1 EP 8 ETP 1, micro-batch 2, ...".
    peak_bytes: int            # Its worst rank's estimated device peak.
    tokens_per_gpu_per_second: float
    speedup: float             # Over the job's own configuration; 0 when the job does not fit.


@dataclasses.dataclass(frozen=True)
class UnmodelledSetting:
    """A setting of the job oomguard does not model (JobSpec.unmodelled_settings)."""
    flag: str                  # e.g. "--tp-comm-overlap-cfg".
    value: str                 # A choice value not modelled ("custom"), else "".
    reason: str                # Why it is not modelled.


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The verdict of Check; `raw` is the oomguard.v1.CheckResponse."""
    verdict: str               # "FITS", "FITS_WITH_SETTINGS" or "DOES_NOT_FIT".
    worst_rank: int            # Pipeline rank with the largest peak.
    peak_bytes: int            # That rank's estimated device peak (point estimate).
    peak_upper_bytes: int      # Its upper bound at the policy's coverage.
    compared_peak_bytes: int   # The one the verdict compared (upper unless policy says point).
    capacity_bytes: int        # Device memory of the GPU.
    usable_bytes: int          # capacity x (1 - safety_margin).
    headroom_bytes: int        # usable - compared peak; negative when it does not fit.
    safety_margin: float
    gpu_name: str
    summary: str               # One sentence for people.
    recommendations: List[Recommendation]
    # For a job that does not fit, the fastest configurations that fit; for
    # one that fits, a clearly faster one when the planner finds it.
    alternatives: List[Alternative] = dataclasses.field(default_factory=list)
    # The settings oomguard does not model that the verdict was judged
    # without (check(..., judge_unmodelled=True)); the summary names them.
    unmodelled_settings: List[UnmodelledSetting] = dataclasses.field(default_factory=list)
    raw: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def fits(self) -> bool:
        """True only for FITS (FITS_WITH_SETTINGS needs env_settings())."""
        return self.verdict == "FITS"

    def env_settings(self) -> Dict[str, str]:
        """The environment variables the ENVIRONMENT recommendations set."""
        env = {}
        for rec in self.recommendations:
            if rec.kind == "ENVIRONMENT":
                for assignment in shlex.split(rec.setting):
                    name, _, value = assignment.partition("=")
                    env[name] = value
        return env


@dataclasses.dataclass(frozen=True)
class RankEstimate:
    pp_rank: int
    peak_bytes: int            # Device peak (what the GPU must hold).
    peak_allocated_bytes: int  # torch.cuda.max_memory_allocated().
    static_bytes: int          # Parameters, gradients, optimizer state.
    activation_bytes: int


@dataclasses.dataclass(frozen=True)
class EstimateResult:
    """The per-rank estimate; `raw` is the oomguard.v1.EstimateReport."""
    worst_rank: int
    peak_bytes: int
    ranks: List[RankEstimate]
    total_parameters: int
    notes: List[str]
    raw: Any = dataclasses.field(repr=False, compare=False, default=None)


@dataclasses.dataclass(frozen=True)
class Gpu:
    name: str
    memory_bytes: int
    aliases: List[str]
    description: str


@dataclasses.dataclass(frozen=True)
class ReportResult:
    """What the server kept of a report (oomguard.v1.ReportResponse)."""
    check_id: str
    ranks_stored: int          # Measurements kept from this report.
    raw: Any = None            # The oomguard.v1.ReportResponse.


# What report() takes per rank: max_allocated_bytes alone (an int, what
# torch.cuda.max_memory_allocated() returns), or a mapping of
# RankMeasurement's fields ("max_allocated_bytes", "max_reserved_bytes",
# "device_used_bytes", "phase").
RankPeaks = Union[int, Mapping[str, Any]]

_MEASUREMENT_FIELDS = ("max_allocated_bytes", "max_reserved_bytes", "device_used_bytes", "phase")


def _enum_value(enum, prefix: str, value, what: str) -> int:
    """An enum's number from its name with or without the prefix, any case
    ("cuda_oom", "JOB_OUTCOME_CUDA_OOM"), or its number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected a name, not {value!r}")
    name = value.upper()
    if not name.startswith(prefix):
        name = prefix + name
    try:
        return enum.Value(name)
    except ValueError:
        names = ", ".join(n.removeprefix(prefix).lower() for n in enum.keys()
                          if not n.endswith("_UNSPECIFIED"))
        raise ValueError(f"{what}: {value!r} is not one of {names}") from None


def _rank_measurement(rank, peaks: RankPeaks):
    """A RankMeasurement from report()'s per-rank value."""
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"per_rank_peaks: a rank is a global rank (int), not {rank!r}")
    measurement = _feedback_pb2.RankMeasurement(rank=rank)
    if isinstance(peaks, Mapping):
        unknown = sorted(set(peaks) - set(_MEASUREMENT_FIELDS))
        if unknown:
            raise ValueError(f"per_rank_peaks[{rank}]: unknown field {unknown[0]!r} (expected "
                             f"{', '.join(_MEASUREMENT_FIELDS)})")
        for field in _MEASUREMENT_FIELDS:
            if peaks.get(field) is not None:
                setattr(measurement, field,
                        valid_text(peaks[field]) if field == "phase" else int(peaks[field]))
    elif isinstance(peaks, bool) or not isinstance(peaks, int):
        raise TypeError(f"per_rank_peaks[{rank}]: expected bytes (int) or a mapping, "
                        f"not {peaks!r}")
    else:
        measurement.max_allocated_bytes = peaks
    return measurement


class Client:
    """A connection to `oomguard serve`.

    address: "host:port". timeout: seconds per call (deadline). tls_ca: PEM
    file (or bytes) of the CA that signed the server's certificate; turns on
    TLS. tls_cert/tls_key: client certificate and key files (or bytes) for a
    server that requires mutual TLS. tls_server_name: the name to verify in
    the server's certificate when it differs from the host in `address`.
    """

    def __init__(self, address: str, timeout: float = 2.0, tls_ca=None, tls_cert=None,
                 tls_key=None, tls_server_name: Optional[str] = None):
        self.address = address
        self.timeout = timeout
        if tls_ca is None and tls_cert is None:
            self._channel = grpc.insecure_channel(address)
        else:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_pem(tls_ca), private_key=_pem(tls_key),
                certificate_chain=_pem(tls_cert))
            options = []
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            self._channel = grpc.secure_channel(address, credentials, options=options)
        self._stub = _service_pb2_grpc.OomguardStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def check(self, args: Args = None, num_gpus: Optional[int] = None,
              gpu: Union[str, int] = "H100-SXM-80GB", preset: Optional[str] = None,
              hf_config=None, env: Optional[Mapping] = None,
              gpus_per_node: Optional[int] = None, safety_margin: Optional[float] = None,
              timeout: Optional[float] = None, with_report: bool = True,
              judge_unmodelled: Optional[bool] = None) -> CheckResult:
        """Whether the job fits on `gpu`, and what to change when it does not.

        args: the Megatron-LM arguments (str, list of tokens or dict; see
        megatron_args). num_gpus: the job's world size. gpu: a catalog name or
        alias (see list_gpus), or the device memory in bytes (int). preset /
        hf_config: where the model comes from when args do not describe it
        (hf_config: the config.json as a dict, its text, or a path).
        env: the job's environment (PYTORCH_CUDA_ALLOC_CONF, NCCL_GRAPH_REGISTER).
        safety_margin: fraction of the GPU kept free (default: the server's).
        with_report: False leaves the per-rank report out of `raw` (CheckRequest.
        omit_report): the same verdict in a smaller, faster answer.
        judge_unmodelled: True judges a job with settings oomguard does not model
        (a flag it does not model or know, a choice value such as --fp8-recipe
        custom) as if they were absent (the summary says "judged without
        modelling --X", unmodelled_settings lists them); False or, unset, the
        server's default (--judge_unmodelled, off unless set) raises
        OomguardError with reason "JOB_NOT_MODELLED" naming them.
        """
        response = self.check_response(
            _job_source(args, num_gpus, preset, hf_config, env, gpus_per_node), gpu=gpu,
            safety_margin=safety_margin, judge_unmodelled=judge_unmodelled,
            with_report=with_report, timeout=timeout)
        return CheckResult(
            verdict=verdict_name(response),
            worst_rank=response.worst_pp_rank,
            peak_bytes=response.peak_device_bytes,
            peak_upper_bytes=response.peak_device_upper_bytes,
            compared_peak_bytes=response.compared_peak_bytes,
            capacity_bytes=response.capacity_bytes,
            usable_bytes=response.usable_bytes,
            headroom_bytes=response.headroom_bytes,
            safety_margin=response.safety_margin,
            gpu_name=response.gpu_name,
            summary=response.summary,
            recommendations=recommendations(response),
            alternatives=[
                Alternative(megatron_args=a.megatron_args, description=a.description,
                            peak_bytes=a.peak_device_bytes,
                            tokens_per_gpu_per_second=a.tokens_per_gpu_per_second,
                            speedup=a.speedup)
                for a in response.alternatives],
            unmodelled_settings=[UnmodelledSetting(flag=s.flag, value=s.value, reason=s.reason)
                                 for s in response.unmodelled_settings],
            raw=response)

    def check_response(self, job, gpu: Union[str, int] = "H100-SXM-80GB",
                       safety_margin: Optional[float] = None,
                       judge_unmodelled: Optional[bool] = None, with_report: bool = True,
                       timeout: Optional[float] = None):
        """The Check RPC's oomguard.v1.CheckResponse for `job`, an
        oomguard.v1.JobSource; the other arguments as in check()."""
        request = _admission_pb2.CheckRequest()
        request.job.CopyFrom(job)
        if isinstance(gpu, bool) or not isinstance(gpu, (str, int)):
            raise TypeError(f"gpu: expected a name or a number of bytes, not {gpu!r}")
        if isinstance(gpu, str):
            request.gpu_name = valid_text(gpu)
        else:
            request.gpu_memory_bytes = gpu
        if safety_margin is not None:
            request.policy.safety_margin = safety_margin
        if judge_unmodelled is not None:
            request.policy.judge_unmodelled = judge_unmodelled
        request.omit_report = not with_report
        return self._call("Check", self._stub.Check, request, timeout)

    def estimate(self, args: Args = None, num_gpus: Optional[int] = None,
                 preset: Optional[str] = None, hf_config=None, env: Optional[Mapping] = None,
                 gpus_per_node: Optional[int] = None, module_tree: bool = False,
                 timeout: Optional[float] = None) -> EstimateResult:
        """The per-pipeline-rank memory estimate of a job (no verdict)."""
        request = _service_pb2.EstimateRequest(module_tree=module_tree)
        request.job.CopyFrom(_job_source(args, num_gpus, preset, hf_config, env, gpus_per_node))
        report = self._call("Estimate", self._stub.Estimate, request, timeout).report
        ranks = [RankEstimate(pp_rank=r.pp_rank, peak_bytes=r.peak_device_bytes,
                              peak_allocated_bytes=r.peak_allocated_bytes,
                              static_bytes=r.static_bytes, activation_bytes=r.activation_bytes)
                 for r in report.ranks]
        worst = ranks[report.worst_rank] if ranks else None
        return EstimateResult(
            worst_rank=worst.pp_rank if worst else 0,
            peak_bytes=worst.peak_bytes if worst else 0,
            ranks=ranks, total_parameters=report.total_parameters, notes=list(report.notes),
            raw=report)

    def list_presets(self, timeout: Optional[float] = None) -> Dict[str, str]:
        """Preset name -> one-line description, sorted by name."""
        response = self._call("ListPresets", self._stub.ListPresets,
                              _service_pb2.ListPresetsRequest(), timeout)
        return {p.name: p.description for p in response.presets}

    def list_gpus(self, timeout: Optional[float] = None) -> List[Gpu]:
        """The server's GPU catalog."""
        response = self._call("ListGpus", self._stub.ListGpus, _service_pb2.ListGpusRequest(),
                              timeout)
        return [Gpu(name=g.name, memory_bytes=g.memory_bytes, aliases=list(g.aliases),
                    description=g.description) for g in response.gpus]

    def report(self, check_id: str, per_rank_peaks: Optional[Mapping[int, RankPeaks]] = None,
               outcome: Union[None, str, int] = None, source: Union[str, int] = "client",
               oom_phase: str = "", detail: str = "", slurm_job_id: str = "",
               token: Optional[str] = None, timeout: Optional[float] = None) -> ReportResult:
        """Sends what a checked job really used (the Report RPC).

        check_id: CheckResult.raw.check_id of the check that admitted the job.
        per_rank_peaks: global rank -> its peak: the bytes of
        torch.cuda.max_memory_allocated() on that rank, or a mapping with
        max_allocated_bytes, max_reserved_bytes, device_used_bytes (bytes) and
        phase (an RL step's phase, e.g. "log_prob"). outcome: how the job ended,
        "ran", "cuda_oom", "failed", "host_oom", "cancelled", or None while it
        runs. source: where the numbers come from ("client"; "megatron_log",
        "slurm", ... for a reporter of those). oom_phase: with "cuda_oom", the
        phase it died in. detail: the evidence (the OOM line; at most 2048
        bytes). slurm_job_id: the job's Slurm id, when known. token: the bearer
        token the server knows this reporter by (`authorization: Bearer ...`;
        a server with mutual TLS takes the client certificate instead).
        The server checks the report (feedback/report_limits.h) and raises
        OomguardError naming the field (INVALID_ARGUMENT), NOT_FOUND for an
        unknown check id, UNAUTHENTICATED without a credential it accepts.
        """
        request = _feedback_pb2.ReportRequest(
            check_id=valid_text(check_id),
            source=_enum_value(_feedback_pb2.MeasurementSource, "MEASUREMENT_SOURCE_", source,
                               "source"),
            oom_phase=valid_text(oom_phase), detail=valid_text(detail))
        if outcome is not None:
            request.outcome = _enum_value(_feedback_pb2.JobOutcome, "JOB_OUTCOME_", outcome,
                                          "outcome")
        for rank, peaks in sorted((per_rank_peaks or {}).items()):
            request.ranks.append(_rank_measurement(rank, peaks))
        if slurm_job_id:
            request.handle.slurm_job_id = valid_text(slurm_job_id)
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        response = self._call("Report", self._stub.Report, request, timeout, metadata)
        return ReportResult(check_id=response.check_id, ranks_stored=response.ranks_stored,
                            raw=response)

    def get_check(self, check_id: str, timeout: Optional[float] = None):
        """The stored record of a check (oomguard.v1.CheckRecord): the job as
        it was judged, the estimate per pipeline stage, the verdict, and every
        report sent for it since. OomguardError NOT_FOUND for an unknown id."""
        request = _feedback_pb2.GetCheckRequest(check_id=valid_text(check_id))
        return self._call("GetCheck", self._stub.GetCheck, request, timeout)

    def _call(self, method, rpc, request, timeout, metadata=None):
        try:
            return rpc(request, timeout=self.timeout if timeout is None else timeout,
                       metadata=metadata)
        except grpc.RpcError as error:
            violations, reason = _status_details(error)
            raise OomguardError(error.code(), error.details() or "", method, violations,
                                reason) from None


def verdict_name(response) -> str:
    """A CheckResponse's verdict: "FITS", "FITS_WITH_SETTINGS" or "DOES_NOT_FIT"."""
    return _admission_pb2.Verdict.Name(response.verdict).removeprefix("VERDICT_")


def recommendations(response) -> List[Recommendation]:
    """A CheckResponse's recommendations."""
    return [Recommendation(
        kind=_admission_pb2.Recommendation.Kind.Name(r.kind).removeprefix("KIND_"),
        id=r.id, setting=r.setting, reason=r.reason, saved_bytes=r.saved_bytes,
        peak_bytes_after=r.peak_device_bytes_after, sufficient=r.sufficient)
        for r in response.recommendations]


def _pem(value):
    if value is None or isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


def _job_source(args, num_gpus, preset, hf_config, env, gpus_per_node):
    source = _admission_pb2.JobSource()
    megatron = source.megatron
    megatron.args = megatron_args(args)
    set_size_and_model(megatron, num_gpus, preset, hf_config)
    for name, value in (env or {}).items():
        source.env[valid_text(name)] = _text(value)
    if gpus_per_node is not None:
        source.gpus_per_node = gpus_per_node
    return source


def set_size_and_model(job, num_gpus, preset, hf_config):
    """Sets a MegatronJob's or an RlJob's num_gpus, preset or hf_config_json
    (the fields both have)."""
    if num_gpus is not None:
        job.num_gpus = num_gpus
    if preset is not None and hf_config is not None:
        raise ValueError("give preset or hf_config, not both")
    if preset is not None:
        job.preset = valid_text(preset)
    if hf_config is not None:
        job.hf_config_json = hf_config_text(hf_config)


def hf_config_text(hf_config) -> str:
    """A HuggingFace config.json's text from a dict, JSON text or a path."""
    if isinstance(hf_config, Mapping):
        return json.dumps(hf_config)
    if isinstance(hf_config, os.PathLike) or (
            isinstance(hf_config, str) and not hf_config.lstrip().startswith("{")):
        with open(hf_config, encoding="utf-8") as f:
            return f.read()
    if isinstance(hf_config, str):
        return hf_config
    raise TypeError(f"hf_config: expected a dict, JSON text or a path, not "
                    f"{type(hf_config).__name__}")
