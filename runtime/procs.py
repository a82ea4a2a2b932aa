"""Is a recorded process still the one that was recorded? (Linux /proc; a pid alone can be reused.)

    python -c "import os; from runtime.procs import alive, process_started; print(alive(os.getpid(), process_started(os.getpid())))"

Used by the write slot (a holder that died without releasing) and the local Prefect server (a server
that was killed between two commands).
"""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]; None where unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def process_started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), which tells a reused pid apart."""
    fields = _stat(pid)
    return fields[19] if fields else None


def alive(pid: int, started: str | None) -> bool:
    """Whether process `pid` still runs (a zombie does not) and is the one recorded (not a reused pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):  # exited, not yet reaped by its parent
        return False
    return started is None or fields is None or fields[19] == started
