"""Run the probe in a child process, and read bundles from an import inbox.

    python -c "from tasks.dispatch.child import run_probe_child as r; print(r('quick', 'local', '/tmp/b', skip={'finetune'}))"

`run_probe_child` runs `python -m tasks.probe --profile P --target T --out DIR --origin-kind K
--flow-run-id ID [--skip ...]` (helper A's CLI; the bundle path is the last line of its stdout) in
a child process of its own session. A torch crash, an OOM kill or a hang then ends the child, never
the flow: the parent gets a ChildResult with the exit code, the stderr tail (streamed to `log` as
it comes) and an error kind. Stdlib only: nothing here may need more than the probe host has.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Ordered: the first pattern that matches a failure message decides its error kind.
_KINDS = (
    ("oom", re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|MemoryError", re.I)),
    ("cuda_error", re.compile(r"CUDA error|cudaError|CUDNN_STATUS|NCCL error|illegal memory access", re.I)),
    ("timeout", re.compile(r"timed? ?out|TimeoutError|deadline exceeded", re.I)),
    ("preempted", re.compile(r"preempt|spot instance (interruption|termination)", re.I)),
    ("crash", re.compile(r"crash|Segmentation fault|SIGKILL|SIGSEGV|core dumped|worker.*(died|offline)", re.I)),
)
STDERR_TAIL_CHARS = 4000  # the attempts.message column keeps at most this much (tasks.bundle.Attempt)


def classify_error(message: str | None, returncode: int | None = None) -> str:
    """Error kind (oom | cuda_error | timeout | preempted | crash | other) for a failure."""
    text = message or ""
    for kind, pattern in _KINDS:
        if pattern.search(text):
            return kind
    if returncode is not None and returncode < 0:  # killed by a signal: the OS or a person ended it
        return "crash"
    return "other"


@dataclass(frozen=True)
class ChildResult:
    """What one probe child process left behind."""

    bundle: Path | None  # the bundle it wrote; None when it failed
    returncode: int | None  # None when it was killed for running past timeout_s
    duration_s: float
    stderr_tail: str = ""  # last STDERR_TAIL_CHARS of its stderr (the traceback, usually)
    error_kind: str | None = None  # set when bundle is None
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.bundle is not None


def child_command(profile: str, target: str, out_dir: str | Path, *, skip=(), origin=None,
                  python: str | None = None) -> list[str]:
    """The probe's own CLI (tasks/probe/__main__.py), with the Prefect origin it records."""
    origin = origin or {}
    cmd = [python or sys.executable, "-m", "tasks.probe", "--profile", profile, "--target", target,
           "--out", str(out_dir), "--origin-kind", origin.get("kind") or "cli"]
    if origin.get("flow_run_id"):
        cmd += ["--flow-run-id", str(origin["flow_run_id"])]
    if skip:
        cmd += ["--skip", ",".join(sorted(skip))]
    return cmd


def run_probe_child(profile: str, target: str, out_dir: str | Path, *, skip=(), origin: dict | None = None,
                    timeout_s: float = 3600.0, env: dict | None = None, log=None) -> ChildResult:
    """Run one probe in a child process; never raises for a failed probe (see ChildResult)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cmd = child_command(profile, target, out, skip=skip, origin=origin)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    err_lines: list[str] = []
    out_lines: list[str] = []
    readers = [threading.Thread(target=_pump, args=(proc.stderr, err_lines, log), daemon=True),
               threading.Thread(target=_pump, args=(proc.stdout, out_lines, None), daemon=True)]
    for r in readers:  # stderr is streamed as it comes: the probe's progress shows while it works
        r.start()
    rc: int | None
    try:
        rc = proc.wait(timeout=max(timeout_s - (time.monotonic() - t0), 0.1))
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the child's whole session: torch may have forked
            proc.wait()
    for r in readers:
        r.join(timeout=5)
    stderr, stdout = "".join(err_lines), "".join(out_lines)
    if rc is None:
        stderr += f"\nprobe timed out after {timeout_s:.0f} s"
    duration = time.monotonic() - t0
    tail = stderr[-STDERR_TAIL_CHARS:]
    bundle = _bundle_from_stdout(stdout) if rc == 0 else None
    if bundle is None:
        kind = "timeout" if rc is None else classify_error(tail, rc)
        if rc == 0:
            tail = (tail + "\nprobe exited 0 but printed no bundle path").strip()
        return ChildResult(None, rc, duration, tail, kind, cmd)
    return ChildResult(bundle, rc, duration, tail, None, cmd)


def _pump(stream, sink: list[str], log) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if len(sink) > 400:  # keep the tail only; a chatty probe must not grow memory
            del sink[:200]
        if log is not None:
            log(line.rstrip())


def _bundle_from_stdout(stdout: str) -> Path | None:
    lines = [x.strip() for x in stdout.splitlines() if x.strip()]
    if not lines:
        return None
    p = Path(lines[-1])
    return p if p.suffix == ".json" and p.is_file() else None


def inbox_bundles(fs, root: str) -> list[str]:
    """Bundle files (*.json, no dot-files) under an inbox directory on an fsspec filesystem."""
    if not fs.exists(root):
        return []
    return sorted(p for p in fs.find(root) if p.endswith(".json") and not Path(p).name.startswith("."))
