"""Kubernetes work pools per instance type (deploy/pools.py), checked for real and offline: each shipped
kubernetes target's pool is registered on a real Prefect server, a flow run of its probe deployment gets
its job configuration from prefect-kubernetes' own worker configuration (the call the Kubernetes worker
makes for every flow run it picks up), and the resulting Job is validated against the Kubernetes schema
with kubernetes-validate. A broken template is refused by the same check. No cluster, no network.

    .venv/bin/python -m pytest -q tests/test_kubernetes_pools.py
"""

from __future__ import annotations

import asyncio
import copy

import kubernetes_validate
import pytest

from deploy import pools
from tasks.dispatch.targets import TargetsError, load_targets

SHIPPED = "deploy/targets.toml"
# The managed clusters' current minor versions (EKS, GKE, ACK and TKE all offer some of 1.32-1.35 as of
# 2026-12); kubernetes-validate ships each schema.
SCHEMAS = ("1.32", "1.33", "1.34", "1.35")
# prefect-kubernetes 0.8.0 refuses a template whose pod spec lacks these (worker.py, _get_base_job_manifest);
# the API server drops them from a pod spec with a warning. Everything else is checked strictly.
PREFECT_POD_EXTRAS = ("parallelism", "completions")


def kube_targets():
    return [t for t in load_targets(SHIPPED) if t.dispatch == "kubernetes"]


async def _job_configuration(template: dict, pool_name: str):
    """What a Kubernetes worker polling `pool_name` builds for a flow run of a probe deployment there."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect_kubernetes.worker import KubernetesWorker

    async with get_client() as c:
        await c.create_work_pool(WorkPoolCreate(name=pool_name, type="kubernetes", base_job_template=template),
                                 overwrite=True)
        pool = await c.read_work_pool(pool_name)
        flow_id = await c.create_flow_from_name("probe")
        deployment_id = await c.create_deployment(
            flow_id=flow_id, name=pool_name, work_pool_name=pool_name, entrypoint="flows/probe.py:probe",
            parameters={"target": pool_name, "profile": "quick"},
            pull_steps=[{"prefect.deployments.steps.set_working_directory": {"directory": pools.IMAGE_WORKDIR}}])
        run = await c.create_flow_run_from_deployment(deployment_id)
        return await KubernetesWorker.job_configuration.resolve_for_flow_run(
            run, client=c, work_pool=pool, worker_name="costgap-test")


def checked_job(template: dict, pool_name: str) -> dict:
    """The Job manifest prefect-kubernetes would create, validated against every schema in SCHEMAS.
    Raises what Prefect's configuration or kubernetes-validate raises for a bad template."""
    manifest = asyncio.run(_job_configuration(template, pool_name)).job_manifest
    strict = copy.deepcopy(manifest)
    pod = strict["spec"]["template"]["spec"]
    for key in PREFECT_POD_EXTRAS:
        assert pod.pop(key) == 1
    for version in SCHEMAS:
        assert kubernetes_validate.validate(strict, version, strict=True) == version
    return manifest


def test_shipped_targets_have_a_kubernetes_target_on_each_cloud():
    targets = kube_targets()
    assert {t.cluster for t in targets} == {"eks", "gke", "ack", "tke"}
    assert len({t.work_pool for t in targets}) == len(targets)  # one pool per instance type
    assert all(t.gpu_count >= 1 and t.image and t.vcpus and t.memory_gib for t in targets)


