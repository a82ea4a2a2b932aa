"""A fresh machine never fails its first command: three cold API starts at once beside a CPU hog.

    .venv/bin/pytest -q tests/test_cold_start.py      # its figures print in the 'costgap figures' section

Each start gets a new, empty PREFECT_HOME and no PREFECT_API_URL, as a new machine has, so Prefect's
server creates its database from nothing every time (the slow part: 19-60 s on this 2-core box with two
busy processes beside it, against Prefect's 20 s default). The first start is the main job itself
(`costgap run` of the local target, minus the probe's slow parts: landing, validation, report) on the
default local server; the other two are `costgap ingest` of one bundle, the smallest command that
needs the API, one on an ephemeral server (COSTGAP_API=ephemeral, the one-shot mode) and one on the local
server (started in the background, then killed by its record). All three run at once, so each start competes
with two others besides the hog. The test prints the slowest API start and the slowest whole command.

The property it keeps (issue 17, resized twice by issue 44): a first command on a fresh PREFECT_HOME
succeeds while its Prefect server creates its database on a box busy with two spinning processes and other
cold starts; both server modes (the machine's local server, the one-shot one) and both kinds of first
command (the main job, an ingest) are among the starts. Issue 17 asked for ten; issue 44 first sized it to
five at once (three local, two one-shot), then to three (the main job and an ingest on the local server, an
ingest on a one-shot one): every kind is still there, once each way, and every start still competes with the
other two and the two spinning processes, which fill both cores. Measured in the suite (per-test CPU, the
test's process tree), five starts cost 140 CPU-s: ~28 each, a server creating its database and a fresh
command's imports; the two dropped were repeats of kinds the other three cover.

The hog is two busy processes beside the starts, one per core. Inside the parallel suite the box is
already that busy with other tests' work; the two spinning processes would only add their share of the
CPU to the suite's minutes, so they are paused (SIGSTOP) while at least that many runnable threads that
are not this test's are already there, and resumed (SIGCONT) when there are fewer: the starts always
compete with at least two busy processes. Run alone, nothing else runs and the hog spins throughout.
The figure line says how much of the time each hog spun.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SUMMARY
from tests.factories import bundle_doc, write_bundle
from tests.pool_harness import free_port, kill_recorded

STARTS = 3  # issue 17 asked for ten; issue 44 sized it to five, then three, in one wave (module docstring)
WAVE = 3  # cold starts at once (each its own PREFECT_HOME, port and warehouse)
HOG_PROCESSES = 2  # one per core of this box
SKIP = "finetune,storage,gemm_sustained,feed,hostdev,memory"  # keep the run short: the start is what is tested
READY = re.compile(r"(?:Prefect API|Prefect's local server) ready in ([0-9.]+) s")


def _command(i: int, home, mode: str) -> list[str]:
    where = ["--warehouse", str(home / "wh.duckdb")]
    if i == 0:
        return [sys.executable, "-m", "cli.main", "run", "--skip", SKIP, *where, "--site", str(home / "site"),
                "--results", str(home / "results"), "--targets-file", str(REPO / "deploy" / "targets.toml")]
    return [sys.executable, "-m", "cli.main", "ingest", str(write_bundle(home / "in", bundle_doc(seq=i))), *where]


def _start(i: int, root):
    """Start cold start i (its own PREFECT_HOME, port and mode); returns what _finish needs."""
    mode = "local" if i % 2 == 0 else "ephemeral"
    home = root / f"run-{i}"
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    # COSTGAP_WARM=0: a local start spawns the warm process (runtime/warm.py) only after the API answers, so
    # it bears on nothing measured here, and it would cost ~5 CPU-s of imports per start, killed unused
    # (tests/test_local_server.py tests it). The start itself is the same.
    env.update(PREFECT_HOME=str(home / "prefect-home"), PREFECT_LOGGING_LEVEL="WARNING", COSTGAP_API=mode,
               COSTGAP_SERVER_PORT=str(free_port()), COSTGAP_WARM="0")
    out, err = open(home / "stdout", "w"), open(home / "stderr", "w")  # files: a server child may outlive a pipe
    proc = subprocess.Popen(_command(i, home, mode), cwd=REPO, env=env, stdout=out, stderr=err)
    out.close()
    err.close()
    return i, mode, home, env, proc, time.monotonic()


def _finish(started) -> tuple[float, float]:
    """Wait for one cold start, stop its local server, check it; returns (API start s, whole command s)."""
    i, mode, home, env, proc, t0 = started
    try:
        code = proc.wait(timeout=900)
    finally:
        if mode == "local":
            kill_recorded(home / "prefect-home")
    wall = time.monotonic() - t0
    stdout, stderr = (home / "stdout").read_text(), (home / "stderr").read_text()
    assert code == 0, f"cold start {i + 1} ({mode}) failed:\n{stdout[-3000:]}\n{stderr[-3000:]}"
    ready = READY.search(stderr)
    assert ready, stderr[-2000:]
    if mode == "local":
        assert "starting Prefect's local server for this machine" in stderr
    else:
        assert "starting Prefect's local API server (ephemeral" in stderr
    if i == 0:
        assert (home / "site" / "index.html").exists()
    else:
        assert "landed 1," in stdout
    return float(ready.group(1)), wall


def _running_threads(pids) -> int:
    """Runnable threads (state R) of these processes, from /proc; a process that is gone counts 0."""
    n = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            except OSError:
                continue
            n += stat.rsplit(")", 1)[1].split()[0] == "R"
    return n


def _box_running() -> int:
    """Runnable threads on the whole box now (/proc/stat procs_running)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    raise RuntimeError("/proc/stat has no procs_running line")


