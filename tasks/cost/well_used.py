"""Is this server well used? The rules, each threshold with the reason it exists and its source, and the verdicts.

    costgap targets --json            # each row's "well_used": these verdicts, as each target's page shows them

The one place the thresholds live and the one place a verdict is computed: the site (reports/pages/target.py,
the overview's side-by-side table) and `costgap targets --json` both call `verdicts()`. Each verdict is
"pass", "fail" or "not measured", with the measured value, the threshold and the figure it comes from
(benchmark/metric, run, date). A host without a GPU is "not measured" on every GPU rule, never "pass"; a
bundle from before the probe measured a figure (probe < 0.5.0) is "not measured" on its rule. The probe
records facts without thresholds (tasks/probe: host/numa.py, host/busy.py, hardware/storage_path.py,
hardware/feed.py, finetune/sharing.py); warehouse/queries/well_used_facts.sql reads the newest of each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

PASS, FAIL, NOT_MEASURED = "pass", "fail", "not measured"
QUOTED = ("issue 45, quoting the rules of thumb buyers are given for a well-used training server "
          "(read 2026-12-07)")


@dataclass(frozen=True)
class Rule:
    """One rule: what is judged, against what, why it exists and where the threshold comes from."""

    key: str
    name: str  # what a buyer reads
    threshold: float | None  # None: judged on a word (NUMA), not a number
    threshold_text: str  # the threshold as every surface shows it
    gpu: bool  # judged only where the host has a GPU
    reason: str  # why the rule exists
    source: str  # where the threshold comes from


BUSY_PCT = 92.0
AWAIT_MS = 1.0
GEMM_SHARE = 0.65
FEED_MS = 15.0
SHARING_GAIN = 0.05

RULES: tuple[Rule, ...] = (
    Rule("gpu_busy", "GPU busy during the fine-tune", BUSY_PCT, f"mean utilization >= {BUSY_PCT:g}%", True,
         "A GPU that waits on data, the host or its launch queue is rented and idle: its cost per token "
         "rises with every idle percent. Judged on the mean NVML utilization over the fine-tune's "
         "steady-state window (the worst preset); the share of samples at or above it is shown beside.",
         f"{QUOTED}: GPU utilization steadily above 92%"),
    Rule("await", "Disk read latency (4 KiB, queue depth 1)", AWAIT_MS, f"p50 < {AWAIT_MS:g} ms", False,
         "Small random reads are where a slow storage path shows first (many small files, shuffled "
         "samples); what iostat calls await. Judged on the p50 of 4 KiB O_DIRECT reads one at a time; "
         "p99 and queue depth 32 beside.",
         f"{QUOTED}: disk await under 1 ms"),
    Rule("gemm", "Matrix multiply against the datasheet peak", GEMM_SHARE, f">= {GEMM_SHARE:.0%} of peak", True,
         "A card that cannot reach 65% of its datasheet peak on a large bf16 matrix multiply is held back "
         "by memory bandwidth, power or the PCIe path: the list price buys less than it says. Judged on "
         "the burst bf16 GEMM (fp16 where the card has no bf16) against tasks/probe/host/gpu_specs.json.",
         f"{QUOTED}: a matrix multiply at >= 65% of the datasheet peak, less means a bandwidth or PCIe "
         "bottleneck"),
    Rule("feed", "DataLoader next() against the fastest target", FEED_MS, f"within {FEED_MS:g} ms of the fastest",
         False,
         "The host's CPUs decode and batch the data; a host whose next() is much slower than another's "
         "starves the same GPU. Judged on the mean next() latency against the fastest target measured with "
         "the same batch (size and item shape); the share of a 12 ms step spent waiting for the next batch is "
         "shown beside.",
         f"{QUOTED}: a DataLoader next() that differs by less than 15 ms between hosts"),
    Rule("numa", "NUMA binding", None, "bound (or a single node)", False,
         "A process whose CPUs and memory sit on another socket than its GPU sends every host copy over the "
         "socket link; latency swings of ±18 ms are quoted for unbound hosts. Bound: every CPU the probe "
         "may use is local to the GPU. A single-node host passes: binding cannot matter there.",
         f"{QUOTED}: NUMA binding (bound, unbound, single node), with ±18 ms swings quoted when unbound"),
    Rule("sharing", "Two light fine-tunes on one card", SHARING_GAIN, f"gain >= {SHARING_GAIN:+.0%}", True,
         "Sharing a card (time slicing, vGPU/qGPU) is sold as a cost lever: it pays only where two jobs "
         "together train measurably more tokens per hour than one alone. Pass: sharing is a lever on this "
         "server (the single job leaves the card room).",
         "costgap's margin (2026-12-07): 5% clears the spread of the part's short fixed-time runs; the issue "
         "quotes no figure"),
)
RULE = {r.key: r for r in RULES}
METRICS = ["gpu_busy/util_mean_pct", "gemm/bf16_tflops", "gemm/fp16_tflops", "storage/read4k_qd1_p50_ms",
           "storage/read4k_qd1_p99_ms", "storage/read4k_qd32_p50_ms", "storage/read4k_qd32_p99_ms",
           "storage/io_uring", "feed/next_latency_ms_mean", "feed/wait_share", "numa/numa_nodes",
           "numa/h2d_2mib_local_gbps", "numa/h2d_2mib_remote_gbps", "sharing/sharing_gain"]
PREFERRED_SHARING = "bert-large"  # the light preset the issue names; another preset only where it is absent


def busy_share(counts: list[int], threshold_pct: float = BUSY_PCT) -> float | None:
    """The share of utilization samples at or above `threshold_pct` from the probe's 101-bin histogram."""
    total = sum(counts or [])
    if not total:
        return None
    return sum(c for i, c in enumerate(counts) if i >= threshold_pct) / total


