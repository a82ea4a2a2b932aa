"""The bundle: one JSON document per probe run, the contract between an instance and the warehouse.

    python -c "from tasks.bundle import read_bundle; print(read_bundle('warehouse/samples/x.json'))"

The probe (torch only) writes plain dicts sealed by tasks.canonical; this pydantic model is what
every reader uses. `read_bundle` refuses anything that is not exactly schema_version 1: unknown
versions, unknown fields, wrong types, NaN/Inf, missing required fields, a bundle_id that does not
match the content, oversized files and pathological nesting. Errors are `BundleError`, which names
the file, the field, the value and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tasks.canonical import SCHEMA_VERSION, content_id

MAX_BUNDLE_BYTES = 64 * 1024 * 1024  # refused before parsing; a real bundle is well under 5 MB
MAX_NESTING = 32  # the contract nests at most ~5 deep; deeper input is hostile or broken
FUTURE_SKEW = timedelta(minutes=10)  # clock skew tolerated between a GPU host and the warehouse

# Identifiers land in paths, SQL parameters and HTML: keep them boring.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

Scalar = Union[str, int, float, bool, None]
ErrorKind = Literal["oom", "cuda_error", "timeout", "preempted", "crash", "other"]
AttemptState = Literal["completed", "failed", "crashed", "cancelled", "skipped", "not_applicable"]


class BundleError(ValueError):
    """A bundle that cannot be accepted. Carries file, field, value and the reason."""

    def __init__(self, file: str, field: str, value: Any, reason: str):
        self.file, self.field, self.value, self.reason = file, field, value, reason
        shown = repr(value)
        if len(shown) > 120:
            shown = shown[:117] + "..."
        super().__init__(f"{file}: field '{field}' = {shown}: {reason}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_control_chars(cls, v: Any) -> Any:
        if isinstance(v, str) and _CONTROL.search(v):
            raise ValueError("control characters are not allowed in strings")
        return v


class Environment(_Strict):
    """Where the run happened. GPU fields are None on a CPU-only host, never guessed."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    torch: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = Field(default=None, ge=1)
    ram_gib: float | None = Field(default=None, gt=0)
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    gpu_count: int = Field(default=0, ge=0)
    gpu_memory_gib: float | None = Field(default=None, gt=0)
    driver: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    compute_capability: str | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None
    nvlink: str | None = None  # e.g. "18 links active, 26.562 GB/s each"
    topology: str | None = None  # nvidia-smi topo -m style summary
    ecc: bool | None = None
    power_limit_w: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    persistence_mode: bool | None = None
    mig_mode: str | None = None
    container_image: str | None = None
    source: str | None = None  # "nvml" | "nvidia-smi" | "none": where the GPU fields came from
    extra: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)


class Attempt(_Strict):
    """One try of one task. Every try is kept: the rerun rate is computed from these."""

    task: str = Field(min_length=1, max_length=128)
    attempt: int = Field(ge=1)
    state: AttemptState
    error_kind: ErrorKind | None = None
    message: str | None = Field(default=None, max_length=4000)
    duration_s: float = Field(ge=0)
    started_at: datetime | None = None

    @model_validator(mode="after")
    def _kind_matches_state(self) -> "Attempt":
        if self.state in ("failed", "crashed") and self.error_kind is None:
            raise ValueError(f"state '{self.state}' needs an error_kind")
        return self


class Conditions(_Strict):
    """What the GPU was doing while a measurement ran (NVML). None fields: no NVML."""

    sm_clock_mhz_min: float | None = None
    sm_clock_mhz_median: float | None = None
    power_w_median: float | None = None
    power_w_max: float | None = None
    temp_c_max: float | None = None
    throttle_reasons: list[str] | None = None


class Measurement(_Strict):
    """One figure of one benchmark. `peak` is the theoretical ceiling in the same unit, or None."""

    benchmark: str = Field(min_length=1, max_length=128)
    benchmark_version: str = Field(default="1", max_length=32)
    metric: str = Field(min_length=1, max_length=128)
    value: float
    unit: str = Field(min_length=1, max_length=32)
    params: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)
    peak: float | None = Field(default=None, gt=0)
    peak_source: str | None = None
    repeats: int = Field(ge=1)
    statistic: Literal["median", "max", "mean", "min", "p95", "p99", "trimmed_median", "median_top5", "single"]
    spread: float | None = Field(default=None, ge=0)
    spread_kind: Literal["iqr", "stdev", "max_minus_min", "mad"] | None = None
    flags: list[str] = Field(default_factory=list)
    conditions: Conditions | None = None


class ConfigTried(_Strict):
    """One configuration the fine-tune considered before its steady-state run (issue 35): every card
    is measured at its best configuration, found by measurement (tasks/probe/finetune/search.py)."""

    micro_batch: int = Field(ge=1)
    activation_checkpointing: bool
    compile: bool
    estimated_gib: float | None = Field(default=None, ge=0)  # the memory model's figure (presets.estimate_bytes)
    outcome: Literal["chosen", "slower", "dropped"]
    tokens_per_s: float | None = Field(default=None, gt=0)  # its short trial; None when it did not run one
    peak_mem_allocated_gib: float | None = Field(default=None, ge=0)  # over its trial steps
    reason: str | None = Field(default=None, max_length=1000)  # why dropped (out of memory, dominated), or chosen


