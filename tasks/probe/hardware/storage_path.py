"""The storage path: 4 KiB random-read latency at queue depth 1 and 32, io_uring, and the data dir's device.

    python -c "from tasks.probe.hardware.storage_path import io_uring, mount_of; print(io_uring(), mount_of('/tmp'))"

Random reads: `reads` 4 KiB reads at random 4 KiB-aligned offsets of a file the probe wrote, opened
with O_DIRECT so the page cache is bypassed and each read reaches the device (or network volume).
Where the filesystem refuses O_DIRECT (tmpfs, some overlays) the file is read with
POSIX_FADV_RANDOM (no readahead) after evicting it: params.method says which, and such a figure
says "page cache not bypassed" if a block was read twice. Queue depth 32 is 32 threads each
issuing one os.preadv at a time (the GIL is released during the read), so up to 32 reads are in
flight, as iostat's queue would show. Reported per depth: the p50 and p99 latency in ms (what
iostat calls await, per request) and IOPS in params; each depth stops at `reads` or `max_s`.

io_uring: the io_uring_setup(2) system call is made once through ctypes with 1 entry and the fd
closed: "available" (it returned an fd), "disabled" (EPERM: /proc/sys/kernel/io_uring_disabled or a
seccomp profile forbids it for this process), "not in kernel" (ENOSYS) or "unknown" (an
architecture whose syscall number is not listed, or no libc). /proc/sys/kernel/io_uring_disabled
(Linux 6.6+; 0 enabled, 1 privileged only, 2 disabled) is recorded beside it where it exists.

Where the data dir sits: the mount whose device id (/proc/self/mountinfo's major:minor) matches
os.stat(data_dir).st_dev; its filesystem type, source device and mount point.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tasks.probe.hardware.timing import mean, percentile

BLOCK = 4096  # 4 KiB: the read size the rules of thumb quote, and the O_DIRECT alignment of most devices
# io_uring_setup's number in the kernel's generic syscall table (include/uapi/asm-generic/unistd.h,
# 425 since Linux 5.1); x86_64 uses the same number (arch/x86/entry/syscalls/syscall_64.tbl).
IO_URING_SETUP = {"x86_64": 425, "aarch64": 425, "arm64": 425, "riscv64": 425, "ppc64le": 425, "s390x": 425}
IO_URING_PARAMS_BYTES = 120  # sizeof(struct io_uring_params), include/uapi/linux/io_uring.h


def io_uring() -> dict:
    """{"state": available|disabled|not in kernel|unknown, "sysctl": int|None, "check": what was done}."""
    sysctl = None
    try:
        with open("/proc/sys/kernel/io_uring_disabled", encoding="utf-8") as f:
            sysctl = int(f.read().strip())
    except (OSError, ValueError):
        pass
    nr = IO_URING_SETUP.get(platform.machine())
    check = f"io_uring_setup(1, params) syscall {nr} via ctypes" if nr else "no syscall number for this arch"
    if nr is None:
        return {"state": "unknown", "sysctl": sysctl, "check": check}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return {"state": "unknown", "sysctl": sysctl, "check": "no libc to make the syscall"}
    params = ctypes.create_string_buffer(IO_URING_PARAMS_BYTES)
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_uint(1), params)
    if fd >= 0:
        os.close(fd)
        return {"state": "available", "sysctl": sysctl, "check": check}
    err = ctypes.get_errno()
    state = {errno.ENOSYS: "not in kernel", errno.EPERM: "disabled"}.get(err, "unknown")
    return {"state": state, "sysctl": sysctl, "check": f"{check}: {errno.errorcode.get(err, err)}"}


def mount_of(path: str, mountinfo: str = "/proc/self/mountinfo") -> dict:
    """{"filesystem", "device", "mount_point", "st_dev"} of the mount `path` sits on (None fields where
    /proc cannot say)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    out = {"filesystem": None, "device": None, "mount_point": None, "st_dev": dev}
    try:
        with open(mountinfo, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    best = None
    real = os.path.realpath(path)
    for line in lines:  # id parent major:minor root mount_point opts [optional...] - fstype source superopts
        left, _, right = line.partition(" - ")
        f_left, f_right = left.split(), right.split()
        if len(f_left) < 5 or len(f_right) < 2 or f_left[2] != dev:
            continue
        mp = f_left[4].replace("\\040", " ")
        inside = real == mp or real.startswith(mp.rstrip("/") + "/")
        if best is None or (inside and len(mp) >= len(best[0])):
            best = (mp, f_right[0], f_right[1])
    if best:
        out.update(mount_point=best[0], filesystem=best[1], device=best[2])
    return out


def _open(path: str) -> tuple[int, str]:
    """(fd, method): O_DIRECT where the filesystem allows it, else buffered with readahead off."""
    flag = getattr(os, "O_DIRECT", 0)
    if flag:
        try:
            return os.open(path, os.O_RDONLY | flag), "o_direct"
        except OSError:
            pass
    fd = os.open(path, os.O_RDONLY)
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    return fd, "fadvise_random"


def _one_depth(fd: int, offsets: list[int], depth: int, max_s: float) -> tuple[list[float], float]:
    """Latencies (s) of reads at `offsets` with `depth` in flight, and the wall time they took."""
    lat: list[float] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + max_s
    it = iter(offsets)

    def worker() -> None:
        buf = mmap.mmap(-1, BLOCK)  # page-aligned: O_DIRECT needs an aligned buffer
        mine = []
        try:
            while time.perf_counter() < deadline:
                with lock:
                    off = next(it, None)
                if off is None:
                    break
                t = time.perf_counter()
                n = os.preadv(fd, [buf], off)
                mine.append(time.perf_counter() - t)
                if n != BLOCK:
                    raise OSError(f"short read: {n} bytes at offset {off}")
        finally:
            buf.close()
            with lock:
                lat.extend(mine)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=depth) as pool:
        for f in [pool.submit(worker) for _ in range(depth)]:
            f.result()
    return lat, time.perf_counter() - t0


def random_reads(path: str, *, depths: tuple[int, ...], reads: int, max_s: float, seed: int = 0) -> list[dict]:
    """Per queue depth: {"depth", "method", "reads", "p50_ms", "p99_ms", "mean_ms", "max_ms", "iops",
    "repeated_blocks"} over 4 KiB reads at random aligned offsets of `path`."""
    blocks = os.path.getsize(path) // BLOCK
    if blocks < 1:
        raise ValueError(f"{path}: smaller than one {BLOCK}-byte block")
    rng = random.Random(seed)
    out = []
    for depth in depths:
        fd, method = _open(path)
        try:
            offsets = [rng.randrange(blocks) * BLOCK for _ in range(reads)]
            lat, wall = _one_depth(fd, offsets, depth, max_s)
        finally:
            os.close(fd)
        if not lat:
            raise RuntimeError(f"no read finished at queue depth {depth} within {max_s} s")
        done = offsets[: len(lat)]
        out.append({"depth": depth, "method": method, "reads": len(lat),
                    "p50_ms": percentile(lat, 50) * 1e3, "p99_ms": percentile(lat, 99) * 1e3,
                    "mean_ms": mean(lat) * 1e3, "max_ms": max(lat) * 1e3, "iops": len(lat) / wall,
                    "repeated_blocks": len(done) - len(set(done))})
    return out
