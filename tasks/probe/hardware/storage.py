"""Storage read speed for data feeding: one big sequential file, and many small files.

    python -c "from tasks.probe.hardware.storage import measure_storage; from tasks.probe.profiles import QUICK; \
print(measure_storage(QUICK.storage))"

The probe writes its own files under `data_dir` (a fresh sub-directory, removed afterwards),
flushes them to disk and evicts them from the page cache with posix_fadvise(DONTNEED) before each
timed read, so the figures are the device's (or network volume's), not RAM's. Reported: the big
file in GB/s (1e9 bytes/s), the small files in files/s (and GB/s in params); then, on the big file
before it is removed, 4 KiB random-read latency at queue depth 1 and `queue_depth` with the page
cache bypassed (O_DIRECT), whether the kernel offers io_uring, and the filesystem and device the
data dir sits on (tasks/probe/hardware/storage_path.py says how each is read).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from tasks.probe.hardware.storage_path import BLOCK, io_uring, mount_of, random_reads
from tasks.probe.hardware.timing import median
from tasks.probe.profiles import StorageConfig
from tasks.probe.record import measurement

BENCHMARK = "storage"
VERSION = "1"
FILES_PER_DIR = 1000  # keep directories small, as sharded datasets do


def evict(path: str) -> bool:
    """Drop `path` from the page cache (posix_fadvise DONTNEED). False where unsupported."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    finally:
        os.close(fd)


def _write_big(path: str, mib: int, chunk: bytes) -> None:
    with open(path, "wb", buffering=0) as f:
        for _ in range(mib * 2**20 // len(chunk)):
            f.write(chunk)
        os.fsync(f.fileno())


def _read_all(path: str, buf: bytearray) -> int:
    view, total = memoryview(buf), 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            total += n
    return total


def _write_small(root: str, n: int, size: int) -> list[str]:
    payload = os.urandom(size)
    paths = []
    for i in range(n):
        d = os.path.join(root, f"shard{i // FILES_PER_DIR:04d}")
        if i % FILES_PER_DIR == 0:
            os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"{i:07d}.bin")
        with open(p, "wb") as f:
            f.write(payload[i % 8:] + payload[: i % 8])  # distinct content per file
        paths.append(p)
    return paths


def measure_storage(cfg: StorageConfig, *, sampler=None) -> list[dict]:
    base = cfg.data_dir or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="costgap-storage-", dir=base)
    try:
        chunk_bytes = cfg.chunk_mib * 2**20
        big = os.path.join(work, "big.bin")
        _write_big(big, cfg.big_file_mib, os.urandom(chunk_bytes))
        buf = bytearray(chunk_bytes)
        gbps, evicted = [], True
        for _ in range(cfg.repeats):
            evicted &= evict(big)
            t = time.perf_counter()
            n = _read_all(big, buf)
            gbps.append(n / (time.perf_counter() - t) / 1e9)
        params = {"data_dir": base, "bytes": cfg.big_file_mib * 2**20, "chunk_bytes": chunk_bytes,
                  "page_cache_evicted": evicted, "filesystem_free_gib": _free_gib(base)}
        out = [measurement(BENCHMARK, VERSION, "seq_read_gbps", median(gbps), "GB/s",
                           params={**params, "max_gbps": round(max(gbps), 3)},
                           repeats=len(gbps), statistic="median",
                           spread=max(gbps) - min(gbps), spread_kind="max_minus_min")]
        out += _storage_path(cfg, big, base)
        os.remove(big)
        size = cfg.small_kib * 1024
        paths = _write_small(work, cfg.small_files, size)
        if hasattr(os, "sync"):
            os.sync()  # DONTNEED drops clean pages only: write back first
        small_evicted = all(evict(p) for p in paths)
        t = time.perf_counter()
        total = 0
        for p in paths:
            with open(p, "rb", buffering=0) as f:
                total += len(f.read())
        dt = time.perf_counter() - t
        out.append(measurement(
            BENCHMARK, VERSION, "small_files_per_s", len(paths) / dt, "files/s",
            params={"data_dir": base, "files": len(paths), "file_bytes": size,
                    "files_per_dir": FILES_PER_DIR, "gbps": round(total / dt / 1e9, 4),
                    "page_cache_evicted": small_evicted},
            repeats=1, statistic="single"))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _storage_path(cfg: StorageConfig, big: str, base: str) -> list[dict]:
    """4 KiB random-read latency per queue depth (p50 and p99, ms) and the io_uring/mount facts. A random
    read the filesystem refuses is said in the io_uring row's params, not a failed storage task."""
    ur = io_uring()
    facts = {"data_dir": base, **mount_of(base), "io_uring": ur["state"], "io_uring_sysctl": ur["sysctl"],
             "io_uring_check": ur["check"]}
    out, note = [], "measured"
    try:
        rows = random_reads(big, depths=(1, cfg.queue_depth), reads=cfg.random_reads, max_s=cfg.random_max_s)
    except (OSError, RuntimeError, ValueError) as e:
        rows, note = [], f"not measured: {type(e).__name__}: {e}"[:300]
    for r in rows:
        params = {**facts, "file_bytes": os.path.getsize(big), "block_bytes": BLOCK, "queue_depth": r["depth"],
                  "method": r["method"], "page_cache_bypassed": r["method"] == "o_direct", "reads": r["reads"],
                  "iops": round(r["iops"], 1), "mean_ms": round(r["mean_ms"], 4), "max_ms": round(r["max_ms"], 4),
                  "repeated_blocks": r["repeated_blocks"]}
        for stat, key in (("median", "p50_ms"), ("p99", "p99_ms")):
            out.append(measurement(BENCHMARK, VERSION, f"read4k_qd{r['depth']}_{key}", r[key], "ms",
                                   params=params, repeats=r["reads"], statistic=stat))
    out.append(measurement(BENCHMARK, VERSION, "io_uring", 1.0 if ur["state"] == "available" else 0.0, "bool",
                           params={**facts, "random_reads": note}, repeats=1, statistic="single"))
    return out


def _free_gib(path: str) -> float | None:
    try:
        return round(shutil.disk_usage(path).free / 2**30, 1)
    except OSError:
        return None