def _params(row: dict) -> dict:
    p = row.get("params")
    return json.loads(p) if isinstance(p, str) else dict(p or {})


def _figure(row: dict, extra: str = "") -> str:
    when = row["started_at"]
    day = when.strftime("%Y-%m-%d") if isinstance(when, datetime) else str(when)[:10]
    return f"{row['benchmark']}/{row['metric']}{extra}, run {str(row['run_id'])[:12]} of {day}"


def _verdict(rule: Rule, verdict: str, value=None, value_text: str = "", figure: str | None = None,
             note: str = "") -> dict:
    return {"rule": rule.key, "name": rule.name, "verdict": verdict, "value": value, "value_text": value_text,
            "threshold": rule.threshold, "threshold_text": rule.threshold_text, "figure": figure, "note": note,
            "reason": rule.reason, "source": rule.source}


def _none(rule: Rule, why: str) -> dict:
    return _verdict(rule, NOT_MEASURED, value_text=why)


OLD = "not recorded by the probe that ran (before 0.5.0)"


def _busy(rows: list[dict]) -> dict:
    r = RULE["gpu_busy"]
    if not rows:
        return _none(r, f"{OLD}, or no fine-tune ran on the GPU")
    worst = min(rows, key=lambda x: x["value"])
    p = _params(worst)
    share = busy_share(p.get("util_counts") or [])
    clock = f"; SM clock {p['sm_clock_share']:.0%} of max" if p.get("sm_clock_share") is not None else ""
    reasons = p.get("throttle_reasons")
    held = (f"; throttle reasons {', '.join(reasons)} ({p.get('throttled_share') or 0:.0%} of samples)" if reasons
            else "; no throttle reason" if reasons is not None else "")
    others = ", ".join(f"{_params(x)['preset']} {x['value']:.1f}%" for x in rows if x is not worst)
    text = f"{worst['value']:.1f}% mean ({p.get('preset')})" + (
        f"; {share:.0%} of samples >= {BUSY_PCT:g}%" if share is not None else "")
    return _verdict(r, PASS if worst["value"] >= BUSY_PCT else FAIL, worst["value"], text + clock + held,
                    _figure(worst, f" [{p.get('preset')}]"), f"other presets: {others}" if others else "")


