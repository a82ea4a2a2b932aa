"""Work-pool base job templates: process (default) and Kubernetes, one pool per instance type.

    python -m deploy.pools kubernetes eks-p5-48xlarge > /tmp/eks-p5.json
    prefect work-pool create eks-p5 --type kubernetes --base-job-template /tmp/eks-p5.json
    python -m deploy.pools process local > /tmp/control.json

A `dispatch = "kubernetes"` target (deploy/targets.toml) names its cluster's cloud (eks, gke, ack, tke),
optionally its node pool, its GPU label value, the probe image and the instance's vCPUs and memory. Its
pool's Job asks for a node of exactly that instance type and for all of its GPUs; the cluster autoscaler
brings such a node up for the Job and removes it when it sits empty (docs/deploy.md), so no GPU is kept
between probes. Prefect's default Kubernetes template has neither a nodeSelector nor `nvidia.com/gpu`
limits, so a probe pod could land on any node and see no GPU. Here:
- nodeSelector: `node.kubernetes.io/instance-type` (the well-known label kubelet sets from the cloud
  provider on every managed cluster: kubernetes.io/docs/reference/labels-annotations-taints, read
  2026-12-02), the cloud's GPU label and, where given, its node-pool label (CLUSTERS below);
- a toleration of the `nvidia.com/gpu` NoSchedule taint, whatever its value (GKE sets `present` itself;
  on EKS, ACK and TKE it is the GPU node pool's documented convention, set when the pool is created);
- `nvidia.com/gpu` limit = the instance's GPU count (one pod per instance: the probe measures it whole);
- CPU and memory requests that fit the instance beside the node's own reservations (requests_that_fit);
- `activeDeadlineSeconds` = the target's timeout plus the node's scale-up (Target.wait_s, the same
  figure the compare flow waits), `ttlSecondsAfterFinished`, `backoffLimit: 0` (Prefect retries);
- a memory-backed /dev/shm (PyTorch data loader workers and NCCL need more than the 64 MiB default);
- the image's non-root user (deploy/image/Dockerfile).
The shipped files deploy/work-pools/kubernetes-<target>.json are this output (tests/test_kubernetes_pools.py
builds each through prefect-kubernetes' worker configuration and validates the Job against the Kubernetes
schema).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass

from runtime.settings import DEFAULT_TARGETS
from tasks.dispatch.targets import Target, load_targets

RESULTS = "s3://your-bucket/costgap/results"  # the shared results store the compare flow reads
IMAGE_UID = 10001  # the image's non-root user (deploy/image/Dockerfile: USER 10001)
IMAGE_WORKDIR = "/opt/costgap"  # where the image holds flows/ and tasks/ (the deployments' working dir)
FINISHED_JOB_TTL_S = 3600  # a finished Job (and its pod's logs) is kept an hour for `kubectl logs`, then removed
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class Conventions:
    """How one managed Kubernetes labels and taints its GPU nodes."""

    gpu_label: str | None  # node label naming the GPU; None where the instance type already says it
    gpu_label_value: str | None  # a fixed value of gpu_label; None: the target's `accelerator`
    node_pool_label: str  # node label naming the node pool / node group
    source: str  # where the convention is documented (read 2026-12-06)


GPU_TAINT = "nvidia.com/gpu"  # tolerated with operator Exists: GKE's `present`, or any value set on EKS/ACK/TKE
CLUSTERS: dict[str, Conventions] = {
    # EKS: managed node groups label eks.amazonaws.com/nodegroup; GPU taints are the node group's own
    # (recommended nvidia.com/gpu:NoSchedule): docs.aws.amazon.com/eks/latest/userguide/ml-workload-placement.html
    # and .../node-taints-managed-node-groups.html. The instance type pins the GPU model.
    "eks": Conventions(None, None, "eks.amazonaws.com/nodegroup",
                       "docs.aws.amazon.com/eks/latest/userguide/ml-workload-placement.html"),
    # GKE Standard: GPU nodes carry cloud.google.com/gke-accelerator (e.g. nvidia-h100-80gb) and GKE taints
    # them nvidia.com/gpu=present:NoSchedule; node pools are cloud.google.com/gke-nodepool. Node
    # auto-provisioning needs the accelerator selector to create a GPU pool:
    # cloud.google.com/kubernetes-engine/docs/how-to/gpus
    "gke": Conventions("cloud.google.com/gke-accelerator", None, "cloud.google.com/gke-nodepool",
                       "cloud.google.com/kubernetes-engine/docs/how-to/gpus"),
    # ACK: GPU nodes are labelled aliyun.accelerator/nvidia_name with the card's name (e.g. NVIDIA-A10);
    # node pools alibabacloud.com/nodepool-id: alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/
    # user-guide/use-labels-to-schedule-pods-to-gpu-accelerated-nodes
    "ack": Conventions("aliyun.accelerator/nvidia_name", None, "alibabacloud.com/nodepool-id",
                       "alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/"
                       "use-labels-to-schedule-pods-to-gpu-accelerated-nodes"),
    # TKE: nodes carry node.tke.cloud.tencent.com/accelerator-type = gpu | cpu and
    # tke.cloud.tencent.com/nodepool-id = np-...: tencentcloud.com/document/product/457 (node pools; the
    # labels as TKE nodes show them in `kubectl get node --show-labels`)
    "tke": Conventions("node.tke.cloud.tencent.com/accelerator-type", "gpu", "tke.cloud.tencent.com/nodepool-id",
                       "tencentcloud.com/document/product/457/65833"),
}

# What a node keeps for itself, from GKE's published reservation tables (the largest of the four clouds'
# for GPU sizes; EKS reserves 255 MiB + 11 MiB per pod): cloud.google.com/kubernetes-engine/docs/concepts/
# plan-node-sizes, "Resource reservations", read 2026-12-06. (upper bound of a tier, share reserved):
CPU_RESERVED = ((1, 0.06), (2, 0.01), (4, 0.005), (math.inf, 0.0025))  # cores
MEMORY_RESERVED_GIB = ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06), (math.inf, 0.02))  # GiB
EVICTION_MIB = 100  # kubelet's hard eviction threshold (memory.available < 100Mi)
KERNEL_SHARE = 0.05  # the node's memory capacity is the sold size less the kernel's and firmware's share
DAEMONSETS_CPU_M = 500  # GPU nodes run kube-proxy, the CNI, the NVIDIA device plugin, DCGM exporter, logging
DAEMONSETS_MEMORY_MIB = 1536  # ... measured at a few hundred MiB together; this leaves room for all of them
SHM_MAX_MIB = 16384  # /dev/shm: data loader workers and NCCL's intra-node buffers; counted in the pod's memory


def _tiered(total: float, tiers: tuple[tuple[float, float], ...]) -> float:
    reserved, below = 0.0, 0.0
    for upper, share in tiers:
        reserved += max(0.0, min(total, upper) - below) * share
        below = upper
        if total <= upper:
            break
    return reserved


def requests_that_fit(vcpus: int, memory_gib: float) -> tuple[int, int]:
    """(CPU millicores, memory MiB) a pod can request and still fit on an otherwise empty node of this size.

    A request above the node's allocatable never schedules, and the autoscaler will not even bring a node
    up for it; so: capacity, less the node's reservations, its eviction threshold and the daemonsets."""
    cpu_m = vcpus * 1000 - math.ceil(_tiered(vcpus, CPU_RESERVED) * 1000) - DAEMONSETS_CPU_M
    capacity_mib = memory_gib * 1024 * (1 - KERNEL_SHARE)
    memory_mib = capacity_mib - _tiered(memory_gib, MEMORY_RESERVED_GIB) * 1024 - EVICTION_MIB - DAEMONSETS_MEMORY_MIB
    cpu_m, memory_mib = cpu_m // 100 * 100, int(memory_mib) // 256 * 256
    if cpu_m <= 0 or memory_mib <= 0:
        raise ValueError(f"vcpus = {vcpus}, memory_gib = {memory_gib}: too small for a probe pod beside the node's "
                         f"reservations (requests {cpu_m}m CPU, {memory_mib} MiB)")
    return cpu_m, memory_mib


