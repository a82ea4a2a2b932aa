"""The public measurements the collective and step models are fitted and scored on (issue 42), read once.

    .venv/bin/python -c "from tasks.estimate.public_rows import busbw_rows; print(len(busbw_rows()))"

tasks/estimate/data/nccl_busbw.csv: nccl-tests all_reduce_perf bus bandwidth per (system, size), each row with
its source and date; tasks/estimate/data/dp_scaling.csv: published data-parallel throughput on 1 and N GPUs
from one source; tasks/estimate/data/instance_fabrics.csv: the fabric and network of instance types. Each
row's `role` says whether it fits the model (`fit`) or scores it (`holdout`): the fit never reads a holdout
row. A malformed row fails naming the file, the row and the field.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("data")
BUSBW = DATA / "nccl_busbw.csv"
SCALING = DATA / "dp_scaling.csv"
FABRICS = DATA / "instance_fabrics.csv"
ROLES = ("fit", "holdout")
HOST_PATHS = ("switch", "socket", "cross-socket", "unknown")  # pcie / pcie-host rows: PIX-PXB | PHB-NODE | SYS
TRUE = {"1", "true", "yes", "on", "y"}
FALSE = {"0", "false", "no", "off", "n"}  # nvls: anything else (unknown, empty) is not known


class RowError(ValueError):
    """A data row that cannot be used: names the file, the row and the field."""


def _read(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        rows = []
        for i, rec in enumerate(csv.DictReader(fh), start=2):
            if not any((v or "").strip() for v in rec.values()):
                continue
            rows.append({k.strip(): (v or "").strip() for k, v in rec.items() if k} | {"_line": i})
        return rows


def _num(path: Path, rec: dict, name: str, *, required: bool = True, positive: bool = True) -> float | None:
    text = rec.get(name, "")
    if text == "":
        if required:
            raise RowError(f"{path.name}:{rec['_line']} ({rec.get('row_id', '?')}): field '{name}' is empty")
        return None
    try:
        v = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise RowError(f"{path.name}:{rec['_line']} ({rec.get('row_id', '?')}): field '{name}' = {text!r}: "
                       "expected a number") from None
    if positive and v <= 0:
        raise RowError(f"{path.name}:{rec['_line']} ({rec.get('row_id', '?')}): field '{name}' = {text!r}: expected > 0")
    return v


def _common(path: Path, rec: dict, role: str | None) -> dict | None:
    if rec.get("role") not in ROLES:
        raise RowError(f"{path.name}:{rec['_line']} ({rec.get('row_id', '?')}): field 'role' = {rec.get('role')!r}: "
                       f"expected one of {ROLES}")
    if role and rec["role"] != role:
        return None
    nodes = _num(path, rec, "nodes", required=False) or 1
    rnd = rec.get("round") or "1"  # collection round: 1 = issue 42's first pass; a file without the column is round 1
    if rnd not in ("1", "2"):
        raise RowError(f"{path.name}:{rec['_line']} ({rec.get('row_id', '?')}): field 'round' = {rnd!r}: expected 1 or 2")
    return {**rec, "gpus_per_node": int(_num(path, rec, "gpus_per_node")), "nodes": int(nodes),
            "fabric": rec.get("fabric", "").lower() or None, "network": rec.get("network") or None, "round": int(rnd),
            "source": source_key(rec.get("source_url", ""))}


def source_key(url: str) -> str:
    """The publication a row comes from, as the fit/holdout split and the spread count it: a GitHub repository
    (owner/name, whatever file or commit) or one issue/pull-request thread; any other address as written."""
    m = re.match(r"https?://github\.com/([^/]+)/([^/#?]+)(?:/(issues|pull)/(\d+))?", url or "")
    if not m:
        return url or ""
    return f"{m.group(1)}/{m.group(2)}" + (f"#{m.group(4)}" if m.group(3) else "")


@lru_cache(maxsize=8)
def _busbw(path: str, role: str | None) -> tuple[dict, ...]:
    p, out = Path(path), []
    for rec in _read(p):
        row = _common(p, rec, role)
        if row is None:
            continue
        nvls = (rec.get("nvls") or "").lower()
        host = (rec.get("host_path") or "").lower() or None
        if host is not None and (host not in HOST_PATHS or row["fabric"] not in ("pcie", "pcie-host")):
            raise RowError(f"{p.name}:{rec['_line']} ({rec.get('row_id', '?')}): field 'host_path' = {host!r}: expected "
                           f"one of {HOST_PATHS}, on pcie and pcie-host rows only")
        row.update(size_bytes=_num(p, rec, "size_bytes", required=False), busbw_gbps=_num(p, rec, "busbw_gbps"),
                   nvls=True if nvls in TRUE else (False if nvls in FALSE else None),
                   nccl_version=rec.get("nccl_version") or None, host_path=host, defect=rec.get("defect") or None)
        out.append(row)
    return tuple(out)


def busbw_rows(role: str | None = None, path: Path = BUSBW) -> list[dict]:
    """nccl_busbw.csv rows (only `role`'s when given), numbers parsed; size_bytes None where only a peak was
    quoted, nvls None where the source does not say; `defect` the reason the fit leaves the row out (None: it reads it);
    `round` 1 or 2 (the collection round); `source` the publication (source_key)."""
    return list(_busbw(str(path), role))


GRAD_BYTES = {"fp32": 4.0, "tf32": 4.0, "amp": 4.0, "fp16": 2.0, "bf16": 2.0}  # torch AMP keeps fp32 params and grads


@lru_cache(maxsize=8)
def _scaling(path: str, role: str | None) -> tuple[dict, ...]:
    p, out = Path(path), []
    for rec in _read(p):
        row = _common(p, rec, role)
        if row is None:
            continue
        n = row["gpus_per_node"] * row["nodes"]
        t1, tn = _num(p, rec, "throughput_1"), _num(p, rec, "throughput_n", required=False)
        eff = _num(p, rec, "efficiency", required=False)
        if eff is None:
            if tn is None:
                raise RowError(f"{p.name}:{rec['_line']} ({rec.get('row_id')}): neither 'efficiency' nor 'throughput_n'")
            eff = tn / (n * t1)
        params = _num(p, rec, "params")
        grad_b = _num(p, rec, "grad_bytes_per_param", required=False) or GRAD_BYTES.get(rec.get("precision", "").lower())
        batch = _num(p, rec, "samples_per_gpu_step", required=False)
        missing = [n for n, v in (("grad_bytes_per_param (or a precision that says it)", grad_b),
                                  ("samples_per_gpu_step", batch)) if v is None]
        row.update(params=params, trainable_params=_num(p, rec, "trainable_params", required=False) or params,
                   grad_bytes_per_param=grad_b, throughput_1=t1, throughput_n=tn, efficiency=eff,
                   unscoreable=f"{', '.join(missing)} not published: not predictable" if missing else None,
                   samples_per_gpu_step=batch,
                   tokens_per_sample=_num(p, rec, "tokens_per_sample", required=False) or 1.0,
                   strategy=(rec.get("strategy") or "ddp").lower())
        out.append(row)
    return tuple(out)


def scaling_rows(role: str | None = None, path: Path = SCALING) -> list[dict]:
    """dp_scaling.csv rows (only `role`'s when given), numbers parsed, efficiency from the throughputs if blank;
    `unscoreable` says why a row cannot be predicted (its per-GPU batch or gradient size unpublished)."""
    return list(_scaling(str(path), role))


def scaling_inputs(row: dict) -> dict:
    """predict_scaling's arguments for one dp_scaling row (throughput_1 is one GPU alone, in `unit`: samples
    (images, sequences) per second, or tokens per second)."""
    return dict(gpu=row["gpu"], count=row["gpus_per_node"], fabric=row["fabric"], nodes=row["nodes"],
                network=row["network"], params=row["params"], trainable_params=row["trainable_params"],
                tokens_per_gpu_step=row["samples_per_gpu_step"] * row["tokens_per_sample"],
                tokens_per_s_1=row["throughput_1"] * (1.0 if "token" in (row.get("unit") or "").lower()
                                                      else row["tokens_per_sample"]), strategy=row["strategy"],
                grad_bytes_per_param=row["grad_bytes_per_param"])


def instance_fabrics(path: Path = FABRICS) -> dict[tuple[str, str], dict]:
    """(provider, instance_type) -> {fabric, network, source_url, ...}; network as 'kind:gbps' or None."""
    out = {}
    for rec in _read(path):
        kind, gbps = (rec.get("network_kind") or "").lower(), rec.get("network_gbps") or ""
        fabric = (rec.get("fabric") or "").lower() or None
        out[(rec.get("provider", "").lower(), rec.get("instance_type", "").lower())] = {
            **rec, "fabric": fabric, "network": f"{kind}:{gbps}" if kind and gbps else None}
    return out
