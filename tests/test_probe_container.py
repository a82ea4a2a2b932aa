"""Container image detection (tasks/probe/host/container.py), table-driven: env vars, files, cgroups."""

import pytest

from tasks.probe.host.container import detect, from_cgroup, from_containerenv

CID = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"


def _files(files: dict[str, str]):
    return (lambda p: files.get(p)), (lambda p: p in files)


@pytest.mark.parametrize("env, files, image, runtime, source", [
    ({}, {}, None, None, None),  # a bare host or VM: NULL, not a guess
    ({"COSTGAP_IMAGE": "ghcr.io/acme/probe:1.2"}, {"/.dockerenv": ""}, "ghcr.io/acme/probe:1.2",
     "docker", "env COSTGAP_IMAGE"),
    ({"IMAGE_TAG": "probe:7"}, {}, "probe:7", None, "env IMAGE_TAG"),
    ({}, {"/run/.containerenv": 'engine="podman-4.9"\nname="x"\nimage="quay.io/a/b:3"\nid="1"\n'},
     "quay.io/a/b:3", "podman", "/run/.containerenv"),
    ({"NVIDIA_PYTORCH_VERSION": "24.05"}, {"/.dockerenv": ""}, "NGC PyTorch 24.05", "docker",
     "env NVIDIA_PYTORCH_VERSION"),
    ({}, {"/.dockerenv": ""}, "docker (image not exposed)", "docker", "runtime only"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, {}, "kubernetes (image not exposed)", "kubernetes",
     "runtime only"),
    ({}, {"/proc/self/cgroup": f"0::/system.slice/docker-{CID}.scope\n"},
     "docker (image not exposed)", "docker", "runtime only"),
    ({}, {"/proc/self/cgroup": "0::/\n"}, None, None, None),  # cgroup namespace: nothing visible
])
def test_detect_prefers_the_most_exact_source(env, files, image, runtime, source):
    read, exists = _files(files)
    got = detect(env, read=read, exists=exists)
    assert (got["container_image"], got["container_runtime"], got["container_image_source"]) == (
        image, runtime, source)


@pytest.mark.parametrize("text, want", [
    (f"12:memory:/docker/{CID}\n", ("docker", CID[:12])),
    (f"0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-{CID}.scope", ("containerd", CID[:12])),
    (f"0::/kubepods/besteffort/crio-{CID}.scope", ("cri-o", CID[:12])),
    (f"0::/machine.slice/libpod-{CID}.scope", ("podman", CID[:12])),
    ("1:name=systemd:/kubepods/burstable/pod1234", ("kubernetes", None)),
    ("4:memory:/process_api/ad0679d6954d619122555a570ea9c2bc\n0::/", (None, None)),
    (None, (None, None)),
])
def test_cgroup_names_the_runtime_and_a_short_id(text, want):
    assert from_cgroup(text) == want


def test_containerenv_without_an_image_line_is_none():
    assert from_containerenv('engine="podman"\n') is None and from_containerenv(None) is None