def node_selector(t: Target) -> dict[str, str]:
    """The labels a node must carry to run target t's probe: its instance type, GPU label, node pool."""
    c = CLUSTERS[t.cluster]
    sel = {INSTANCE_TYPE_LABEL: t.instance_type}
    if c.gpu_label:
        sel[c.gpu_label] = c.gpu_label_value or t.accelerator
    if t.node_pool:
        sel[c.node_pool_label] = t.node_pool
    return sel


def _var(title: str, kind: str | list, default, description: str) -> dict:
    return {"title": title, "type": kind, "default": default, "description": description}


def kubernetes(t: Target) -> dict:
    """A Kubernetes base job template for a `dispatch = "kubernetes"` target's pool."""
    if t.dispatch != "kubernetes":
        raise ValueError(f"target '{t.id}': dispatch = {t.dispatch!r}; a Kubernetes pool is rendered only for "
                         "dispatch = 'kubernetes' (it needs cluster, image, vcpus and memory_gib)")
    cpu_m, memory_mib = requests_that_fit(t.vcpus, t.memory_gib)
    shm_mib = min(SHM_MAX_MIB, memory_mib // 4 // 256 * 256)
    variables = {
        "name": _var("Name", "string", "costgap-probe", "Prefix of the Job's name."),
        "namespace": _var("Namespace", "string", "costgap", "Namespace the probe Jobs run in."),
        "image": _var("Image", "string", t.image, "The probe image (deploy/image/Dockerfile), by tag or digest."),
        "image_pull_policy": _var("Image pull policy", "string", "IfNotPresent", "Kubernetes imagePullPolicy."),
        "service_account_name": _var("Service account", "string", "costgap",
                                     "Needs write access to the results store (IRSA, Workload Identity, RRSA, ...)."),
        "node_selector": {"title": "Node selector", "type": "object", "default": node_selector(t),
                          "additionalProperties": {"type": "string"},
                          "description": f"Pins the probe to {t.instance_type} ({t.cluster}: {CLUSTERS[t.cluster].source})."},
        "gpu_count": _var("GPUs", "integer", t.gpu_count, "nvidia.com/gpu limit: every GPU of the instance."),
        "cpu_request": _var("CPU request", "string", f"{cpu_m}m",
                            f"What fits a {t.vcpus}-vCPU node beside its reservations (deploy/pools.py)."),
        "memory_request": _var("Memory request", "string", f"{memory_mib}Mi",
                               f"What fits a {t.memory_gib:g} GiB node beside its reservations (deploy/pools.py)."),
        "shm_size": _var("Shared memory", "string", f"{shm_mib}Mi", "Size of the memory-backed /dev/shm."),
        "env": {"title": "Environment", "type": "object",
                "default": {"COSTGAP_RESULTS": RESULTS, "COSTGAP_IMAGE": t.image},
                "additionalProperties": {"type": "string"},
                "description": "COSTGAP_IMAGE is recorded in each bundle's environment (tasks/probe/host/container.py)."},
        "active_deadline_seconds": _var("Deadline", "integer", int(t.wait_s),
                                        "The Job is stopped after this: the target's timeout_s plus the node's "
                                        "scale-up and image pull (tasks.dispatch.targets.NODE_UP_S)."),
        "finished_job_ttl": _var("Finished job TTL", "integer", FINISHED_JOB_TTL_S, "Seconds a finished Job is kept."),
        "job_watch_timeout_seconds": _var("Job watch timeout", ["integer", "null"], None, "Give up watching after this."),
        "pod_watch_timeout_seconds": _var("Pod watch timeout", "integer", int(t.wait_s - t.timeout_s),
                                          "The pod waits for its node to come up and its image to be pulled."),
        "stream_output": _var("Stream output", "boolean", True, "Stream the pod's logs to the worker."),
    }
    manifest = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"generateName": "{{ name }}-", "labels": "{{ labels }}", "namespace": "{{ namespace }}"},
        "spec": {
            "backoffLimit": 0,  # Prefect retries, not Kubernetes: every try stays visible in run history
            "activeDeadlineSeconds": "{{ active_deadline_seconds }}",
            "ttlSecondsAfterFinished": "{{ finished_job_ttl }}",
            "template": {"spec": {
                # prefect-kubernetes (0.8.0, worker.py _get_base_job_manifest) refuses a template without these
                # two here; they belong to the Job spec, and the API server drops them from the pod spec with a
                # warning (fieldValidation defaults to Warn). The test checks the rest strictly.
                "parallelism": 1, "completions": 1,
                "restartPolicy": "Never",
                "serviceAccountName": "{{ service_account_name }}",
                "nodeSelector": "{{ node_selector }}",
                "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID,
                                    "fsGroup": IMAGE_UID},
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "{{ shm_size }}"}}],
                "containers": [{
                    "name": "prefect-job", "image": "{{ image }}", "imagePullPolicy": "{{ image_pull_policy }}",
                    "args": "{{ command }}", "env": "{{ env }}",
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                    "securityContext": {"allowPrivilegeEscalation": False},
                    "resources": {"limits": {"nvidia.com/gpu": "{{ gpu_count }}"},
                                  "requests": {"cpu": "{{ cpu_request }}", "memory": "{{ memory_request }}"}},
                }],
            }},
        },
    }
    return {
        "job_configuration": {
            "command": "{{ command }}", "env": "{{ env }}", "labels": "{{ labels }}", "name": "{{ name }}",
            "namespace": "{{ namespace }}", "job_manifest": manifest, "cluster_config": "{{ cluster_config }}",
            "job_watch_timeout_seconds": "{{ job_watch_timeout_seconds }}",
            "pod_watch_timeout_seconds": "{{ pod_watch_timeout_seconds }}", "stream_output": "{{ stream_output }}",
        },
        "variables": {"type": "object", "properties": {
            **variables,
            "command": _var("Command", ["string", "null"], None, "Leave empty: the worker fills it in."),
            "labels": {"title": "Labels", "type": "object", "default": {"app": "costgap", "target": t.id},
                       "additionalProperties": {"type": "string"}},
            "cluster_config": {"title": "Cluster config", "allOf": [{"$ref": "#/definitions/KubernetesClusterConfig"}],
                               "description": "Leave empty to use the in-cluster config."},
        }, "definitions": {"KubernetesClusterConfig": {"title": "KubernetesClusterConfig", "type": "object",
                                                        "properties": {"config": {"type": "object"},
                                                                       "context_name": {"type": "string"}},
                                                        "block_type_slug": "kubernetes-cluster-config"}}},
    }


