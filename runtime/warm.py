"""The warm process: costgap's imports done once per machine, every later command forked from it.

    costgap server status      # shows it (pid, commands served) beside the local Prefect server

A command spends most of its time importing (Great Expectations ~2 s, Prefect ~0.7 s, polars, pandas,
DuckDB on this 2-core box), not working. Beside the local Prefect server (runtime/server.py), the first
command in local mode starts this process in the background: it imports everything a command needs,
once, and listens on a unix socket private to this user (a 0700 directory under the temp dir, one
socket per PREFECT_HOME). The `costgap` entry point (cli/launch.py) hands it the command: argv,
working directory, environment and its own stdin/stdout/stderr (passed as file descriptors). It forks;
the child first tells the client its pid, then takes those over and runs the command exactly as a fresh
process would (the Prefect settings are re-read from the command's environment), and the warm process
reports the child's exit status back (a command killed by a signal kills the client with the same
signal). The client forwards SIGINT and SIGTERM to the child. A client that never hears a pid (the warm
process died with the connection in its backlog, or before forking) knows nothing ran and runs the
command itself.

It serves commands that talk to an API already running: the local server, or the server named by
PREFECT_API_URL. Never used for a one-shot ephemeral command (COSTGAP_API=ephemeral without
PREFECT_API_URL: one-shot means nothing resident) or with COSTGAP_WARM=0. It lives beside the local
server and leaves with it; `python -m cli.warm_serve HOME --beside PID` lives beside any process
instead (the test suite runs one per session beside its Prefect test server: tests/conftest.py). When
the code or the installed packages change after it started, it answers "stale" and exits, and the command runs in a fresh process instead (which starts a new warm process). One per
PREFECT_HOME: it holds a lock for its lifetime; `costgap server stop` stops it. If it is gone or does
not answer, the command simply runs in a fresh process: the warm process only ever saves time.

This module is imported by the entry point before anything heavy: standard library only, and nothing of
costgap. What the process imports and what a forked command runs come from its own entry point,
cli/warm_serve.py, the one module that knows both this machinery and the CLI.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ENV = "COSTGAP_WARM"  # "0": never hand commands to the warm process
RECORD = "costgap-warm.json"
LOG = "costgap-warm.log"
CONNECT_TIMEOUT_S = 2.0
REPLY_TIMEOUT_S = 60.0  # it forks at once; only a hung warm process takes longer
PACKAGES = ("flows", "tasks", "warehouse", "reports")
SERVE_MODULE = "cli.warm_serve"  # the warm process's own entry point: costgap's imports and CLI
_HEADER = struct.Struct("!I")


def prefect_home(env: dict | None = None) -> Path:
    """PREFECT_HOME as Prefect resolves it by default (the env var, else ~/.prefect)."""
    env = os.environ if env is None else env
    return Path(env.get("PREFECT_HOME") or "~/.prefect").expanduser().resolve()


def socket_path(home: Path) -> Path:
    """A short path (unix sockets allow ~107 bytes) in a directory only this user can enter."""
    key = hashlib.sha256(str(home).encode()).hexdigest()[:20]
    return Path(tempfile.gettempdir()) / f"costgap-{os.getuid()}" / f"{key}.sock"


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path}: not a private directory of this user; the warm process is not used")
    return path


def fingerprint() -> str:
    """Changes when costgap's code or the installed packages change (mtimes and sizes, ~5 ms)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(sys.prefix.encode())
    for pkg in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(root / pkg):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{dirpath}/{name}:{st.st_mtime_ns}:{st.st_size}".encode())
    for entry in sys.path:
        if entry.endswith("site-packages") and os.path.isdir(entry):
            h.update(f"{entry}:{os.stat(entry).st_mtime_ns}".encode())
    return h.hexdigest()


def _send(sock: socket.socket, doc: dict, fds: list[int] | None = None) -> None:
    body = json.dumps(doc).encode()
    data = _HEADER.pack(len(body)) + body
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def _recv(sock: socket.socket, maxfds: int = 0) -> tuple[dict | None, list[int]]:
    """The request (and its `maxfds` descriptors), the one message a client sends; None at end of stream."""
    data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, maxfds)
    if not data:
        return None, fds
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack(data[:_HEADER.size])[0]:
        more = sock.recv(1 << 16)
        if not more:
            raise ConnectionError("the client closed the connection mid-request")
        data += more
    n = _HEADER.unpack(data[:_HEADER.size])[0]
    return json.loads(data[_HEADER.size:_HEADER.size + n]), fds


