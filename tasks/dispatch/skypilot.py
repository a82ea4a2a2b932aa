"""SkyPilot tasks: launch an instance of a target's type, probe it, put the bundle in the results store, tear down.

    costgap export skypilot aws-g5-xlarge lambda-gpu-1x-a10 --results s3://bucket/costgap --out sky/
    sky launch -c costgap-aws-g5-xlarge sky/aws-g5-xlarge.sky.yaml --down -y   # from the checkout root
    costgap run --targets-file sky/targets-import.toml --targets all         # land what came back

`task(target, ...)` is the task SkyPilot runs (a plain dict, written as YAML); `reach(target, ...)`
says whether SkyPilot can reach a target at all, and if not, why. The task's run writes the bundle
under `<results>/skypilot/<target>/`, which is the inbox of the same target as an `import` target
(`import_target`): `costgap run --targets-file <out>/targets-import.toml --targets all` lands them.
Nothing stays up: the probe is bounded by the target's timeout_s, and `autostop: {down: true}` tears
the cluster down once it is idle (or `sky launch --down`).

Which clouds SkyPilot can launch on is SkyPilot's own list (sky/clouds/ of skypilot 0.14.1, read
2026-12-06: aws, azure, cudo, do, fluidstack, gcp, hyperbolic, ibm, kubernetes, lambda, mithril,
nebius, oci, paperspace, primeintellect, runpod, scp, seeweb, shadeform, slurm, ssh, vast, verda,
vsphere, yotta). Alibaba Cloud and Tencent Cloud are not on it: their targets are reached through
SkyPilot's Kubernetes support on the cloud's own cluster (ACK, TKE), given that cluster's kubeconfig
context (`--k8s-context alibaba=CONTEXT`); without one they are named as not reachable, never written
as a task that cannot launch.
"""

from __future__ import annotations

import re
import shlex

from tasks.dispatch.targets import Target

SKYPILOT_VERSION = "0.14.1"  # the release whose loader the tests validate the tasks with (pyproject: test extra)
# provider (targets.toml) -> SkyPilot infra name, for the clouds SkyPilot launches on itself (module docstring)
SKY_CLOUDS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "oci": "oci",
              "nebius": "nebius", "runpod": "runpod", "paperspace": "paperspace", "fluidstack": "fluidstack",
              "cudo": "cudo", "ibm": "ibm", "scp": "scp", "do": "do", "vast": "vast"}
# providers SkyPilot has no cloud for, and the managed Kubernetes it reaches them through
K8S_ONLY = {"alibaba": "ACK (Alibaba Cloud Container Service for Kubernetes)",
            "tencent": "TKE (Tencent Kubernetes Engine)"}
# targets.toml's gpu_model -> SkyPilot's accelerator name (SkyPilot catalogs v8: AWS p4d = A100,
# p5 = H100, g5 = A10G; GCP a2-highgpu = A100, a3-highgpu = H100; Lambda gpu_1x_a10 = A10)
SKY_ACCELERATORS = {"A10": "A10", "A10G": "A10G", "A100-SXM4-40GB": "A100", "A100-PCIE-40GB": "A100",
                    "A100-SXM4-80GB": "A100-80GB", "H100-SXM5-80GB": "H100", "H100-PCIE-80GB": "H100",
                    "H200": "H200", "L4": "L4", "L40S": "L40S", "T4": "T4", "V100": "V100",
                    "V100-SXM2-32GB": "V100"}  # GN10Xp (targets.toml): SkyPilot names no SXM2/PCIe V100 apart


def gpu_model_of(accelerator: str) -> str:
    """SkyPilot's accelerator name as the targets file names the GPU: the first SKY_ACCELERATORS entry for it
    ("A100" -> "A100-SXM4-40GB": the clouds' A100 instance types are SXM4), else the name unchanged."""
    return next((model for model, sky in SKY_ACCELERATORS.items() if sky == accelerator), accelerator)


# results stores an instance writes to and this machine reads back (fsspec: s3fs, gcsfs, ossfs, cosfs)
REMOTE_SCHEMES = ("s3", "gs", "oss", "cos")
IDLE_MINUTES = 5  # autostop: the cluster goes down this long after the probe ends (SkyPilot's minimum is 1)
SETUP_S = 1800  # budget for `setup` (pip install of torch and the probe) on top of the probe's timeout_s
IMPORT_FIELDS = {"provider", "region", "instance_type", "gpu_model", "gpu_count", "billing_mode", "timeout_s",
                 "skip", "notes"}  # what an import target keeps of the exported target (no pool, no cluster)
INBOX_DIR = "skypilot"  # bundles land under <results>/skypilot/<target>/<run key>/


