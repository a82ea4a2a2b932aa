"""`costgap export skypilot`: one task per target SkyPilot can reach, each accepted by SkyPilot's own loader.

    .venv/bin/python -m pytest -q tests/test_skypilot_export.py

The loader (sky.Task.from_yaml of skypilot 0.14.1) runs in its own venv (.venv-sky, `make sky`; see
tests/skypilot_check.py for why), offline: a temporary HOME holds the catalogs it reads
(tests/fixtures/skypilot/README.md: SkyPilot's Lambda catalog, and excerpts of its AWS and GCP
catalogs). Each AWS, GCP and Lambda task is also put to SkyPilot's feasibility check (the
optimizer's question before a launch); Kubernetes (ACK) tasks are loaded only: the live cluster
answers the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.dispatch import skypilot as sky
from tasks.dispatch.child import inbox_bundles
from tasks.dispatch.results import ResultsStore
from tasks.dispatch.targets import Target, load_targets

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "skypilot"
SKY_PY = REPO / ".venv-sky" / "bin" / "python"
CATALOGS = {"lambda": "lambda-vms.csv", "aws": "aws-vms-excerpt.csv", "gcp": "gcp-vms-excerpt.csv"}
TARGETS = load_targets(REPO / "deploy" / "targets.toml")


def _costgap(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)


def _sky_load(files: list[Path], home: Path) -> list[dict]:
    """SkyPilot's loader over `files`, run from the checkout root (the tasks' workdir is '.')."""
    if not SKY_PY.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{SKY_PY} missing: `make test` builds it (make sky)")
        pytest.skip(f"{SKY_PY} missing: run `make sky` for SkyPilot's own loader")
    for cloud, name in CATALOGS.items():
        folder = home / ".sky" / "catalogs" / "v8" / cloud
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / name, folder / "vms.csv")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
    proc = subprocess.run([str(SKY_PY), str(REPO / "tests" / "skypilot_check.py"), *map(str, files)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(files), proc.stdout + proc.stderr
    return rows


@pytest.mark.parametrize("target, infra, accelerators", [
    ("aws-g5-xlarge", "aws/us-east-1", "A10G:1"),
    ("aws-p5-48xlarge", "aws/us-east-1", "H100:8"),
    ("gcp-a2-highgpu-1g", "gcp/us-central1", "A100:1"),
    ("lambda-gpu-1x-h100-sxm5", "lambda/us-east-1", "H100:1"),
])
def test_task_names_the_targets_cloud_region_instance_and_accelerators(target, infra, accelerators):
    t = next(t for t in TARGETS if t.id == target)
    task = sky.task(t, results="s3://bucket/costgap", profile="quick")
    res = task["resources"]
    assert (res["infra"], res["instance_type"], res["accelerators"]) == (infra, t.instance_type, accelerators)
    assert res["use_spot"] is False and res["autostop"] == {"idle_minutes": sky.IDLE_MINUTES, "down": True}
    assert task["envs"] == {"COSTGAP_TARGET": target, "COSTGAP_PROFILE": "quick", "COSTGAP_RESULTS": "s3://bucket/costgap"}
    assert f"timeout {int(t.timeout_s)} python -m tasks.probe" in task["run"]
    assert "pip install -e '.[probe,s3]'" in task["setup"]


def test_spot_billing_asks_for_spot_and_unreachable_targets_say_why():
    spot = Target(id="aws-g5-spot", provider="aws", region="us-east-1", instance_type="g5.xlarge", gpu_model="A10G",
                  gpu_count=1, billing_mode="spot", dispatch="pool", work_pool="aws-g5")
    assert sky.task(spot, results="s3://b")["resources"]["use_spot"] is True
    by_id = {t.id: t for t in TARGETS}
    assert sky.reach(by_id["local"])[0] is None and "dispatch = 'local'" in sky.reach(by_id["local"])[1]
    assert sky.reach(by_id["onprem-airgapped"])[0] is None
    infra, why = sky.reach(by_id["alibaba-gn7i-c8g1-2xlarge"])
    assert infra is None and "no alibaba cloud" in why and "ACK" in why and "--k8s-context" in why
    assert sky.reach(by_id["tencent-gn10xp-2xlarge40"], {"tencent": "tke-gz"}) == ("k8s/tke-gz", None)
    odd = spot.model_copy(update={"gpu_model": "MI300X"})
    assert sky.reach(odd)[0] is None and "MI300X" in sky.reach(odd)[1]
    with pytest.raises(ValueError, match="local"):
        sky.task(by_id["local"], results="s3://b")


@pytest.mark.slow  # SkyPilot's loader in .venv-sky's own Python process
def test_export_writes_a_task_skypilot_loads_for_every_reachable_target(tmp_path):
    """Acceptance: every target SkyPilot can reach gets a task its loader accepts; the others are named."""
    out = tmp_path / "sky"
    proc = _costgap("export", "skypilot", "--all", "--results", "s3://bucket/costgap", "--out", str(out),
                    "--k8s-context", "alibaba=ack-hangzhou", "--targets-file", str(REPO / "deploy/targets.toml"),
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reachable = [t for t in TARGETS if sky.reach(t, {"alibaba": "ack-hangzhou"})[0]]
    files = sorted(out.glob("*.sky.yaml"))
    assert [f.name for f in files] == sorted(sky.task_file(t.id) for t in reachable)
    assert "not exported: tencent-gn10xp-2xlarge40: SkyPilot 0.14.1 has no tencent cloud" in proc.stdout
    assert "not exported: local:" in proc.stdout and "not exported: onprem-airgapped:" in proc.stdout
    assert yaml.safe_load((out / "alibaba-gn7i-c8g1-2xlarge.sky.yaml").read_text())["resources"]["infra"] == \
        "k8s/ack-hangzhou"
    rows = _sky_load(files, tmp_path / "home")
    assert [r for r in rows if not r["ok"]] == []
    assert all(all(r["autostop_down"]) for r in rows)
    # the bundles come back through the results store into the same targets as import targets
    back = load_targets(out / "targets-import.toml")
    assert [t.id for t in back] == [t.id for t in reachable]
    assert all(t.dispatch == "import" and t.inbox == sky.inbox_url("s3://bucket/costgap", t.id) for t in back)


@pytest.mark.slow  # SkyPilot's loader in .venv-sky's own Python process
@pytest.mark.parametrize("target, wrong", [("lambda-gpu-1x-a10", "H100:8"), ("aws-g5-xlarge", "H100:8"),
                                           ("gcp-a3-highgpu-8g", "A100:8")])
def test_skypilots_loader_refuses_a_task_that_cannot_launch(tmp_path, target, wrong):
    """The check is SkyPilot's, not ours: accelerators the instance type does not have are refused."""
    t = next(t for t in TARGETS if t.id == target)
    broken = sky.task(t, results="s3://b")
    broken["resources"]["accelerators"] = wrong
    bad = tmp_path / "broken.sky.yaml"
    bad.write_text(sky.to_yaml(broken))
    (refused,) = _sky_load([bad], tmp_path / "home")
    assert not refused["ok"] and "ResourcesMismatchError" in refused["error"], refused
    assert t.instance_type in refused["error"]


