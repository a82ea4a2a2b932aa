"""Which container image (or at least which container runtime) the probe runs in. Pure but for reads.

    python -c "from tasks.probe.host.container import detect; print(detect())"

The bundle's `environment.container_image` was always null. A container can tell, from inside,
only what its runtime chose to expose, so the sources are tried from the most to the least exact:
  1. an image reference set on purpose in the environment: COSTGAP_IMAGE (deploy/ job templates),
     CONTAINER_IMAGE, IMAGE_TAG, DOCKER_IMAGE (OCI and Kubernetes define no such variable: a pod
     template or `docker run -e` has to set one);
  2. podman's /run/.containerenv, which carries `image="..."` (containers/podman docs,
     podman-run(1), "/run/.containerenv", read 2026-12-04);
  3. an NVIDIA NGC framework image, which sets NVIDIA_PYTORCH_VERSION (e.g. "24.05") in its
     environment (NGC PyTorch release notes, read 2026-12-04) -> "NGC PyTorch 24.05";
  4. the runtime alone: /.dockerenv (Docker creates it in every container), a Kubernetes pod
     (KUBERNETES_SERVICE_HOST), or a cgroup path naming docker/containerd/cri-o/libpod. The image
     is then not visible from inside, and container_image says so in a string that stays the same
     from run to run ("docker (image not exposed)"), so the environment history does not see a
     change where there is none. The container id goes to environment.extra, not into the image.
Nothing found: None (a bare host or VM), never a guess.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Mapping

IMAGE_ENV_VARS = ("COSTGAP_IMAGE", "CONTAINER_IMAGE", "IMAGE_TAG", "DOCKER_IMAGE")  # an image
# reference set on purpose (deploy/ job templates set COSTGAP_IMAGE), recorded verbatim
NGC_ENV = "NVIDIA_PYTORCH_VERSION"  # set by NVIDIA's NGC PyTorch images to their release, e.g. 24.05
CGROUP_RUNTIMES = (  # (pattern in a cgroup/mount path, runtime name); the first group is the id
    (re.compile(r"docker[-/]([0-9a-f]{12,64})"), "docker"),
    (re.compile(r"cri-containerd-([0-9a-f]{12,64})"), "containerd"),
    (re.compile(r"crio-([0-9a-f]{12,64})"), "cri-o"),
    (re.compile(r"libpod-([0-9a-f]{12,64})"), "podman"),
    (re.compile(r"/docker/containers/([0-9a-f]{12,64})/"), "docker"),
    (re.compile(r"kubepods"), "kubernetes"),
)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def from_containerenv(text: str | None) -> str | None:
    """podman's /run/.containerenv: the `image="..."` line's value, if any."""
    m = re.search(r'^image="([^"]+)"', text or "", re.MULTILINE)
    return m.group(1) if m else None


def from_cgroup(text: str | None) -> tuple[str | None, str | None]:
    """(runtime, container id) from /proc/self/cgroup or mountinfo text; (None, None) when silent."""
    for pattern, runtime in CGROUP_RUNTIMES:
        m = pattern.search(text or "")
        if m:
            return runtime, (m.group(1)[:12] if m.groups() else None)
    return None, None


def detect(environ: Mapping[str, str] | None = None,
           read: Callable[[str], str | None] = _read,
           exists: Callable[[str], bool] = os.path.exists) -> dict[str, str | None]:
    """{"container_image", "container_runtime", "container_id", "container_image_source"}."""
    env = os.environ if environ is None else environ
    out: dict[str, str | None] = {"container_image": None, "container_runtime": None,
                                  "container_id": None, "container_image_source": None}
    cg_runtime, cg_id = from_cgroup((read("/proc/self/cgroup") or "") + (read("/proc/self/mountinfo") or ""))
    out["container_id"] = cg_id
    if exists("/.dockerenv"):
        out["container_runtime"] = "docker"
    elif env.get("KUBERNETES_SERVICE_HOST"):
        out["container_runtime"] = "kubernetes"
    elif exists("/run/.containerenv"):
        out["container_runtime"] = "podman"
    else:
        out["container_runtime"] = cg_runtime
    for var in IMAGE_ENV_VARS:
        if env.get(var):
            out.update(container_image=env[var], container_image_source=f"env {var}")
            return out
    podman = from_containerenv(read("/run/.containerenv"))
    if podman:
        out.update(container_image=podman, container_image_source="/run/.containerenv")
        return out
    if env.get(NGC_ENV):
        out.update(container_image=f"NGC PyTorch {env[NGC_ENV]}", container_image_source=f"env {NGC_ENV}")
        return out
    if out["container_runtime"]:
        out.update(container_image=f"{out['container_runtime']} (image not exposed)",
                   container_image_source="runtime only")
    return out
