"""The write slot leaves nothing to chance: a writer killed right after taking the slot is freed at once,
and a failed lease renewal is one warning line, not a thread's traceback.

    .venv/bin/pytest -q tests/test_write_slot_holder.py

Real Prefect (the session's test server), a real child process killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from runtime import write_slot as ws
from tests.conftest import REPO

# The child takes the slot through the same steps as write_slot (holder recorded, then the slot asked
# for) and is killed before it can record its lease: the worst moment the issue names.
KILLED_AFTER_TAKING = textwrap.dedent("""
    import os, signal, sys
    from prefect.client.orchestration import get_client
    from runtime import write_slot as ws

    wh = sys.argv[1]
    name = ws.slot_name(wh)
    ws.ensure_write_limit(name, progress=None)
    with get_client(sync_client=True) as client, ws._ordered(ws.holder_file(wh)) as f:
        ws._record(f, ws._me(name, None))
        assert ws._take(client, name) is not None
        print("taken", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
""")


def _active(name: str) -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_global_concurrency_limit_by_name(name).active_slots


def test_a_writer_killed_before_recording_its_lease_is_freed_at_once(tmp_path):
    wh = str(tmp_path / "w.duckdb")
    child = subprocess.run([sys.executable, "-c", KILLED_AFTER_TAKING, wh], cwd=REPO, capture_output=True,
                           text=True, timeout=120, env=dict(os.environ))
    assert child.returncode == -signal.SIGKILL and "taken" in child.stdout, child.stderr
    held = json.loads(ws.holder_file(wh).read_text())
    assert held["pid"] != os.getpid() and held["lease_id"] is None  # the child is recorded; its lease is not
    name = ws.slot_name(wh)
    assert _active(name) == 1  # the dead child still holds the slot on the server
    lines: list[str] = []
    t0 = time.monotonic()
    with ws.write_slot(wh, progress=lines.append):
        waited = time.monotonic() - t0
        assert _active(name) == 1
    assert waited < 10, f"waited {waited:.1f} s for a dead writer's slot"
    assert any("freed the write slot of pid" in ln and "before it recorded its lease" in ln for ln in lines), lines
    assert _active(name) == 0 and ws.holder_file(wh).read_text() == ""


def test_a_failed_renewal_is_one_warning_line(tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client
    from uuid import UUID

    monkeypatch.setattr(ws, "RENEW_EVERY_S", 0.1)
    wh = str(tmp_path / "w.duckdb")
    lines: list[str] = []
    crashed: list = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args))
    with ws.write_slot(wh, progress=lines.append):
        lease = UUID(json.loads(ws.holder_file(wh).read_text())["lease_id"])
        with get_client(sync_client=True) as client:  # the server forgets the lease: renewals now fail (410)
            client.release_concurrency_slots_with_lease(lease)
        deadline = time.monotonic() + 20
        while not any("could not renew" in ln for ln in lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # several more failed renewals: still one line
    warnings = [ln for ln in lines if "could not renew" in ln]
    assert len(warnings) == 1, lines
    assert warnings[0].startswith("costgap: warning: ") and "\n" not in warnings[0] and str(lease) in warnings[0]
    assert not crashed, "the renewal thread raised"
