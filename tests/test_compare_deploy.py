"""deploy/: the shipped prefect.yaml is rendered from the shipped targets, and the work-pool
templates are accepted by a real Prefect server and resolve to a GPU-pinned Job.

    .venv/bin/pytest -q tests/test_compare_deploy.py
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from deploy import pools
from deploy.render import render
from tasks.dispatch.targets import load_targets


def test_shipped_prefect_yaml_is_rendered_from_shipped_targets():
    text = render("deploy/targets.toml")
    assert Path("deploy/prefect.yaml").read_text() == text, "re-run: python -m deploy.render > deploy/prefect.yaml"
    deployments = yaml.safe_load(text)["deployments"]
    names = {(d["entrypoint"].split(":")[1], d["name"]) for d in deployments}
    assert {("compare", "weekly"), ("compare", "adhoc"), ("report", "daily"), ("probe", "aws-g5-xlarge")} <= names
    weekly = next(d for d in deployments if d["name"] == "weekly")
    assert weekly["schedules"][0]["cron"] and weekly["parameters"]["targets"] is None
    pool_of = {d["name"]: d["work_pool"]["name"] for d in deployments if d["entrypoint"].endswith(":probe")}
    for t in load_targets("deploy/targets.toml"):
        if t.dispatch in ("pool", "kubernetes"):
            assert pool_of[t.id] == t.work_pool
    pulls = {d["name"]: d.get("pull") for d in deployments if d["entrypoint"].endswith(":probe")}
    assert pulls["eks-p5-48xlarge"] == [{"prefect.deployments.steps.set_working_directory":
                                         {"directory": pools.IMAGE_WORKDIR}}]  # the image's copy of the code
    assert pulls["aws-g5-xlarge"] is None  # a process worker runs from the deploying checkout's path


def test_render_takes_the_targets_file_from_costgap_targets_and_the_flag_over_it(tmp_path, monkeypatch):
    from deploy.render import main

    files = {}
    for name in ("from-env", "from-flag"):
        files[name] = tmp_path / f"{name}.toml"
        files[name].write_text(f'[[target]]\nid = "{name}"\ndispatch = "pool"\nwork_pool = "pool-{name}"\n')
    monkeypatch.setenv("COSTGAP_TARGETS", str(files["from-env"]))
    main(["--out", str(tmp_path / "env.yaml")])
    probes = {d["name"] for d in yaml.safe_load((tmp_path / "env.yaml").read_text())["deployments"]
              if d["entrypoint"].endswith(":probe")}
    assert probes == {"from-env"}
    main(["--targets-file", str(files["from-flag"]), "--out", str(tmp_path / "flag.yaml")])
    probes = {d["name"] for d in yaml.safe_load((tmp_path / "flag.yaml").read_text())["deployments"]
              if d["entrypoint"].endswith(":probe")}
    assert probes == {"from-flag"}


def test_shipped_pool_templates_are_the_generator_output():
    by_id = {t.id: t for t in load_targets("deploy/targets.toml")}
    kube = sorted(t.id for t in by_id.values() if t.dispatch == "kubernetes")
    assert sorted(p.name for p in Path("deploy/work-pools").glob("kubernetes-*.json")) == \
        [f"kubernetes-{i}.json" for i in kube]
    for name in kube:
        shipped = json.loads(Path(f"deploy/work-pools/kubernetes-{name}.json").read_text())
        assert shipped == pools.kubernetes(by_id[name]), f"re-run: python -m deploy.pools kubernetes {name}"
    assert json.loads(Path("deploy/work-pools/process.json").read_text()) == pools.process(by_id["aws-g5-xlarge"])


def test_kubernetes_template_resolves_to_pinned_gpu_job_on_a_real_server(prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.utilities.templating import apply_values

    t = {x.id: x for x in load_targets("deploy/targets.toml")}["eks-p5-48xlarge"]
    template = pools.kubernetes(t)
    with get_client(sync_client=True) as c:
        pool = c.create_work_pool(WorkPoolCreate(name="test-k8s-p5", type="kubernetes", base_job_template=template),
                                  overwrite=True)
        stored = c.read_work_pool(pool.name).base_job_template
        proc = c.create_work_pool(WorkPoolCreate(name="test-proc", type="process",
                                                 base_job_template=pools.process(t)), overwrite=True)
        assert c.read_work_pool(proc.name).base_job_template["variables"]["properties"]["working_dir"]
    defaults = {k: v["default"] for k, v in stored["variables"]["properties"].items() if "default" in v}
    job = apply_values(stored["job_configuration"], {**defaults, "command": "prefect flow-run execute"})
    spec = job["job_manifest"]["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge",
                                    "eks.amazonaws.com/nodegroup": "gpu-p5"}
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert job["job_manifest"]["spec"]["backoffLimit"] == 0