def _gemm(rows: list[dict]) -> dict:
    r = RULE["gemm"]
    row = next((x for x in rows if x["metric"] == "bf16_tflops"), None) or next(iter(rows), None)
    if row is None:
        return _none(r, "no bf16 or fp16 GEMM figure in the newest runs")
    if row.get("efficiency") is None:
        return _none(r, f"no datasheet peak for this GPU ({row['value']:,.1f} TFLOP/s measured)")
    eff = row["efficiency"]
    text = f"{eff:.0%} of peak: {row['value']:,.1f} of {row['peak']:,.0f} TFLOP/s ({row['metric'].split('_')[0]}, burst)"
    return _verdict(r, PASS if eff >= GEMM_SHARE else FAIL, eff, text, _figure(row), row.get("peak_source") or "")


def _await(facts: dict) -> dict:
    r = RULE["await"]
    (row,) = facts.get("storage/read4k_qd1_p50_ms") or [None]
    if row is None:
        return _none(r, OLD)
    p = _params(row)
    if p.get("filesystem") in ("tmpfs", "ramfs"):
        return _none(r, f"the data dir is on {p['filesystem']}: its reads are memory, not a disk")

    def one(key: str) -> str | None:
        got = facts.get(f"storage/{key}") or []
        return f"{got[0]['value']:,.3f} ms" if got else None
    io = facts.get("storage/io_uring") or []
    qd32 = [f"{q} {v}" for q, v in (("p50", one("read4k_qd32_p50_ms")), ("p99", one("read4k_qd32_p99_ms"))) if v]
    parts = [f"queue depth 32: {', '.join(qd32)}" if qd32 else "",
             f"io_uring {_params(io[0]).get('io_uring')}" if io else "",
             " on ".join(str(p[k]) for k in ("filesystem", "device") if p.get(k)),
             "" if p.get("page_cache_bypassed", True) else "page cache not bypassed (no O_DIRECT here)"]
    p99 = one("read4k_qd1_p99_ms")
    text = f"p50 {row['value']:,.3f} ms" + (f", p99 {p99}" if p99 else "") + " at queue depth 1"
    note = "; ".join(x for x in parts if x)
    return _verdict(r, PASS if row["value"] < AWAIT_MS else FAIL, row["value"], text, _figure(row), note)


def feed_key(row: dict) -> str:
    """What makes two DataLoader figures comparable: the same batch of the same items ('32 x 3x224x224')."""
    p = _params(row)
    return f"{p.get('batch_size')} x {'x'.join(str(d) for d in p.get('item_shape') or [])}"


def _feed(facts: dict, feeds: list[tuple[str, float, str]]) -> dict:
    r = RULE["feed"]
    (row,) = facts.get("feed/next_latency_ms_mean") or [None]
    if row is None:
        return _none(r, "no DataLoader figure in the newest runs")
    key = feed_key(row)
    peers = [(t, ms) for t, ms, k in feeds if k == key]
    fastest = min(peers, key=lambda x: x[1], default=(None, row["value"]))
    behind = row["value"] - fastest[1]
    where = ("the only target measured at that size" if len(peers) <= 1 else
             f"the fastest of {len(peers)} targets measured at that size" if behind <= 0 else
             f"+{behind:,.1f} ms behind {fastest[0]} ({fastest[1]:,.1f} ms)")
    text = f"{row['value']:,.1f} ms mean next() for batches of {key}; {where}"
    waits = facts.get("feed/wait_share") or []
    note = ""
    if waits:
        step = _params(waits[0]).get("step_ms")
        note = f"{waits[0]['value']:.0%} of a {step:g} ms step spent waiting for the next batch"
    return _verdict(r, PASS if behind <= FEED_MS else FAIL, behind, text, _figure(row), note)


NUMA = {"bound": PASS, "single node": PASS, "unbound": FAIL}