class Hog:
    """HOG_PROCESSES spinning processes, topped up to that many busy threads beside this test's own
    (module docstring): each half second, the runnable threads of other processes are counted (the box's
    minus this test's tree, averaged over the last 3 s), and hog k spins only while fewer than k+1 others
    run. Fractions of the time each hog spun are kept for the figure line."""

    TICK_S = 0.5
    WINDOW = 6

    def __init__(self, n: int):
        import psutil

        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
        self.me = psutil.Process()
        self.spun = [0] * n
        self.ticks = 0
        self.stopped = [False] * n
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._control, daemon=True)
        self.thread.start()

    def _control(self) -> None:
        import psutil

        seen: list[int] = []
        while not self.done.wait(self.TICK_S):
            try:
                tree = [self.me.pid] + [p.pid for p in self.me.children(recursive=True)]
            except psutil.Error:
                continue
            seen = (seen + [max(0, _box_running() - _running_threads(tree))])[-self.WINDOW:]
            others = sum(seen) / len(seen)
            self.ticks += 1
            for k, proc in enumerate(self.procs):
                stop = others >= k + 1
                if stop != self.stopped[k]:
                    proc.send_signal(signal.SIGSTOP if stop else signal.SIGCONT)
                    self.stopped[k] = stop
                self.spun[k] += not stop

    def shares(self) -> str:
        return ", ".join(f"{s / max(self.ticks, 1):.0%}" for s in self.spun)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=10)
        for proc in self.procs:
            proc.kill()
            proc.send_signal(signal.SIGCONT)  # a stopped process dies of SIGKILL too; this only makes sure
            proc.wait()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three cold starts at once beside the hog: minutes on this 2-core box
def test_three_cold_starts_at_once_beside_a_cpu_hog(tmp_path, record_property):
    hog = Hog(HOG_PROCESSES)
    starts, walls = [], []
    try:
        for wave in range(0, STARTS, WAVE):  # each wave's starts run at once: the box is busier still
            running = [_start(i, tmp_path) for i in range(wave, min(wave + WAVE, STARTS))]
            for started in running:
                api_s, wall = _finish(started)
                starts.append(api_s)
                walls.append(wall)
    finally:
        hog.stop()
    record_property(SUMMARY, f"cold starts: {STARTS}/{STARTS} succeeded beside {HOG_PROCESSES} busy processes "
                    f"(the hog's, spinning {hog.shares()} of the time; other tests' work the rest), {WAVE} at a "
                    f"time; slowest Prefect API start {max(starts):.1f} s (median "
                    f"{sorted(starts)[len(starts) // 2]:.1f} s); slowest whole command {max(walls):.1f} s")
