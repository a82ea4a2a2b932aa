"""A compare run whose import targets each land good bundles beside one damaged file, through the CLI on the
shared Prefect test server: every outcome line is true, and each refusal is told under the target whose
inbox held it (issue 37, items 2 and 3).

    .venv/bin/python -m pytest -q tests/test_run_refusals.py

Events are read back from the server by their resource (costgap.target.<tag>-...: this test's targets only,
the server is shared).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from datetime import timedelta

import duckdb
import pytest

from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle, write_raw
from tasks.canonical import canonical_json

WAIT_S = 60.0  # the server's event persister flushes every few seconds
QUARANTINED = "costgap.data.quarantined"


def _told(prefix: str, since) -> list:
    """costgap.data.quarantined events stored on the server since `since` whose resource starts with prefix."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter
    from prefect.types._datetime import now

    flt = EventFilter(occurred=EventOccurredFilter(since=since, until=now("UTC") + timedelta(minutes=1)),
                      event=EventNameFilter(name=[QUARANTINED]), resource=EventResourceFilter(id_prefix=[prefix]))
    with get_client(sync_client=True) as c:
        return list(c.read_events(flt, limit=50).events)


@pytest.mark.slow  # a whole `costgap run` in a subprocess
def test_targets_landed_beside_a_damaged_file_each_say_so_and_tell_it_under_their_own_name(prefect_harness, tmp_path):
    from prefect.types._datetime import now

    since = now("UTC") - timedelta(minutes=1)
    tag = f"t{uuid.uuid4().hex[:8]}"
    a, b = f"{tag}-a", f"{tag}-b"
    for t in (a, b):
        for i in range(2):
            write_bundle(tmp_path / t, bundle_doc(target=t, seq=i, tokens_per_s=1000.0 + i))
    cut = canonical_json(bundle_doc(target=a, seq=9)).decode()
    write_raw(tmp_path / a, "cut.json", cut[: len(cut) // 2])  # an upload cut short: names no target
    write_raw(tmp_path / b, "broken.json", "{not json")
    targets = tmp_path / "targets.toml"
    targets.write_text("".join(f'[[target]]\nid = "{t}"\ndispatch = "import"\ninbox = "{tmp_path / t}"\n\n'
                               for t in (a, b)))
    wh = tmp_path / "wh.duckdb"
    got = subprocess.run([*COSTGAP, "run", "--targets", f"{a},{b}", "--targets-file", str(targets), "--warehouse",
                          str(wh), "--site", str(tmp_path / "site"), "--results", str(tmp_path / "results")],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    out = got.stdout + got.stderr
    print(got.stdout)  # shown with -s
    assert got.returncode == 1, out[-3000:]
    assert "no target landed" not in out, out[-3000:]
    lines = got.stdout.splitlines()
    for t, name, why in ((a, "cut.json", "not valid JSON"), (b, "broken.json", "not valid JSON")):
        line = next((ln for ln in lines if ln.startswith(f"  {t} ")), got.stdout)  # below the headline table
        assert line.split()[1:4] == ["landed,", "1", "refused"], line
        refused = lines[lines.index(line) + 1]
        assert refused.startswith(f"      refused {tmp_path / t / name}: ") and why in refused, refused
    assert lines[-1] == f"Partial: 2 of 2 targets landed, 2 file(s) refused: {a} (1), {b} (1)", lines[-1]

    with duckdb.connect(str(wh), read_only=True) as con:
        runs = dict(con.execute("select target, count(*) from runs group by 1").fetchall())
        dispatched = dict(con.execute("select target, status from dispatches").fetchall())
        quarantine = dict(con.execute("select source_uri, target from quarantine").fetchall())
    assert runs == {a: 2, b: 2} and dispatched == {a: "landed", b: "landed"}
    assert quarantine == {str(tmp_path / a / "cut.json"): a, str(tmp_path / b / "broken.json"): b}

    deadline = time.monotonic() + WAIT_S
    while True:
        told = {e.resource.id: e for e in _told(f"costgap.target.{tag}-", since)}
        if len(told) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(told) == {f"costgap.target.{a}", f"costgap.target.{b}"}, list(told)
    assert [x["source_uri"] for x in told[f"costgap.target.{a}"].payload["bundles"]] == [str(tmp_path / a / "cut.json")]
    assert told[f"costgap.target.{b}"].payload["count"] == 1
    unknown = _told("costgap.target.unknown", since)
    assert not [e for e in unknown if str(tmp_path) in str(e.payload)]  # neither file was told as of no target