def test_a_bundle_put_where_the_task_puts_it_is_in_the_import_targets_inbox(tmp_path):
    """The task's last step (ResultsStore.put_bundle under <results>/skypilot) lands in the inbox."""
    bundle = tmp_path / "abc.json"
    bundle.write_text("{}")
    results = str(tmp_path / "store")
    ResultsStore(f"{results}/{sky.INBOX_DIR}").put_bundle("aws-g5-xlarge", "sky-20261206T000000Z", bundle)
    inbox = sky.inbox_url(results, "aws-g5-xlarge")
    import fsspec

    fs, root = fsspec.core.url_to_fs(inbox)
    assert [Path(p).name for p in inbox_bundles(fs, root)] == ["abc.json"]


def test_export_refuses_when_nothing_can_be_written(tmp_path):
    proc = _costgap("export", "skypilot", "local", "--out", str(tmp_path / "o"),
                    "--targets-file", str(REPO / "deploy/targets.toml"), cwd=tmp_path)
    assert proc.returncode == 2 and "no task written" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_local_results_store_is_refused_unless_the_instances_are_kept(tmp_path):
    """A task tears its instance down with its disk: without a store the instance reaches, nothing comes back."""
    common = ["--targets-file", str(REPO / "deploy/targets.toml")]
    for results in ([], ["--results", str(tmp_path / "results")], ["--results", "file:///tmp/x"]):
        proc = _costgap("export", "skypilot", "--all", *results, "--out", str(tmp_path / "sky"), *common, cwd=tmp_path)
        assert proc.returncode == 2 and "--results" in proc.stderr and "s3://" in proc.stderr, proc.stderr
        assert not (tmp_path / "sky").exists()  # refused before anything is written
    kept = _costgap("export", "skypilot", "aws-g5-xlarge", "--keep-instance", "--out", str(tmp_path / "kept"), *common,
                    cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr
    task = yaml.safe_load((tmp_path / "kept" / "aws-g5-xlarge.sky.yaml").read_text())
    assert task["resources"]["autostop"] == {"idle_minutes": sky.IDLE_MINUTES, "down": False}
    assert "sky down" in kept.stdout and "--down" not in kept.stdout
    (row,) = _sky_load([tmp_path / "kept" / "aws-g5-xlarge.sky.yaml"], tmp_path / "home")
    assert row["ok"] and not any(row["autostop_down"]), row  # SkyPilot's loader reads it as stop, not down
