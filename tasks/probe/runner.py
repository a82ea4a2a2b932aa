"""Assemble one probe run: fingerprint, benchmarks, fine-tune, telemetry -> one sealed bundle file.

    python -m tasks.probe --profile quick --target local --out /tmp/bundles

Every try of every task is an attempt; a benchmark that fails is recorded and the run goes on.
The bundle is sealed with tasks.canonical (content address) and written atomically as
OUT/<bundle_id>.json (temporary file + os.replace), so a reader never sees half a bundle.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import torch

from tasks.canonical import SCHEMA_VERSION, canonical_json, seal
from tasks.probe import PROBE_VERSION
from tasks.probe.distributed.collectives import measure_collectives
from tasks.probe.finetune.run import _nvml_gpus, check_inputs, run_finetunes
from tasks.probe.finetune.sharing import measure_sharing
from tasks.probe.hardware import gemm
from tasks.probe.hardware.feed import measure_feed
from tasks.probe.hardware.gemm_sustained import measure_sustained
from tasks.probe.hardware.hostdev import measure_hostdev
from tasks.probe.hardware.memory import measure_memory
from tasks.probe.hardware.numa_copy import measure_numa
from tasks.probe.hardware.storage import measure_storage
from tasks.probe.host.busy import measure_busy
from tasks.probe.host.environment import fingerprint
from tasks.probe.host.interconnect import fingerprint as interconnect_fingerprint
from tasks.probe.host.nvml import Sampler
from tasks.probe.host.specs import UNKNOWN, lookup
from tasks.probe.profiles import Profile, get_profile, with_data_dir
from tasks.probe.record import attempt, classify, iso_now, run_task

TASK_GROUPS = ("gemm", "gemm_sustained", "memory", "hostdev", "numa", "storage", "feed", "allreduce",
               "finetune", "gpu_busy", "sharing")  # names accepted by --skip


def _log(msg: str) -> None:
    print(f"[probe {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _iso(epoch: float) -> str:
    from datetime import datetime, timezone

    t = datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")
    return t.replace("+00:00", "Z")


def _spec_for(env: dict) -> tuple[Any, str | None]:
    if not env.get("gpu_name"):
        return UNKNOWN, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = lookup(env["gpu_name"])
    return spec, (str(caught[0].message) if caught else None)


def _finetunes(prof: Profile, device: str, sampler, attempts: list) -> list[dict]:
    t, started = time.perf_counter(), iso_now()
    try:
        fts, atts = run_finetunes(list(prof.finetune_presets), device=device, sampler=sampler,
                                  budget_s=prof.finetune_budget_s,
                                  options=dict(prof.finetune_options) or None)
    except Exception as e:  # run_finetunes records its own failures; this is the backstop
        attempts.append(attempt("finetune", 1, "failed", time.perf_counter() - t,
                                error_kind=classify(e), message=f"{type(e).__name__}: {e}",
                                started_at=started))
        return []
    attempts.extend(atts)
    return fts


def _interconnect() -> dict:
    """The interconnect extras (NVLink/P2P/topology)."""
    try:
        extra = interconnect_fingerprint()
    except Exception as e:  # a fingerprint failure must not cost the bundle
        return {"interconnect_error": f"{type(e).__name__}: {e}"[:300]}
    ok = (str, int, float, bool, type(None))
    return {k: v for k, v in extra.items()
            if isinstance(v, ok) or (isinstance(v, list) and all(isinstance(x, ok) for x in v))}


def collect(prof: Profile, *, device: str, sampler, skip: frozenset) -> dict[str, Any]:
    """Run every task of `prof`; returns environment, attempts, measurements, finetune."""
    attempts: list[dict] = []
    measurements: list[dict] = []
    env = run_task("environment", lambda: [fingerprint()], attempts)
    env = env[0] if env else {"gpu_count": 0, "source": "none"}
    env.setdefault("extra", {}).update(_interconnect())
    spec, warning = _spec_for(env)
    if warning:
        env.setdefault("extra", {})["spec_warning"] = warning
        _log(warning)
    env.setdefault("extra", {})["spec_key"] = spec.key

    def task(name: str, fn: Callable[[], list], retries: int | None = None) -> list:
        group = name.split(":")[0]
        if group in skip:
            attempts.append(attempt(name, 1, "skipped", 0.0, message="skipped by --skip",
                                    started_at=iso_now()))
            return []
        sampler.set_phase(name)
        _log(f"{name} ...")
        t = time.perf_counter()
        out = run_task(name, fn, attempts, retries=prof.retries if retries is None else retries)
        _log(f"{name} done in {time.perf_counter() - t:.1f} s: " + ", ".join(
            f"{m['metric']}={m['value']:.4g}" for m in out))
        measurements.extend(out)
        return out

    g = prof.gemm
    best = {}
    for dtype in g.dtypes:
        res = task(f"gemm:{dtype}", lambda d=dtype: gemm.measure_gemm(
            g, device=device, spec=spec, sampler=sampler, dtype=d))
        if res:
            best[dtype] = res[0]
    if g.classic_2048:
        task("gemm:mm2048", lambda: gemm.measure_classic(g, device=device, spec=spec,
                                                         sampler=sampler))
    b = best.get("bf16")
    bp = b["params"] if b else {}
    task("gemm_sustained", lambda: measure_sustained(
        prof.sustained, device=device, spec=spec, sampler=sampler,
        shape=[bp["m"], bp["n"], bp["k"]] if b else None, burst_tflops=b["value"] if b else None,
        candidates=[gemm.parse_shape(t) for t in bp.get("top_shapes", [])],
        candidate_burst=list(bp.get("top_tflops", []))))
    task("gemm_sustained:fixed", lambda: measure_sustained(
        prof.sustained, device=device, spec=spec, sampler=sampler, shape=None,
        burst_tflops=None, variant="fixed"))
    task("memory", lambda: measure_memory(prof.memory, device=device, spec=spec, sampler=sampler))
    task("hostdev", lambda: measure_hostdev(prof.hostdev, device=device, sampler=sampler))
    task("numa", lambda: measure_numa(prof.numa, device=device, bus_id=env.get("extra", {}).get("pci_bus_id")))
    task("storage", lambda: measure_storage(prof.storage, sampler=sampler))
    task("feed", lambda: measure_feed(prof.feed, device=device))
    finetune: list[dict] = []
    if "allreduce" in skip:
        attempts.append(attempt("allreduce", 1, "skipped", 0.0, message="skipped by --skip"))
    else:
        sampler.set_phase("allreduce")
        ms, fts, atts = measure_collectives(prof, device=device)
        measurements += ms
        finetune += fts
        attempts += atts
    if "finetune" in skip:
        attempts.append(attempt("finetune", 1, "skipped", 0.0, message="skipped by --skip"))
    else:
        sampler.set_phase("finetune")
        _log(f"finetune {','.join(prof.finetune_presets)} ...")
        finetune += _finetunes(prof, device, sampler, attempts)
    gpus = _nvml_gpus(sampler, torch.device(device)) if str(device).startswith("cuda") else None
    task("gpu_busy", lambda: measure_busy(sampler, finetune, gpus))
    for preset in prof.sharing.presets:
        task(f"sharing:{preset}", lambda p=preset: measure_sharing(prof.sharing, p, device=device, sampler=sampler),
             retries=0)  # a second try would cost up to its timeout again: the profile's 8 minutes come first
    sampler.set_phase("")
    return {"environment": env, "attempts": attempts, "measurements": measurements,
            "finetune": finetune}


def write_bundle(doc: dict[str, Any], out_dir: str | Path) -> Path:
    """Seal `doc` and write it atomically as out_dir/<bundle_id>.json."""
    sealed = seal(doc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    final = out / f"{sealed['bundle_id']}.json"
    fd, tmp = tempfile.mkstemp(prefix=".bundle-", suffix=".tmp", dir=out)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(canonical_json(sealed))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def run_probe(profile: str, target: str, out_dir: str, *, origin: dict | None = None,
              data_dir: str | None = None, skip: set[str] | frozenset = frozenset(),
              device: str | None = None, finetune_options: dict | None = None,
              presets: list[str] | None = None) -> Path:
    """Run the probe for `profile` on this host and return the bundle's path; `presets` replaces
    the profile's fine-tune presets (the bundle lists what ran)."""
    prof = with_data_dir(get_profile(profile), data_dir)
    if presets:
        prof = replace(prof, finetune_presets=tuple(presets))
    if finetune_options:  # the CLI's --model/--tokenizer/--data, over the profile's own options
        prof = replace(prof, finetune_options={**prof.finetune_options, **finetune_options})
    if "finetune" not in skip:  # a bad --data/--model fails here in seconds, before the GEMM sweep
        check_inputs(list(prof.finetune_presets), dict(prof.finetune_options) or None)
    unknown = set(skip) - set(TASK_GROUPS)
    if unknown:
        raise ValueError(f"skip = {sorted(unknown)}: expected names from {list(TASK_GROUPS)}")
    device = device or ("cuda:0" if torch.cuda.is_available() else "cpu")
    t0 = time.time()
    with Sampler(t0=t0, hz=10.0) as sampler:
        parts = collect(prof, device=device, sampler=sampler, skip=frozenset(skip))
    finished = max(time.time(), t0)
    doc = {
        "schema_version": SCHEMA_VERSION, "probe_version": PROBE_VERSION, "target": target,
        "profile": prof.name, "started_at": _iso(t0), "finished_at": _iso(finished),
        **parts, "telemetry": sampler.columns(),
        "origin": origin or {"kind": "cli", "host": socket.gethostname()},
    }
    path = write_bundle(doc, out_dir)
    _log(f"bundle written in {finished - t0:.1f} s: {path}")
    return path