def _numa(facts: dict) -> dict:
    r = RULE["numa"]
    (row,) = facts.get("numa/numa_nodes") or [None]
    if row is None:
        return _none(r, OLD)
    p = _params(row)
    word = p.get("verdict") or "unknown"
    if word not in NUMA:
        return _none(r, f"{word}: {p.get('reason')}")
    notes = []
    for role in ("local", "remote"):
        got = facts.get(f"numa/h2d_2mib_{role}_gbps") or []
        if got:
            q = _params(got[0])
            notes.append(f"2 MiB host-to-device from the {role} node: p50 {q['p50_us']:,.0f} µs, p99 "
                         f"{q['p99_us']:,.0f} µs, max {q['max_us']:,.0f} µs")
    return _verdict(r, NUMA[word], word, f"{word}: {p.get('reason')}", _figure(row),
                    "; ".join(notes) or f"copies: {p.get('copies')}")


def _sharing(rows: list[dict]) -> dict:
    r = RULE["sharing"]
    if not rows:
        return _none(r, OLD)
    row = next((x for x in rows if _params(x).get("preset") == PREFERRED_SHARING), rows[0])
    p = _params(row)
    text = (f"{row['value']:+.1%}: {p['aggregate_tokens_per_s']:,.0f} tokens/s from {p['jobs']} jobs against "
            f"{p['alone_tokens_per_s']:,.0f} alone ({p['preset']}, micro-batch {p.get('micro_batch')})")
    others = "; ".join(f"{_params(x)['preset']} {x['value']:+.1%}" for x in rows if x is not row)
    if row["value"] < SHARING_GAIN:  # a fail here says sharing is no lever, not that the card sits idle
        text += ": sharing does not pay on this card" + (", one job already keeps it busy" if row["value"] <= 0 else "")
    return _verdict(r, PASS if row["value"] >= SHARING_GAIN else FAIL, row["value"], text,
                    _figure(row, f" [{p['preset']}]"), f"other presets: {others}" if others else "")


def judge(host: dict | None, facts: dict[str, list[dict]], feeds: list[tuple[str, float, str]]) -> list[dict]:
    """The verdicts of one target, in RULES order. `host`: its newest run ({"gpu_count": ...}, None without a
    run); `facts`: 'benchmark/metric' -> rows of well_used_facts.sql; `feeds`: every target's (target, mean
    next() ms, feed_key): the DataLoader rule compares only figures of the same batch."""
    if host is None:
        return [_none(r, "no run of this target yet") for r in RULES]
    gpu = bool(host.get("gpu_count"))
    out = {
        "gpu_busy": lambda: _busy(facts.get("gpu_busy/util_mean_pct") or []),
        "await": lambda: _await(facts),
        "gemm": lambda: _gemm((facts.get("gemm/bf16_tflops") or []) + (facts.get("gemm/fp16_tflops") or [])),
        "feed": lambda: _feed(facts, feeds),
        "numa": lambda: _numa(facts),
        "sharing": lambda: _sharing(facts.get("sharing/sharing_gain") or []),
    }
    return [_none(r, "no GPU on this host") if r.gpu and not gpu else out[r.key]() for r in RULES]


def verdicts(con, as_of: datetime | None = None, targets: list[str] | None = None) -> dict[str, list[dict]]:
    """{target: its verdicts} for every target the warehouse knows (or `targets`), from the newest runs up to
    `as_of`."""
    from tasks.cost.inputs import known_targets
    from warehouse import sql

    params = {"as_of": as_of}
    hosts = {h["target"]: h for h in sql.rows(con, "well_used_hosts", params)}
    facts: dict[str, dict[str, list[dict]]] = {}
    for row in sql.rows(con, "well_used_facts", {**params, "metrics": METRICS}):
        facts.setdefault(row["target"], {}).setdefault(row["key"], []).append(row)
    feeds = [(t, row["value"], feed_key(row)) for t, f in facts.items() for row in f.get("feed/next_latency_ms_mean", [])]
    names = targets if targets is not None else sorted(known_targets(con))
    return {t: judge(hosts.get(t), facts.get(t, {}), feeds) for t in names}
