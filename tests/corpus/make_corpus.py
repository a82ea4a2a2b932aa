"""Regenerate the bad-input corpus: one file per case plus manifest.json (expected outcomes).

    .venv/bin/python -m tests.corpus.make_corpus

Each case is a file that must NOT land. `outcome` is "rejected" (not a readable bundle: the
BundleError names `field`) or "quarantined" (a valid bundle that fails a Great Expectations rule
on `field`). `says` is text the message must contain. Grow the corpus by adding a case below
(or dropping a file in and a line in manifest.json) whenever a new kind of bad input turns up.
The 500 MB case is not stored: tests/test_corpus.py makes it sparse on the fly.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tasks.canonical import canonical_json, seal
from tests.factories import bundle_doc

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"  # the case files; manifest.json beside them, outside the ingested dir
FUTURE = datetime(2099, 1, 1, tzinfo=timezone.utc)


def _doc(**changes) -> dict:
    """A valid sealed bundle with `changes` applied, re-sealed (so only the change is wrong)."""
    doc = bundle_doc(seq=900)
    doc.update(changes)
    return seal(doc)


def _env(**changes) -> dict:
    env = dict(bundle_doc()["environment"])
    env.update(changes)
    return _doc(environment=env)


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _measure(**changes) -> dict:
    m = {"benchmark": "gemm", "metric": "fp32_tflops", "value": 1.0, "unit": "TFLOP/s",
         "repeats": 3, "statistic": "median"}
    m.update(changes)
    return m


def _telemetry(**changes) -> dict:
    tel = {"t": [0.0, 1.0, 2.0], "gpu": [0, 0, 0], "util": [10.0, 20.0, 30.0],
           "mem_util": [5.0, 5.0, 5.0], "power_w": [100.0, 110.0, 120.0],
           "sm_clock_mhz": [1400.0] * 3, "temp_c": [50.0, 51.0, 52.0]}
    tel.update(changes)
    return tel


def _bytes(doc: dict) -> bytes:
    return canonical_json(doc)


def _text(doc: dict, old: str, new: str) -> bytes:
    """Serialise, then edit the text (for things json.dumps would never write)."""
    text = json.dumps(doc)
    assert old in text, old
    return text.replace(old, new, 1).encode()


def cases() -> list[tuple[str, bytes, str, str, str]]:
    """(file name, content, outcome, field, text the message must contain)."""
    good = bundle_doc(seq=900)
    other = bundle_doc(seq=901)
    ft_negative = dict(good["finetune"][0], tokens_per_s=-5.0)
    base = bundle_doc()["attempts"]
    return [
        ("truncated.json", _bytes(good)[:200], "rejected", "<file>", "not valid JSON"),
        ("empty.json", b"", "rejected", "<file>", "empty file"),
        ("whitespace_only.json", b"  \n\t ", "rejected", "<file>", "empty file"),
        ("non_utf8.json", b'{"schema_version": 1, "target": "caf\xe9"}', "rejected", "<file>", "not UTF-8"),
        ("utf8_bom.json", b"\xef\xbb\xbf" + _bytes(good), "rejected", "<file>", "not valid JSON"),
        ("not_an_object.json", b"[1, 2, 3]", "rejected", "<root>", "expected a JSON object"),
        ("schema_version_wrong.json", _bytes(_doc(schema_version=0)), "rejected", "schema_version", "expected 1"),
        ("schema_version_future.json", _bytes(_doc(schema_version=7)), "rejected", "schema_version", "expected 1"),
        ("schema_version_string.json", _bytes(_doc(schema_version="1")), "rejected", "schema_version", "expected 1"),
        ("missing_target.json", _bytes(seal({k: v for k, v in good.items() if k != "target"})),
         "rejected", "target", "Field required"),
        ("missing_attempts.json", _bytes(seal({k: v for k, v in good.items() if k != "attempts"})),
         "rejected", "attempts", "Field required"),
        ("extra_field.json", _bytes(_doc(cost_usd=3.5)), "rejected", "cost_usd", "Extra inputs"),
        ("extra_nested_field.json", _bytes(_env(favourite_colour="blue")), "rejected",
         "environment.favourite_colour", "Extra inputs"),
        ("wrong_type_attempts.json", _bytes(_doc(attempts="many")), "rejected", "attempts", "list"),
        ("wrong_type_value.json", _bytes(_doc(measurements=[_measure(value="fast")])), "rejected",
         "measurements.0.value", "number"),
        ("wrong_type_bool_cores.json", _bytes(_env(cpu_cores="two")), "rejected", "environment.cpu_cores", "integer"),
        ("nan_value.json", _text(_doc(measurements=[_measure(value=1.25)]), "1.25", "NaN"),
         "rejected", "measurements.0.value", "NaN"),
        ("infinity_value.json", _text(_doc(measurements=[_measure(value=1.25)]), "1.25", "Infinity"),
         "rejected", "measurements.0.value", "Infinity"),
        ("overflow_value.json", _text(_doc(measurements=[_measure(value=1.25)]), "1.25", "1e999"),
         "rejected", "measurements.0.value", "finite"),
        ("overflow_in_params.json", _text(_doc(measurements=[_measure(params={"k": 1.25})]), "1.25", "1e999"),
         "rejected", "measurements.0.params.k", "inf"),
        ("negative_tokens_per_s.json", _bytes(_doc(finetune=[ft_negative])), "rejected",
         "finetune.0.tokens_per_s", "greater than 0"),
        ("negative_rate_measurement.json",
         _bytes(_doc(measurements=[_measure(metric="tokens_per_s", unit="tokens/s", value=-3.0)])),
         "quarantined", "measurements.rate_value", "-3.0"),
        ("tflops_above_peak.json",
         _bytes(_doc(measurements=[_measure(value=110.0, peak=100.0, peak_source="datasheet")])),
         "quarantined", "measurements.efficiency", "1.05"),
        ("utilisation_over_100.json", _bytes(_doc(telemetry=_telemetry(util=[10.0, 250.0, 30.0]))),
         "quarantined", "telemetry.util", "250"),
        ("telemetry_reversed.json", _bytes(_doc(telemetry=_telemetry(t=[0.0, 2.0, 1.0]))),
         "quarantined", "telemetry.t_step", "-1.0"),
        ("telemetry_ragged.json", _bytes(_doc(telemetry=_telemetry(util=[1.0]))),
         "rejected", "telemetry", "column 'util'"),
        ("timestamps_future.json", _bytes(_doc(started_at=_iso(FUTURE), finished_at=_iso(FUTURE + timedelta(seconds=5)))),
         "rejected", "started_at", "in the future"),
        ("timestamps_reversed.json", _bytes(_doc(finished_at=good["started_at"], started_at=good["finished_at"])),
         "rejected", "<root>", "finished_at is before started_at"),
        ("timestamps_naive.json", _bytes(_doc(started_at="2026-11-02T12:00:00")), "rejected", "started_at", "UTC offset"),
        ("attempt_before_run.json", _bytes(_doc(attempts=[dict(base[0], started_at="2026-10-01T00:00:00Z"), base[1]])),
         "quarantined", "attempts.started_at>=run_earliest_ok", "2026-10-01"),
        ("attempt_duplicate_try.json", _bytes(_doc(attempts=[base[0], base[0], base[1]])),
         "quarantined", "attempts.run_id,task,attempt", "gemm"),
        ("int_overflow_attempt.json", _bytes(_doc(attempts=[dict(base[0], attempt=10**12), base[1]])),
         "rejected", "attempts.0.attempt", "out of range"),
        ("int_overflow_params_total.json", _bytes(_doc(finetune=[dict(good["finetune"][0], params_total=10**20)])),
         "rejected", "finetune.0.params_total", "out of range"),
        ("failed_without_kind.json", _bytes(_doc(attempts=[{"task": "gemm", "attempt": 1, "state": "failed", "duration_s": 1.0}])),
         "rejected", "attempts.0", "needs an error_kind"),
        ("duplicate_bundle_id_other_content.json", _bytes(dict(other, bundle_id=good["bundle_id"])),
         "rejected", "bundle_id", "does not match the content"),
        ("bundle_id_not_hex.json", _bytes(dict(good, bundle_id="../../etc/passwd")), "rejected", "bundle_id", "pattern"),
        ("deep_nesting_params.json", _bytes(_doc(measurements=[_measure(params={"x": _nest(40)})])),
         "rejected", "<file>", "nested deeper"),
        ("deep_nesting_raw.json", b"{\"a\":" * 5000 + b"1" + b"}" * 5000, "rejected", "<file>", "nested deeper"),
        ("target_sql.json", _bytes(_doc(target="x'); drop table runs;--")), "rejected", "target", "pattern"),
        ("target_html.json", _bytes(_doc(target="<script>alert(1)</script>")), "rejected", "target", "pattern"),
        ("target_path.json", _bytes(_doc(target="../../etc")), "rejected", "target", "pattern"),
        ("target_control.json", _bytes(_doc(target="local\x1b[31m")), "rejected", "target", "control characters"),
        ("gpu_name_sql.json", _bytes(_env(gpu_name="x'); drop table runs;--", gpu_count=1)),
         "quarantined", "environments.gpu_name", "drop table"),
        ("gpu_name_html.json", _bytes(_env(gpu_name="<img src=x onerror=alert(1)>", gpu_count=1)),
         "quarantined", "environments.gpu_name", "onerror"),
        ("gpu_name_path.json", _bytes(_env(gpu_name="../../etc/passwd", gpu_count=1)),
         "quarantined", "environments.gpu_name", "../../etc"),
        ("gpu_name_control.json", _bytes(_env(gpu_name="A100\x00\x07", gpu_count=1)),
         "rejected", "environment.gpu_name", "control characters"),
    ]


def _nest(depth: int):
    node: object = 1
    for _ in range(depth):
        node = [node]
    return node


def main() -> int:
    manifest = []
    CASES.mkdir(exist_ok=True)
    for old in CASES.glob("*.json"):
        old.unlink()
    for name, content, outcome, field, says in cases():
        (CASES / name).write_bytes(content)
        manifest.append({"file": name, "outcome": outcome, "field": field, "says": says})
    manifest.append({"file": "huge_500mb.json (made by the test)", "outcome": "rejected",
                     "field": "<file>", "says": "larger than"})
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest)} cases written to {CASES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