class Finetune(_Strict):
    """A short fine-tune of one preset: throughput, efficiency, memory, energy and outcome."""

    preset: str = Field(min_length=1, max_length=64)
    model_source: str = "preset"  # "preset" or the local checkpoint path's basename
    status: Literal["ok", "unstable", "failed", "not_applicable", "skipped"]
    mode: Literal["full", "lora", "qlora"]
    precision: Literal["bf16", "fp16", "fp32"]
    device: str = "cpu"
    n_gpus: int = Field(default=1, ge=1)
    params_total: int | None = Field(default=None, ge=0)
    params_trainable: int | None = Field(default=None, ge=0)
    params_non_embedding: int | None = Field(default=None, ge=0)
    seq_len: int = Field(ge=1)
    micro_batch: int | None = Field(default=None, ge=1)
    grad_accum: int = Field(default=1, ge=1)
    compile: bool = False
    activation_checkpointing: bool = False
    steps_warmup: int = Field(default=0, ge=0)
    steps_timed: int = Field(default=0, ge=0)
    tokens_per_s: float | None = Field(default=None, gt=0)
    step_time_s: list[float] = Field(default_factory=list)  # every timed step, in order
    step_time_median_s: float | None = Field(default=None, gt=0)
    step_time_p10_s: float | None = Field(default=None, gt=0)
    step_time_p90_s: float | None = Field(default=None, gt=0)
    window_tokens_per_s: list[float] = Field(default_factory=list)  # every timed window (steady.py)
    steady: bool | None = None
    compile_s: float | None = Field(default=None, ge=0)
    build_s: float | None = Field(default=None, ge=0)
    mfu: float | None = Field(default=None, ge=0, le=1)
    flops_per_token: float | None = Field(default=None, gt=0)
    peak_tflops: float | None = Field(default=None, gt=0)
    peak_mem_allocated_gib: float | None = Field(default=None, ge=0)
    peak_mem_reserved_gib: float | None = Field(default=None, ge=0)
    energy_j: float | None = Field(default=None, ge=0)
    j_per_token: float | None = Field(default=None, ge=0)
    kwh_per_mtok: float | None = Field(default=None, ge=0)
    loss_first: float | None = None
    loss_last: float | None = None
    scaling_efficiency: float | None = Field(default=None, gt=0)
    message: str | None = Field(default=None, max_length=4000)
    conditions: Conditions | None = None
    # How the configuration was found (issue 35). None: a bundle from before the search ("configuration
    # not searched"); "searched": candidates from the memory model, each trialled, the fastest measured;
    # "pinned": --micro-batch and --checkpointing fixed it; "fixed": the profile fixed it (quick).
    config_search: Literal["searched", "pinned", "fixed"] | None = None
    configs_tried: list[ConfigTried] = Field(default_factory=list)
    search_s: float | None = Field(default=None, ge=0)  # wall time of the trials, from the first
    #   candidate's first step to the choice (it overlaps the GPU warm-up it replaces)
    search_added_s: float | None = Field(default=None, ge=0)  # what the search added against running its
    #   first candidate alone: the others' first steps and any trial load beyond the warm-up (run.py _added)

    @model_validator(mode="after")
    def _ok_has_throughput(self) -> "Finetune":
        if self.status in ("ok", "unstable") and self.tokens_per_s is None:
            raise ValueError(f"status '{self.status}' needs tokens_per_s")
        return self


class Telemetry(_Strict):
    """Columnar NVML samples: every list has the same length. Empty without NVML."""

    t: list[float] = Field(default_factory=list)  # seconds since started_at
    gpu: list[int] = Field(default_factory=list)
    util: list[float] = Field(default_factory=list)
    mem_util: list[float] = Field(default_factory=list)
    power_w: list[float] = Field(default_factory=list)
    sm_clock_mhz: list[float] = Field(default_factory=list)
    temp_c: list[float] = Field(default_factory=list)
    phase: list[str] = Field(default_factory=list)  # which benchmark was running; may be empty

    @model_validator(mode="after")
    def _same_length(self) -> "Telemetry":
        n = len(self.t)
        for name in ("gpu", "util", "mem_util", "power_w", "sm_clock_mhz", "temp_c"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"column '{name}' has {len(getattr(self, name))} rows, t has {n}")
        if self.phase and len(self.phase) != n:
            raise ValueError(f"column 'phase' has {len(self.phase)} rows, t has {n}")
        return self


class Origin(_Strict):
    """Who ran the probe: a Prefect flow run, the CLI, or an air-gapped host."""

    kind: Literal["local", "pool", "import", "cli"] = "cli"
    flow_run_id: str | None = None
    deployment: str | None = None
    host: str | None = None


