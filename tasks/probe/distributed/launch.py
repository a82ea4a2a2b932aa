"""Process launcher for the multi-GPU probe: one worker process per rank, a deadline, no stragglers.

    .venv/bin/pytest -q tests/test_distributed.py -k crash

`launch` hosts a TCPStore on a free 127.0.0.1 port (port 0: the OS picks, no race between choosing
and binding), starts `python -m tasks.probe.distributed.worker` once per rank in its own session,
with NCCL_NVLS_ENABLE=0 forced last into its environment, and polls. After the first rank exits
non-zero the others get `grace_s`; at the deadline every rank still running is SIGKILLed with its
process group. The failure names the rank that failed first and what every rank did.
Imports: stdlib + torch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
FORCED_ENV = {"NCCL_NVLS_ENABLE": "0"}  # NVLS multicast must stay off on the lent H200 hosts (KINDS.md)
INJECT_ENV = "COSTGAP_DIST_INJECT"  # tests: fault injection, read by the worker (see there)
REAP_TIMEOUT_S = 30.0  # a SIGKILLed rank inside a CUDA call can take seconds to leave the driver


def _child_env(rank: int, world: int, port: int, job: dict[str, Any], cfg,
               threads: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
               COSTGAP_STORE_ADDR="127.0.0.1", COSTGAP_STORE_PORT=str(port),
               COSTGAP_DIST_JOB=json.dumps(job), OMP_NUM_THREADS=str(threads))
    env.pop(INJECT_ENV, None)
    inject = cfg.inject_failure or os.environ.get(INJECT_ENV)
    if inject:
        env[INJECT_ENV] = inject
    env.update(FORCED_ENV)  # last: nothing inherited can turn NVLS back on
    return env


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL one rank's process group (the rank and anything it started), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=REAP_TIMEOUT_S)
    except subprocess.TimeoutExpired:  # stuck in the driver (D state): leave it, do not hang here
        pass


_pause = time.sleep  # the poll interval's sleep (a test interrupts the launch through it)


def launch(job_kind: str, cfg, *, backend: str, world: int, deadline_s: float,
           preset: str | None = None, strategy: str = "ddp", threads: int = 1,
           micro_batch: int | None = None) -> dict[str, Any]:
    """Run one job on `world` ranks, `threads` CPU threads each (the same for n=1 and n: fair on CPU).

    Returns {"ok": True, "result", "pids"} or {"ok": False, "error_kind", "message", "pids"}.
    """
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=cfg.init_timeout_s))
    with tempfile.TemporaryDirectory(prefix="costgap-dist-") as tmp:
        job = {"job": job_kind, "backend": backend, "config": asdict(cfg), "preset": preset,
               "strategy": strategy, "micro_batch": micro_batch, "result_dir": tmp,
               "store_prefix": uuid.uuid4().hex}
        procs, logs, exited = [], [], {}
        first_failure, timed_out = None, False
        try:
            for rank in range(world):
                log = open(Path(tmp) / f"rank{rank}.log", "wb")
                logs.append(log)
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "tasks.probe.distributed.worker"], cwd=str(REPO_ROOT),
                    env=_child_env(rank, world, store.port, job, cfg, threads), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            t0 = time.monotonic()
            while len(exited) < world:
                now = time.monotonic()
                for r, p in enumerate(procs):
                    if r not in exited and p.poll() is not None:
                        exited[r] = now
                        if p.returncode != 0 and first_failure is None:
                            first_failure = now
                if len(exited) == world:
                    break
                if now - t0 > deadline_s:
                    timed_out = True
                    break
                if first_failure is not None and now - first_failure > cfg.grace_s:
                    break
                _pause(0.05)
        finally:  # on every path, even an exception here: no rank outlives its launch
            killed = [r for r, p in enumerate(procs) if r not in exited]
            for r in killed:
                _kill(procs[r])
            for log in logs:
                log.close()
        reports = {r: _read(Path(tmp) / f"rank{r}.json") for r in range(world)}
        tails = {r: _tail(Path(tmp) / f"rank{r}.log") for r in range(world)}
    del store
    pids = [p.pid for p in procs]
    if not killed and all(p.returncode == 0 for p in procs) and (reports[0] or {}).get("ok"):
        return {"ok": True, "result": reports[0]["result"], "pids": pids}
    return {**_failure(procs, exited, killed, reports, tails, timed_out, deadline_s, cfg.grace_s),
            "pids": pids}


def classify_text(text: str) -> str:
    """Bundle error_kind from an exception's text or a dead rank's log (e.g. NCCL's watchdog abort)."""
    low = text.lower()
    if "out of memory" in low or "outofmemoryerror" in low:
        return "oom"
    if "timed out" in low or "timeout" in low or "deadline" in low:
        return "timeout"
    if "cuda error" in low or "nccl error" in low or "cudaerror" in low or "ncclsystemerror" in low:
        return "cuda_error"
    return "crash"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _tail(path: Path, lines: int = 3) -> tuple[str, str]:
    """(last `lines` lines joined, last 20 kB for classification) of a rank's log."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "", ""
    return " | ".join(text.splitlines()[-lines:])[-600:], text[-20000:]


def _failure(procs, exited, killed, reports, tails, timed_out, deadline_s, grace_s) -> dict[str, Any]:
    """Name the rank that failed first and why; list what every other rank did."""
    failed = [r for r in sorted(exited, key=lambda r: (exited[r], reports[r] is not None))
              if procs[r].returncode != 0 or not (reports[r] or {}).get("ok")]
    notes = []
    for r in range(len(procs)):
        rep = reports[r]
        if r in killed:
            why = f"killed by the launcher ({'deadline' if timed_out else f'{grace_s:g} s grace'})"
        elif rep and not rep.get("ok"):
            why = f"{rep.get('error_kind')}: {rep.get('message')}"
        elif procs[r].returncode != 0:
            why = f"exited with code {procs[r].returncode} without a report: {tails[r][0]}"
        else:
            why = "ok"
        notes.append(f"rank {r}: {why}")
    if timed_out:
        kind, head = "timeout", f"launch exceeded its {deadline_s:.0f} s deadline"
    elif not failed:
        kind, head = "crash", "every rank exited 0 but rank 0 left no result"
    else:
        rep = reports[failed[0]]
        if rep and not rep.get("ok"):
            kind = rep.get("error_kind", "crash")
        else:  # died without a report (signal, NCCL watchdog abort): its log says why
            kind = classify_text(tails[failed[0]][1])
        head = f"rank {failed[0]} failed first"
    return {"ok": False, "error_kind": kind, "message": (head + "; " + "; ".join(notes))[:4000]}