@pytest.mark.parametrize("t", kube_targets(), ids=lambda t: t.id)
def test_pool_job_built_by_prefect_kubernetes_is_a_valid_gpu_job(t):
    job = checked_job(pools.kubernetes(t), f"test-k8s-{t.id}")
    spec = job["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == t.instance_type
    gpu_label = {"eks": None, "gke": ("cloud.google.com/gke-accelerator", t.accelerator),
                 "ack": ("aliyun.accelerator/nvidia_name", t.accelerator),
                 "tke": ("node.tke.cloud.tencent.com/accelerator-type", "gpu")}[t.cluster]
    if gpu_label:
        assert pod["nodeSelector"][gpu_label[0]] == gpu_label[1]
    if t.node_pool:
        assert t.node_pool in pod["nodeSelector"].values()
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": t.gpu_count}
    assert spec["activeDeadlineSeconds"] == int(t.timeout_s) + 1200  # the probe's budget + the node's scale-up
    assert spec["ttlSecondsAfterFinished"] == 3600 and spec["backoffLimit"] == 0
    cpu, memory = container["resources"]["requests"]["cpu"], container["resources"]["requests"]["memory"]
    assert cpu.endswith("m") and 0 < int(cpu[:-1]) < t.vcpus * 1000
    assert memory.endswith("Mi") and 0 < int(memory[:-2]) < t.memory_gib * 1024
    assert container["image"] == t.image and container["args"][:3] == ["prefect", "flow-run", "execute"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["COSTGAP_IMAGE"] == t.image and env["PREFECT__FLOW_RUN_ID"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == pools.IMAGE_UID
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert spec["template"]["metadata"]["labels"]["prefect.io/flow-run-id"] == env["PREFECT__FLOW_RUN_ID"]


def _broken(mutate):
    t = next(t for t in kube_targets() if t.cluster == "ack")
    template = pools.kubernetes(t)
    mutate(template["job_configuration"]["job_manifest"])
    return template


def _typo_node_selector(m):
    pod = m["spec"]["template"]["spec"]
    pod["nodeSelecter"] = pod.pop("nodeSelector")


def _tolerations_as_mapping(m):
    m["spec"]["template"]["spec"]["tolerations"] = {"key": "nvidia.com/gpu", "operator": "Exists"}


def _gpu_limit_in_the_wrong_place(m):
    c = m["spec"]["template"]["spec"]["containers"][0]
    c["limits"] = c["resources"].pop("limits")


def _restart_always(m):
    m["spec"]["template"]["spec"]["restartPolicy"] = "Always"


def _as_shipped_before(m):  # the templates deploy/work-pools held before issue 36: never checked, and refused
    for key in PREFECT_POD_EXTRAS:
        del m["spec"]["template"]["spec"][key]


@pytest.mark.parametrize("mutate, refused_by", [
    (_typo_node_selector, kubernetes_validate.ValidationError),
    (_tolerations_as_mapping, kubernetes_validate.ValidationError),
    (_gpu_limit_in_the_wrong_place, kubernetes_validate.ValidationError),
    (_restart_always, ValueError),  # prefect-kubernetes' own configuration refuses these two
    (_as_shipped_before, ValueError),
], ids=["nodeSelecter", "tolerations-mapping", "limits-outside-resources", "restartPolicy-Always",
        "no-parallelism-in-pod-spec"])
def test_a_broken_template_is_refused(mutate, refused_by):
    with pytest.raises(refused_by):
        checked_job(_broken(mutate), f"test-k8s-broken-{mutate.__name__.strip('_')}".replace("_", "-"))


@pytest.mark.parametrize("vcpus, memory_gib, cpu_m, memory_mib", [
    # by hand: CPU 1000*vcpus - reserved (6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% above) - 500,
    # down to 100m; memory 0.95 * sold - reserved (25% of GiB 0-4, 20% of 4-8, 10% of 8-16, 6% of 16-128,
    # 2% above) - 100 Mi eviction - 1536 Mi daemonsets, down to 256 Mi
    (4, 16, 3400, 11264),  # g5.xlarge: 4000 - 80 - 500 = 3420; 15564.8 - 2662.4 - 1636 = 11266.4
    (8, 30, 7400, 23808),  # gn7i-c8g1.2xlarge: 8000 - 90 - 500 = 7410; 29184 - 3522.56 - 1636 = 24025.4
    (192, 2048, 190900, 1941760),  # p5.48xlarge: 192000 - 550 - 500 = 190950; 1992294.4 - 48865.28 - 1636
])
def test_requests_fit_the_instance(vcpus, memory_gib, cpu_m, memory_mib):
    assert pools.requests_that_fit(vcpus, memory_gib) == (cpu_m, memory_mib)


def test_an_instance_too_small_for_the_node_reservations_is_refused():
    with pytest.raises(ValueError, match="memory_gib = 2"):
        pools.requests_that_fit(1, 2)


KUBE = ('[[target]]\nid = "k"\ndispatch = "kubernetes"\nwork_pool = "pk"\ngpu_model = "A10"\ngpu_count = 1\n'
        'image = "r/costgap-probe:1"\nvcpus = 8\nmemory_gib = 30\n')


@pytest.mark.parametrize("body, field", [
    (KUBE, "cluster"),
    (KUBE.replace('image = "r/costgap-probe:1"\n', "") + 'cluster = "eks"\n', "image"),
    (KUBE.replace("vcpus = 8\n", "") + 'cluster = "eks"\n', "vcpus"),
    (KUBE.replace('image = "r/costgap-probe:1"', 'image = ""') + 'cluster = "eks"\n', "image"),
    (KUBE + 'cluster = "gke"\n', "accelerator"),  # GKE and ACK select GPU nodes by their GPU label
    (KUBE + 'cluster = "aks"\n', "cluster"),
    (KUBE.replace("gpu_count = 1", "gpu_count = 0").replace('gpu_model = "A10"\n', "") + 'cluster = "eks"\n',
     "gpu_count"),
    ('[[target]]\nid = "k"\ndispatch = "pool"\nwork_pool = "p"\ncluster = "eks"\n', "cluster"),
])
def test_bad_kubernetes_target_names_the_field(tmp_path, body, field):
    f = tmp_path / "targets.toml"
    f.write_text(body)
    with pytest.raises(TargetsError) as e:
        load_targets(f)
    assert f"target 'k'" in str(e.value) and f"field '{field}'" in str(e.value)


def test_pools_cli_refuses_a_kubernetes_pool_for_a_process_target(capsys):
    assert pools.main(["kubernetes", "aws-g5-xlarge"]) == 2
    assert "dispatch = 'kubernetes'" in capsys.readouterr().err


def test_compare_dispatches_a_kubernetes_target_through_its_pool_deployment(prefect_harness, tmp_path):
    """The compare flow sends a kubernetes target to run_deployment('probe/<id>') like a pool target (here
    no deployment exists, so it fails there and the rest of the flow goes on) and records its dispatch."""
    import duckdb

    from flows.compare import compare

    f = tmp_path / "targets.toml"
    f.write_text(KUBE.replace('id = "k"', 'id = "k8s-nowhere"') + 'cluster = "eks"\n')
    state = compare(targets=None, profile="quick", targets_file=str(f), return_state=True,
                    warehouse=str(tmp_path / "wh.duckdb"), site=str(tmp_path / "site"),
                    results=str(tmp_path / "results"))
    outcome = state.result()["outcomes"][0] if state.is_completed() else None
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        row = con.execute("select dispatch, status, message from dispatches where target = 'k8s-nowhere'").fetchone()
    finally:
        con.close()
    assert row[0] == "kubernetes" and row[1] == "failed", row
    assert "run_deployment('probe/k8s-nowhere') failed" in row[2]
    assert outcome is None or outcome["dispatch"] == "kubernetes"