def process(t: Target) -> dict:
    """A process base job template: runs from the checkout, results to the shared store."""
    return {
        "job_configuration": {"command": "{{ command }}", "env": "{{ env }}", "labels": "{{ labels }}",
                              "name": "{{ name }}", "stream_output": "{{ stream_output }}",
                              "working_dir": "{{ working_dir }}"},
        "variables": {"type": "object", "properties": {
            "name": _var("Name", ["string", "null"], None, "Name of the flow-run process."),
            "env": {"title": "Environment", "type": "object",
                    "default": {"COSTGAP_RESULTS": RESULTS, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
                    "additionalProperties": {"type": ["string", "null"]},
                    "description": "CUDA_DEVICE_ORDER=PCI_BUS_ID makes GPU indices match nvidia-smi."},
            "labels": {"title": "Labels", "type": "object", "default": {"target": t.id},
                       "additionalProperties": {"type": "string"}},
            "command": _var("Command", ["string", "null"], None, "Leave empty: the worker fills it in."),
            "stream_output": _var("Stream output", "boolean", True, "Stream flow-run output to the worker log."),
            "working_dir": _var("Working directory", ["string", "null"], "/opt/costgap",
                                "The checkout (deploy/costgap-worker@.service uses the same path)."),
        }},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m deploy.pools", description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["kubernetes", "process"])
    ap.add_argument("target", help="target id from the targets file")
    ap.add_argument("--targets-file", default=DEFAULT_TARGETS)
    a = ap.parse_args(argv)
    by_id = {t.id: t for t in load_targets(a.targets_file)}
    if a.target not in by_id:
        print(f"{a.targets_file}: no target {a.target!r} (known: {', '.join(sorted(by_id))})", file=sys.stderr)
        return 2
    try:
        template = (kubernetes if a.kind == "kubernetes" else process)(by_id[a.target])
    except ValueError as e:
        print(f"{a.targets_file}: {e}", file=sys.stderr)
        return 2
    json.dump(template, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