def _read(stream) -> dict | None:
    """One message of the warm process's replies (a buffered stream: two replies may come in one read)."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    body = stream.read(_HEADER.unpack(head)[0])
    return json.loads(body)


# ---------------------------------------------------------------- client side (cli/launch.py)

def delegate(argv: list[str]) -> int | None:
    """Run `costgap argv` in a child of the warm process; its exit code, or None to run it here instead."""
    env = dict(os.environ)
    if env.get(ENV) == "0" or not (env.get("PREFECT_API_URL") or env.get("COSTGAP_API", "local") == "local"):
        return None
    path = socket_path(prefect_home(env))
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(str(path))
            _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": env, "prefix": sys.prefix},
                  [0, 1, 2])
        except OSError:
            return None  # not running or not answering: a fresh process does the command
        sock.settimeout(REPLY_TIMEOUT_S)
        replies = sock.makefile("rb")
        try:
            reply = _read(replies)
        except ConnectionError:
            # The connection died before any child said "pid": the command was not started (the forked
            # child sends its pid itself, before it runs anything), e.g. the warm process was killed
            # with this connection still in its backlog. A fresh process does the command.
            return None
        except (OSError, ValueError) as e:  # no answer in time: it may have the command; never run it twice
            sys.stderr.write(f"costgap: error: the warm process took this command but did not answer ({e}); "
                             f"run it again with {ENV}=0 to run it without the warm process\n")
            return 1
        if not reply or "pid" not in reply:
            return None  # stale, refused, or gone before forking: nothing ran, a fresh process does it
        sock.settimeout(None)
        child = reply["pid"]
        import signal

        def forward(signum, _frame):
            try:
                os.kill(child, signum)
            except ProcessLookupError:
                pass

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, forward)
        done = _read(replies)
        if not done or "code" not in done:
            sys.stderr.write("costgap: error: the warm process went away while running this command; "
                             "run it again (COSTGAP_WARM=0 runs it without the warm process)\n")
            return 1
        if done.get("signal"):  # the command died of a signal: so does this process, as a fresh one would
            sys.stdout.flush()
            if done["signal"] not in (signal.SIGKILL, signal.SIGSTOP):  # their action cannot be set (EINVAL)
                signal.signal(done["signal"], signal.SIG_DFL)
            os.kill(os.getpid(), done["signal"])
        return int(done["code"])
    finally:
        sock.close()


# ---------------------------------------------------------------- the warm process itself

def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", flush=True)


def _logging_env(env) -> dict:
    return {k: v for k, v in env.items() if k.startswith("PREFECT_LOGGING_")}


def _same_logging(env: dict) -> bool:
    """Logging is configured once, at import, from PREFECT_LOGGING_*: a command that sets them otherwise
    runs in a fresh process (which configures it its way), not in a child of this one."""
    return _logging_env(env) == _logging_env(os.environ)


def _run_child(req: dict, fds: list[int], conn: socket.socket, listener: socket.socket, wake: int,
               run: Callable[[], None]) -> None:
    """In the forked child: become the command the client asked for (`run`, with its argv, environment and
    working directory in place), then exit with its code."""
    import atexit
    import signal

    code = 1
    try:
        listener.close()
        # The child, not the warm process, tells the client it runs the command, before running anything:
        # a client that never hears "pid" knows nothing ran (and runs the command itself), even when the
        # warm process is killed between this fork and any reply of its own.
        try:
            _send(conn, {"pid": os.getpid()})
        finally:
            conn.close()
        os.close(wake)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(line_buffering=stream.isatty() or stream is sys.stderr)
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        sys.argv = ["costgap", *req["argv"]]
        import types

        sys.modules["__main__"] = types.ModuleType("__main__")  # usage lines say `costgap`, as a fresh one does
        try:
            run()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                sys.stderr.write(f"{e.code}\n")
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # a bug: its traceback, exactly as a fresh process prints it
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(home: Path, *, preload: Callable[[], None], run: Callable[[], None],
          companion_alive: Callable[[], bool], companion: str) -> int:
    """Import (`preload`), then answer commands until stopped (SIGTERM), until the code changes, or until
    its companion (the local server of `home`, or the process it was started beside) is gone. Each
    command is forked and calls `run` (cli/warm_serve.py gives costgap's imports and its CLI)."""
    import fcntl
    import selectors
    import signal

    path = socket_path(home)
    _private_dir(path.parent)
    lock = open(f"{path}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _log("another warm process serves this PREFECT_HOME; leaving")
        return 0
    t0 = time.monotonic()
    preload()
    import threading

    if threading.active_count() > 1:  # forking with other threads alive could copy a held lock
        _log(f"imports started threads ({threading.enumerate()}); not serving")
        return 1
    if not companion_alive():
        _log(f"{companion} went away while the imports ran; not serving")
        return 0
    stamp = fingerprint()
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    record = {"pid": os.getpid(), "started": time.time(), "socket": str(path), "python": sys.executable}
    (home / RECORD).write_text(json.dumps(record))
    _log(f"ready in {time.monotonic() - t0:.1f} s on {path} (pid {os.getpid()})")

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    stopping = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGHUP, lambda *_: stopping.append(True))
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    served = 0
    try:
        while not stopping or children:
            if not stopping and not companion_alive():
                _log(f"{companion} was stopped or is gone: leaving with it")
                stopping.append(True)
            if stopping and listener.fileno() in (k.fd for k in sel.get_map().values()):
                sel.unregister(listener)  # no new commands; the running ones finish
            for key, _ in sel.select(timeout=2.0):
                if key.fileobj is listener and not stopping:
                    conn, _ = listener.accept()
                    conn.settimeout(10.0)
                    try:
                        req, fds = _recv(conn, maxfds=3)
                    except (OSError, ValueError) as e:
                        _log(f"a bad request: {e}")
                        conn.close()
                        continue
                    if req is None or len(fds) != 3:
                        for fd in fds:
                            os.close(fd)
                        conn.close()
                        continue
                    if req.get("prefix") != sys.prefix or fingerprint() != stamp:
                        _send(conn, {"stale": True})
                        for fd in fds:
                            os.close(fd)
                        conn.close()
                        _log("code, packages or Python environment changed since the imports: stale, leaving")
                        stopping.append(True)
                        continue
                    if not _same_logging(req["env"]):
                        _send(conn, {"refused": "its logging settings differ from this process's imports"})
                        for fd in fds:
                            os.close(fd)
                        conn.close()
                        continue
                    pid = os.fork()
                    if pid == 0:
                        _run_child(req, fds, conn, listener, wake_r, run)
                    for fd in fds:
                        os.close(fd)
                    children[pid] = conn  # the child says "pid" on conn itself; this process says its exit code
                    sel.register(conn, selectors.EVENT_READ, pid)  # the client says nothing more unless it dies
                    served += 1
                    _log(f"command {served}: pid {pid}: costgap {' '.join(req['argv'])[:200]}")
                elif key.data is not None:  # a client's connection closed while its command runs:
                    try:  # the client was SIGKILLed (SIGINT/SIGTERM it forwards, then waits), so is its command
                        gone = key.fileobj.recv(1) == b""
                    except OSError:
                        gone = True
                    if gone:
                        sel.unregister(key.fileobj)
                        try:
                            os.kill(key.data, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        _log(f"pid {key.data}: its client went away; killed it")
                elif key.fd == wake_r:
                    try:
                        while os.read(wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
            while children:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                conn = children.pop(pid, None)
                if conn is not None:
                    if conn in (k.fileobj for k in sel.get_map().values()):
                        sel.unregister(conn)
                    code = os.waitstatus_to_exitcode(status)
                    reply = {"code": 128 - code, "signal": -code} if code < 0 else {"code": code}
                    try:
                        _send(conn, reply)
                    except OSError:
                        pass  # the client went away (killed): nothing to tell
                    conn.close()
    finally:
        listener.close()
        try:
            if json.loads((home / RECORD).read_text()).get("pid") == os.getpid():
                (home / RECORD).unlink()
                path.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass
        _log(f"stopped after {served} command(s)")
    return 0


# ---------------------------------------------------------------- lifecycle, from runtime/server.py's side

def read(home: Path) -> dict | None:
    try:
        return json.loads((home / RECORD).read_text())
    except (OSError, ValueError):
        return None


def answering(home: Path) -> bool:
    path = socket_path(home)
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(CONNECT_TIMEOUT_S)
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def starting(home: Path) -> bool:
    """A warm process holds this PREFECT_HOME's lock but does not answer yet (its imports run)."""
    import fcntl

    lock_path = Path(f"{socket_path(home)}.lock")
    if not lock_path.exists():
        return False
    with open(lock_path) as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False


def spawn(home: Path) -> None:
    """Start the warm process for this PREFECT_HOME in the background, unless one answers already; a
    second one started at the same moment finds the lock taken and leaves at once."""
    import subprocess

    if os.environ.get(ENV) == "0" or answering(home):
        return
    home.mkdir(parents=True, exist_ok=True)
    with open(home / LOG, "a") as log:
        subprocess.Popen([sys.executable, "-m", SERVE_MODULE, str(home)], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                         cwd=Path(__file__).resolve().parents[1])


def stop(home: Path, wait_s: float = 10.0) -> dict | None:
    """SIGTERM the recorded warm process (it finishes the commands it runs, then leaves)."""
    import signal

    found = read(home)
    if not found:
        return None
    try:
        if SERVE_MODULE.encode() not in Path(f"/proc/{found['pid']}/cmdline").read_bytes():
            raise ProcessLookupError  # gone, its pid reused by another process

        os.kill(found["pid"], signal.SIGTERM)
    except ProcessLookupError:
        (home / RECORD).unlink(missing_ok=True)
        return found
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and (home / RECORD).exists():
        time.sleep(0.1)
    return found
