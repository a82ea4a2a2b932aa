"""NVML helpers and the background telemetry Sampler (stdlib + optional pynvml from nvidia-ml-py).

    python -c "from tasks.probe.host import nvml; print(nvml.available())"

Without NVML (no pynvml, no driver, CPU host) everything still works: `available()` is False,
the Sampler records nothing, and `Window.conditions()` / `Window.energy_j()` return None, so the
bundle stores NULL rather than a guessed number.

Clock-event ("throttle") reasons are NVML's bitmask from nvmlDeviceGetCurrentClocksEventReasons
(older drivers: ...ThrottleReasons); the bit values below are nvml.h's, checked 2026-12-02
against nvidia-ml-py 12.560. A window reports the union of reasons seen in any of its samples.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

# nvml.h clocks event reason bits -> the names the bundle stores (source: nvml.h, 2026-12-02).
REASON_BITS: dict[int, str] = {
    0x0000000000000001: "gpu_idle",
    0x0000000000000002: "applications_clocks_setting",
    0x0000000000000004: "sw_power_cap",
    0x0000000000000008: "hw_slowdown",
    0x0000000000000010: "sync_boost",
    0x0000000000000020: "sw_thermal_slowdown",
    0x0000000000000040: "hw_thermal_slowdown",
    0x0000000000000080: "hw_power_brake_slowdown",
    0x0000000000000100: "display_clock_setting",
}
# Reasons that mean the clock was held below what the work asked for: the "throttled" flag.
THROTTLE_REASONS = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
     "hw_power_brake_slowdown"}
)

# A reason must hold in this share of a window's samples to flag the figure "throttled": one
# 100 ms sample at a burst's edge must not mark it, a reason held over a fifth of it moved it.
THROTTLED_MIN_FRACTION = 0.2
# ... and the window's median SM clock must sit below this share of the GPU's max clock: on an
# H200 NVML raises sw_power_cap during idle-gapped bursts while the clock holds 1965 of 1980 MHz
# (seen 2026-12-02); a reason that cost no clock did not move the figure.
THROTTLED_CLOCK_SHARE = 0.97

_state: dict[str, Any] = {"tried": False, "ok": False, "mod": None}
_lock = threading.Lock()


def _nvml():
    """The initialised pynvml module, or None. Initialised once per process."""
    with _lock:
        if not _state["tried"]:
            _state["tried"] = True
            try:
                import pynvml  # nvidia-ml-py

                pynvml.nvmlInit()
                _state["mod"], _state["ok"] = pynvml, True
            except Exception:  # no package, no driver, no permission: all mean "no NVML"
                _state["mod"], _state["ok"] = None, False
        return _state["mod"]


def available() -> bool:
    """True when pynvml imports and nvmlInit succeeds."""
    return _nvml() is not None


def handles() -> list:
    """NVML handles of every GPU NVML sees ([] without NVML)."""
    nv = _nvml()
    if nv is None:
        return []
    try:
        return [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    except Exception:
        return []


def decode_reasons(mask: int) -> list[str]:
    """NVML clock-event bitmask -> sorted reason names (unknown bits as 'bit_0x...')."""
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(REASON_BITS)
    names += [f"bit_{1 << i:#x}" for i in range(64) if unknown & (1 << i)]
    return sorted(names)


def _call(fn, *args, default=None):
    try:
        return fn(*args)
    except Exception:
        return default


def read_reasons(nv, h) -> int | None:
    fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    return _call(fn, h) if fn else None


def sample_once(nv, h) -> dict[str, Any]:
    """One instantaneous reading of one GPU. Fields NVML refuses are None."""
    util = _call(nv.nvmlDeviceGetUtilizationRates, h)
    power_mw = _call(nv.nvmlDeviceGetPowerUsage, h)
    return {
        "util": float(util.gpu) if util is not None else None,
        "mem_util": float(util.memory) if util is not None else None,
        "power_w": power_mw / 1000.0 if power_mw is not None else None,
        "sm_clock_mhz": _call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
        "temp_c": _call(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
        "reasons": read_reasons(nv, h),
    }


def energy_mj(nv, h) -> int | None:
    """Total energy since driver load in mJ (Volta+), or None."""
    return _call(nv.nvmlDeviceGetTotalEnergyConsumption, h)


class Window:
    """A measurement window: samples taken while it was open, plus one at each edge."""

    def __init__(self, sampler: "Sampler", gpus: list[int] | None):
        self._s, self._gpus = sampler, gpus
        self._start_idx = self._end_idx = 0
        self._t_start = self._t_end = 0.0
        self._energy0: list[int | None] = []
        self._energy1: list[int | None] = []

    def __enter__(self) -> "Window":
        self._t_start = time.perf_counter()
        self._energy0 = [energy_mj(self._s.nv, h) for h in self._s.handles] if self._s.nv else []
        self._start_idx = self._s.n_rows()
        self._s.sample_now()  # the entry sample: a short window still has one reading
        return self

    def __exit__(self, *exc) -> None:
        self._s.sample_now()
        self._end_idx = self._s.n_rows()
        self._t_end = time.perf_counter()
        self._energy1 = [energy_mj(self._s.nv, h) for h in self._s.handles] if self._s.nv else []

    @property
    def duration_s(self) -> float:
        return max(0.0, (self._t_end or time.perf_counter()) - self._t_start)

    def _rows(self) -> list[dict[str, Any]]:
        rows = self._s.rows(self._start_idx, self._end_idx)
        return [r for r in rows if self._gpus is None or r["gpu"] in self._gpus]

    def conditions(self) -> dict[str, Any] | None:
        """Bundle Conditions over the window, or None without NVML or without samples."""
        if self._s.nv is None:
            return None
        rows = self._rows()
        if not rows:
            return None
        clocks = [r["sm_clock_mhz"] for r in rows if r["sm_clock_mhz"] is not None]
        power = [r["power_w"] for r in rows if r["power_w"] is not None]
        temps = [r["temp_c"] for r in rows if r["temp_c"] is not None]
        masks = [r["reasons"] for r in rows if r["reasons"] is not None]
        reasons = None
        if masks:
            union = 0
            for m in masks:
                union |= m
            reasons = [n for n in decode_reasons(union) if n != "gpu_idle"]
        return {
            "sm_clock_mhz_min": float(min(clocks)) if clocks else None,
            "sm_clock_mhz_median": float(statistics.median(clocks)) if clocks else None,
            "power_w_median": float(statistics.median(power)) if power else None,
            "power_w_max": float(max(power)) if power else None,
            "temp_c_max": float(max(temps)) if temps else None,
            "throttle_reasons": reasons,
        }

    def throttled(self, min_fraction: float = THROTTLED_MIN_FRACTION) -> bool | None:
        """True when a throttle reason held in >= min_fraction of the samples and the median SM
        clock sat below THROTTLED_CLOCK_SHARE of the max clock (None: no NVML)."""
        if self._s.nv is None:
            return None
        rows = self._rows()
        masks = [r["reasons"] for r in rows if r["reasons"] is not None]
        if not masks:
            return None
        hit = sum(1 for m in masks if THROTTLE_REASONS.intersection(decode_reasons(m)))
        if hit / len(masks) < min_fraction:
            return False
        clocks = [r["sm_clock_mhz"] for r in rows if r["sm_clock_mhz"] is not None]
        top = [self._s.max_clock_mhz[r["gpu"]] for r in rows
               if r["gpu"] < len(self._s.max_clock_mhz) and self._s.max_clock_mhz[r["gpu"]]]
        if not clocks or not top:
            return True  # a reason held and the clock cannot be checked: say so
        return statistics.median(clocks) < THROTTLED_CLOCK_SHARE * max(top)

    def energy_j(self) -> float | None:
        """Energy counter delta over the window, summed over GPUs (None if unsupported)."""
        if not self._energy0 or not self._energy1:
            return None
        pairs = list(zip(self._energy0, self._energy1))
        if self._gpus is not None:
            pairs = [p for i, p in enumerate(pairs) if i in self._gpus]
        if not pairs or any(a is None or b is None for a, b in pairs):
            return None
        return sum(b - a for a, b in pairs) / 1000.0


def throttled(conditions: dict[str, Any] | None) -> bool:
    """True when a window saw a reason that holds the clock down (power cap, thermal, HW)."""
    if not conditions or not conditions.get("throttle_reasons"):
        return False
    return bool(THROTTLE_REASONS.intersection(conditions["throttle_reasons"]))


class Sampler:
    """Background NVML sampling of all visible GPUs at `hz`; t is seconds since `t0` (epoch)."""

    def __init__(self, t0: float, hz: float = 10.0):
        if not hz > 0:
            raise ValueError(f"Sampler hz must be > 0, got {hz!r}")
        self.t0, self.period_s = float(t0), 1.0 / hz
        self.nv = _nvml()
        self.handles = handles() if self.nv else []
        self.max_clock_mhz = [  # per GPU, for the throttled rule (None where NVML refuses)
            _call(self.nv.nvmlDeviceGetMaxClockInfo, h, self.nv.NVML_CLOCK_SM) for h in self.handles]
        self._rows: list[dict[str, Any]] = []
        self._phase = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> "Sampler":
        if self.nv is not None and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.sample_now()

    # data
    def set_phase(self, name: str) -> None:
        self._phase = str(name)

    @property
    def phase(self) -> str:
        return self._phase

    def sample_now(self) -> None:
        if self.nv is None:
            return
        t = time.time() - self.t0
        fresh = []
        for i, h in enumerate(self.handles):
            row = sample_once(self.nv, h)
            row.update(t=round(t, 3), gpu=i, phase=self._phase)
            fresh.append(row)
        with self._lock:
            self._rows.extend(fresh)

    def n_rows(self) -> int:
        with self._lock:
            return len(self._rows)

    def rows(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._rows[start:end])

    def window(self, gpus: list[int] | None = None) -> Window:
        """A context manager marking a measurement window (optionally only some GPUs)."""
        return Window(self, gpus)

    def columns(self) -> dict[str, list]:
        """Telemetry columns for the bundle; rows with a missing reading are dropped."""
        cols: dict[str, list] = {k: [] for k in
                                 ("t", "gpu", "util", "mem_util", "power_w", "sm_clock_mhz",
                                  "temp_c", "phase")}
        for r in self.rows():
            if any(r[k] is None for k in ("util", "mem_util", "power_w", "sm_clock_mhz", "temp_c")):
                continue
            cols["t"].append(max(0.0, float(r["t"])))
            cols["gpu"].append(int(r["gpu"]))
            for k in ("util", "mem_util", "power_w", "sm_clock_mhz", "temp_c"):
                cols[k].append(float(r[k]))
            cols["phase"].append(r["phase"])
        return cols
