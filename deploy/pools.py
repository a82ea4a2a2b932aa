"""Work-pool base job templates: process (default) and Kubernetes with a GPU nodeSelector and limits.

    python -m deploy.pools kubernetes aws-g5-xlarge > /tmp/aws-g5.json
    prefect work-pool create aws-g5 --type kubernetes --base-job-template /tmp/aws-g5.json
    python -m deploy.pools process local > /tmp/control.json

Prefect's default Kubernetes template has neither a nodeSelector nor `nvidia.com/gpu` limits, so
a probe pod could land on any node and see no GPU. Here each pool is one instance type: the pod
is pinned with `node.kubernetes.io/instance-type` (the well-known label every managed cluster sets,
kubernetes.io/docs/reference/labels-annotations-taints, read 2026-12-02), tolerates the usual
`nvidia.com/gpu` taint, and asks for all of the instance's GPUs (one pod per instance, as the
probe measures the whole instance). The shipped files in deploy/work-pools/ are this output.
"""

from __future__ import annotations

import argparse
import json
import sys

from flows.settings import DEFAULT_TARGETS
from tasks.dispatch.targets import Target, load_targets

IMAGE = "ghcr.io/your-org/costgap:latest"  # build from this repo with the probe extra; pin a digest
RESULTS = "s3://your-bucket/costgap/results"  # the shared results store the compare flow reads


def _var(title: str, kind: str | list, default, description: str) -> dict:
    return {"title": title, "type": kind, "default": default, "description": description}


def kubernetes(t: Target) -> dict:
    """A Kubernetes base job template for target t's pool (its instance type, its GPU count)."""
    gpus = max(t.gpu_count, 0)
    variables = {
        "name": _var("Name", "string", "costgap-probe", "Prefix of the Job's name."),
        "namespace": _var("Namespace", "string", "costgap", "Namespace the probe Jobs run in."),
        "image": _var("Image", "string", IMAGE, "Image with costgap and its probe extra installed."),
        "image_pull_policy": _var("Image pull policy", "string", "IfNotPresent", "Kubernetes imagePullPolicy."),
        "service_account_name": _var("Service account", "string", "costgap", "Needs write access to the results store."),
        "node_selector": {"title": "Node selector", "type": "object",
                          "default": {"node.kubernetes.io/instance-type": t.instance_type},
                          "description": "Pins the probe to this pool's instance type."},
        "gpu_count": _var("GPUs", "integer", gpus, "nvidia.com/gpu limit: every GPU of the instance."),
        "cpu_request": _var("CPU request", "string", "2", "Guaranteed CPU for the data loader benchmarks."),
        "memory_request": _var("Memory request", "string", "16Gi", "Host memory for the fine-tune's data."),
        "env": {"title": "Environment", "type": "object", "default": {"COSTGAP_RESULTS": RESULTS},
                "additionalProperties": {"type": "string"}, "description": "Extra environment variables."},
        "finished_job_ttl": _var("Finished job TTL", "integer", 3600, "Seconds a finished Job is kept."),
        "job_watch_timeout_seconds": _var("Job watch timeout", ["integer", "null"], None, "Give up watching after this."),
        "pod_watch_timeout_seconds": _var("Pod watch timeout", "integer", 900, "Image pulls on GPU nodes are slow."),
        "stream_output": _var("Stream output", "boolean", True, "Stream the pod's logs to the worker."),
    }
    limits = {"nvidia.com/gpu": "{{ gpu_count }}"} if gpus else {}
    manifest = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"generateName": "{{ name }}-", "labels": "{{ labels }}", "namespace": "{{ namespace }}"},
        "spec": {
            "backoffLimit": 0,  # Prefect retries, not Kubernetes: every try stays visible in run history
            "ttlSecondsAfterFinished": "{{ finished_job_ttl }}",
            "template": {"spec": {
                "restartPolicy": "Never",
                "serviceAccountName": "{{ service_account_name }}",
                "nodeSelector": "{{ node_selector }}",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{
                    "name": "prefect-job", "image": "{{ image }}", "imagePullPolicy": "{{ image_pull_policy }}",
                    "args": "{{ command }}", "env": "{{ env }}",
                    "resources": {"limits": limits,
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
    json.dump((kubernetes if a.kind == "kubernetes" else process)(by_id[a.target]), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