class Bundle(_Strict):
    schema_version: Literal[1]
    bundle_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    probe_version: str = Field(min_length=1, max_length=32)
    target: str = Field(pattern=ID_PATTERN)
    profile: str = Field(pattern=ID_PATTERN)
    started_at: datetime
    finished_at: datetime
    environment: Environment
    attempts: list[Attempt]
    measurements: list[Measurement] = Field(default_factory=list)
    finetune: list[Finetune] = Field(default_factory=list)
    telemetry: Telemetry = Field(default_factory=Telemetry)
    origin: Origin = Field(default_factory=Origin)

    @field_validator("started_at", "finished_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError("timestamps must carry a UTC offset (e.g. 2026-12-02T13:00:00Z)")
        return v.astimezone(timezone.utc)

    @model_validator(mode="after")
    def _times_ordered(self) -> "Bundle":
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        return self


def _depth(obj: Any, limit: int) -> int:
    """Nesting depth of parsed JSON (a scalar inside a container counts one level), iteratively (no
    recursion on hostile input). Only containers go on the stack, and a container's members are looked at
    one by one only when some of them are containers: a bundle is mostly long lists of numbers (telemetry),
    whose member types are collected at C speed (set(map(type, ...))) and never walked in Python."""
    if not isinstance(obj, (dict, list)):
        return 1
    stack, deepest = [(obj, 1)], 1
    while stack:
        node, d = stack.pop()
        if d > limit:
            return d
        deepest = max(deepest, d)
        members = node.values() if isinstance(node, dict) else node
        kinds = set(map(type, members))
        if not any(issubclass(k, (dict, list)) for k in kinds):
            if kinds:  # scalars only: one level below this container
                deepest = max(deepest, d + 1)
            continue
        for v in members:
            if isinstance(v, (dict, list)):
                stack.append((v, d + 1))
            elif d + 1 > deepest:
                deepest = d + 1
    return deepest


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _nonfinite_field(text: str) -> tuple[str, str] | None:
    """(dotted field, literal) of the first NaN/Infinity in otherwise valid JSON, else None."""
    try:
        doc = json.loads(text, parse_constant=lambda name: _Literal(name))
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Literal):
            return path or "<root>", str(node)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in reversed(list(items)))
    return None


class _Literal(str):
    """A NaN/Infinity token kept as text while locating it."""


def parse_bundle(raw: bytes, file: str = "<bytes>", now: datetime | None = None) -> Bundle:
    """Validate raw bytes as a bundle. Raises BundleError naming file, field, value and reason."""
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BundleError(file, "<file>", f"{len(raw)} bytes", f"larger than {MAX_BUNDLE_BYTES} bytes")
    if not raw.strip():
        raise BundleError(file, "<file>", "", "empty file, expected a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BundleError(file, "<file>", raw[e.start : e.start + 8], "not UTF-8 text") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BundleError(file, "<file>", "...", f"nested deeper than {MAX_NESTING} levels") from None
    except ValueError as e:
        where = _nonfinite_field(text) if "JSON allows" in str(e) else None
        if where is not None:
            raise BundleError(file, where[0], where[1], "NaN/Infinity is not a number JSON allows") from None
        raise BundleError(file, "<file>", text[:40], f"not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise BundleError(file, "<root>", type(doc).__name__, "expected a JSON object")
    if _depth(doc, MAX_NESTING) > MAX_NESTING:
        raise BundleError(file, "<file>", "...", f"nested deeper than {MAX_NESTING} levels")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise BundleError(file, "schema_version", version, f"expected {SCHEMA_VERSION}")
    try:
        bundle = Bundle.model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        raise BundleError(file, field, err.get("input"), err["msg"]) from None
    try:
        expected = content_id(doc)
    except ValueError as e:  # non-finite numbers inside free-form params
        raise BundleError(file, "<file>", "NaN/Inf", str(e)) from None
    if bundle.bundle_id != expected:
        raise BundleError(
            file, "bundle_id", bundle.bundle_id, f"does not match the content (sha256 {expected})"
        )
    horizon = (now or datetime.now(timezone.utc)) + FUTURE_SKEW
    for name in ("started_at", "finished_at"):
        if getattr(bundle, name) > horizon:
            raise BundleError(file, name, getattr(bundle, name).isoformat(), "is in the future")
    for i, m in enumerate(bundle.measurements):
        if not math.isfinite(m.value):
            raise BundleError(file, f"measurements.{i}.value", m.value, "must be finite")
    return bundle


def read_bundle(path: str | Path, now: datetime | None = None) -> Bundle:
    """Read and validate one bundle file (size checked before it is read into memory)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise BundleError(str(p), "<file>", str(p), f"cannot be read ({e.strerror})") from None
    if size > MAX_BUNDLE_BYTES:
        raise BundleError(str(p), "<file>", f"{size} bytes", f"larger than {MAX_BUNDLE_BYTES} bytes")
    return parse_bundle(p.read_bytes(), file=str(p), now=now)
