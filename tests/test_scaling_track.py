"""A multi-GPU prediction recorded before the distributed probe's run lands is scored when it lands (issue 42).

    .venv/bin/pytest -q tests/test_scaling_track.py

The run is real: the distributed probe's gloo path on CPU (two ranks, the tiny preset at n=1 and n=2), sealed
into a bundle and landed with `costgap ingest` (the landing path, which scores recorded estimates). The
prediction comes from tasks/estimate/scaling.py for the same preset's parameters, recorded with
estimate_track.record before the landing, as `costgap estimate --record` does.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from tasks.estimate import estimate_track as track
from tasks.estimate.scaling import predict_scaling
from tasks.probe.distributed.multi_gpu import CPU_CI, run_multi_gpu
from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle
from warehouse import sql
from warehouse.db import connect

pytestmark = pytest.mark.slow  # a distributed probe run on gloo: a fleet of worker processes

TARGET = "gloo-2x"


@pytest.fixture(scope="module")
def gloo_run():
    return run_multi_gpu(CPU_CI, backend="gloo", nprocs=2, timeout_s=180)


def _prediction(params: float) -> dict:
    """What `costgap estimate --record` keeps for a 2-GPU target: a candidates() row with its scaling."""
    s = predict_scaling("H100-SXM", 2, "pcie-host", params=params, trainable_params=params,
                        tokens_per_gpu_step=CPU_CI.micro_batch * CPU_CI.seq_len, tokens_per_s_1=500.0)
    assert s.efficiency is not None and s.lo <= s.efficiency <= s.hi, s.reason
    return {"status": "estimate", "target": TARGET, "provider": "ci", "region": "ci", "instance_type": "gloo.2x",
            "gpu_key": "H100-SXM", "gpu_count": 2, "preset": "tiny", "precision": "fp32", "fit": "as measured",
            "tokens_per_s": 1000.0, "lo": 800.0, "hi": 1200.0, "assumptions": [s.reason], "scaling": s.efficiency,
            "scaling_lo": s.lo, "scaling_hi": s.hi, "fabric": "pcie-host", "network": None, "busbw_gbps": s.busbw_gbps}


def test_landing_a_multi_gpu_bundle_scores_the_prediction_recorded_before_it(gloo_run, tmp_path):
    measurements, finetunes, attempts = gloo_run
    two = next(f for f in finetunes if f["n_gpus"] == 2)
    assert two["status"] == "ok" and two["scaling_efficiency"] > 0
    path = tmp_path / "w.duckdb"
    con = connect(str(path))
    at = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=5)
    pred = _prediction(float(two["params_total"]))
    assert track.record(con, [pred], at) == 1
    con.close()
    env = {"hostname": "ci", "gpu_count": 0, "source": "none", "extra": {"fabric": "pcie-host"}}
    began = min(datetime.fromisoformat(a["started_at"].replace("Z", "+00:00")) for a in attempts if a.get("started_at"))
    doc = bundle_doc(target=TARGET, started_at=began - timedelta(seconds=1), measurements=measurements,
                     finetune=finetunes, attempts=attempts, environment=env,
                     finished_at=datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"))
    write_bundle(tmp_path / "b", doc)
    r = subprocess.run([*COSTGAP, "ingest", str(tmp_path / "b"), "--warehouse", str(path)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    con = connect(str(path))
    try:
        (row,) = [x for x in track.track_record(con) if x["target"] == TARGET]
        measured = two["scaling_efficiency"]
        assert row["measured_scaling_efficiency"] == pytest.approx(measured)
        assert row["scaling_error"] == pytest.approx(pred["scaling"] - measured)
        assert row["scaling_inside"] == (pred["scaling_lo"] <= measured <= pred["scaling_hi"])
        assert row["scaling_landed_at"] > at and row["fabric"] == "pcie-host"
        assert track.score(con) == []  # written once, kept
        # the landed host's fingerprint says its fabric: the catalog reads it before any published fact
        (cat,) = [c for c in sql.rows(con, "estimate_catalog", {"preset": None}) if c["target"] == TARGET]
        assert cat["measured_fabric"] == "pcie-host"
    finally:
        con.close()