def cluster_name(target_id: str) -> str:
    """A SkyPilot cluster name for a target: lower case, letters, digits and dashes, at most 63 chars."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"costgap-{target_id}".lower()).strip("-")
    return name[:63].rstrip("-")


def inbox_url(results: str, target_id: str) -> str:
    """Where a SkyPilot task's bundles for `target_id` land: the import target's inbox."""
    return f"{results.rstrip('/')}/{INBOX_DIR}/{target_id}"


def reach(t: Target, k8s_contexts: dict[str, str] | None = None) -> tuple[str | None, str | None]:
    """(infra, None) when SkyPilot can launch this target, else (None, the reason it cannot)."""
    k8s_contexts = k8s_contexts or {}
    if t.dispatch in ("local", "import"):
        return None, f"dispatch = {t.dispatch!r}: not a cloud instance SkyPilot can launch"
    if t.dispatch == "kubernetes":
        return None, "dispatch = 'kubernetes': already measured on demand through its Kubernetes work pool"
    if not t.gpu_count or not t.gpu_model:
        return None, "no GPU model and count in the targets file: nothing to ask SkyPilot for"
    if t.gpu_model not in SKY_ACCELERATORS:
        return None, (f"gpu_model {t.gpu_model!r} has no SkyPilot accelerator name here "
                      f"(known: {', '.join(sorted(SKY_ACCELERATORS))})")
    if t.provider in SKY_CLOUDS:
        return f"{SKY_CLOUDS[t.provider]}/{t.region}", None
    if t.provider in K8S_ONLY:
        ctx = k8s_contexts.get(t.provider)
        if ctx:
            return f"k8s/{ctx}", None
        return None, (f"SkyPilot {SKYPILOT_VERSION} has no {t.provider} cloud; reach it through SkyPilot's "
                      f"Kubernetes support on {K8S_ONLY[t.provider]}: --k8s-context {t.provider}=CONTEXT")
    return None, f"provider {t.provider!r}: SkyPilot {SKYPILOT_VERSION} has no such cloud"


def _run_script(timeout_s: float) -> str:
    put = ("import sys; from tasks.dispatch.results import ResultsStore; "
           "print(ResultsStore(sys.argv[1]).put_bundle(sys.argv[2], sys.argv[3], sys.argv[4]))")
    return "\n".join([
        "set -euo pipefail",
        'out="$(mktemp -d)"',
        f"timeout {int(timeout_s)} python -m tasks.probe --profile \"$COSTGAP_PROFILE\" --target \"$COSTGAP_TARGET\" "
        '--origin-kind import --out "$out" | tail -n 1 > "$out/.bundle-path"',
        'run_key="sky-$(date -u +%Y%m%dT%H%M%SZ)"',
        f'python -c {shlex.quote(put)} "$COSTGAP_RESULTS/{INBOX_DIR}" "$COSTGAP_TARGET" "$run_key" '
        '"$(cat "$out/.bundle-path")"',
        "",
    ])


SETUP = "\n".join([
    "set -euo pipefail",
    "python -m pip install --upgrade pip",
    "python -m pip install -e '.[probe,s3]'  # the checkout, synced by SkyPilot as the workdir",
    "",
])


def results_reachable(results: str) -> bool:
    """Whether an instance can put bundles at `results` and this machine read them back: an object store URL."""
    return results.split("://", 1)[0].lower() in REMOTE_SCHEMES if "://" in results else False


def task(t: Target, *, results: str, profile: str = "standard",
         k8s_contexts: dict[str, str] | None = None, down: bool = True) -> dict:
    """The SkyPilot task (YAML as a dict) that probes target `t` once; ValueError if unreachable.
    down: tear the instance down when idle (its disk with it); False stops it and keeps its disk."""
    infra, why = reach(t, k8s_contexts)
    if infra is None:
        raise ValueError(f"target {t.id!r}: {why}")
    resources: dict = {"infra": infra, "accelerators": f"{SKY_ACCELERATORS[t.gpu_model]}:{t.gpu_count}"}
    if not infra.startswith("k8s/"):  # on Kubernetes the node pool is picked by GPU label, not by name
        resources["instance_type"] = t.instance_type
    resources["use_spot"] = t.billing_mode == "spot"
    resources["autostop"] = {"idle_minutes": IDLE_MINUTES, "down": down}
    return {
        "name": cluster_name(t.id),
        "workdir": ".",
        "resources": resources,
        "envs": {"COSTGAP_TARGET": t.id, "COSTGAP_PROFILE": profile, "COSTGAP_RESULTS": results.rstrip("/")},
        "setup": SETUP,
        "run": _run_script(t.timeout_s),
    }


def import_target(t: Target, results: str) -> dict:
    """The same target as an `import` target whose inbox is where its SkyPilot task puts bundles."""
    keep = {k: v for k, v in t.model_dump(include=IMPORT_FIELDS).items() if v not in (None, (), "")}
    return {**keep, "id": t.id, "dispatch": "import", "inbox": inbox_url(results, t.id),
            "notes": f"Bundles from `sky launch` of {task_file(t.id)}. {t.notes}".strip()}


def to_yaml(task_dict: dict) -> str:
    """A task as YAML, multi-line scripts as literal blocks so `setup` and `run` read as shell."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper, data):
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(task_dict, Dumper=_Dumper, sort_keys=False, width=200)


def task_file(target_id: str) -> str:
    """The file name a target's task is written to."""
    return f"{target_id}.sky.yaml"


def toml_targets(entries: list[dict]) -> str:
    """A targets file (TOML) holding `entries`: strings, numbers and lists of strings only."""
    import json

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(json.dumps(str(x)) for x in v) + "]"
        return json.dumps(str(v))  # JSON's escapes are valid in a TOML basic string

    out = ["# Written by `costgap export skypilot`: the exported targets as `import` targets whose inbox is",
           "# where their SkyPilot task puts the bundle. Land them: costgap run --targets-file THIS --targets all", ""]
    for e in entries:
        out.append("[[target]]")
        out += [f"{k} = {value(v)}" for k, v in e.items() if v is not None]
        out.append("")
    return "\n".join(out)
