"""The targets file: one entry per instance type, and how costgap reaches it.

    python -c "from tasks.dispatch.targets import load_targets; print(load_targets('deploy/targets.toml'))"

deploy/targets.toml (or COSTGAP_TARGETS) holds `[[target]]` tables. Each names a provider, region,
instance type, GPU model and count, billing mode, the Prefect work pool whose worker runs on that
instance type, and a dispatch mode:
- `local`: the probe runs on this machine in a child process (still a Prefect flow run);
- `pool`: `run_deployment("probe/<id>")` on the target's work pool;
- `import`: bundles that an air-gapped host drops into `inbox`;
- `kubernetes`: `run_deployment("probe/<id>")` on a Kubernetes work pool of one instance type (deploy/pools.py
  renders it from the fields below): the cluster's autoscaler brings a node of that type up for the probe's
  Job and removes it afterwards, so no GPU is kept between runs (docs/deploy.md).
A bad file fails with TargetsError naming the file, the target and the field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tasks.errors import UserError
from tasks.fabric import check_fabric, parse_network

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"  # same rule as a bundle's target (tasks.bundle)
Dispatch = Literal["local", "pool", "import", "kubernetes"]
Cluster = Literal["eks", "gke", "ack", "tke"]  # managed Kubernetes: AWS, Google Cloud, Alibaba Cloud, Tencent Cloud
NODE_UP_S = 1200.0  # kubernetes: a GPU node's scale-up, driver start and the probe image's pull before the probe
# starts (GPU node pools from zero take minutes on every cloud, a ~8 GB CUDA image a few more); added to
# timeout_s for the Job's activeDeadlineSeconds and for the compare flow's wait, so both give up together
Billing = Literal["on_demand", "monthly", "yearly", "spot"]


class TargetsError(UserError):
    """A targets file that cannot be used: names the file, the target and the field."""


class Target(BaseModel):
    """One instance type. Every field but `id` has a default so a local entry stays one line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN)  # the name bundles, prices and deployments use
    provider: str = "local"  # joins the price book (prices.provider)
    region: str = "local"  # prices differ per region
    instance_type: str = "local"  # joins the price book (prices.instance_type)
    gpu_model: str | None = None  # as sold, e.g. "A10"; None on a CPU-only target
    gpu_count: int = Field(default=0, ge=0)  # GPUs per instance; 0 = CPU only
    billing_mode: Billing = "on_demand"  # which price row applies (DESIGN.md, cost model)
    dispatch: Dispatch = "local"  # how the compare flow reaches it (module docstring)
    work_pool: str | None = None  # Prefect work pool of this instance type; required for pool
    timeout_s: float = Field(default=3600.0, gt=0)  # a probe run that takes longer is given up
    inbox: str | None = None  # dir or fsspec URL air-gapped hosts drop bundles into; import only
    skip: tuple[str, ...] = ()  # probe parts not to run here (e.g. "finetune" on a tiny GPU)
    notes: str = ""  # free text shown in the report (datasheet facts, why it is listed)
    # kubernetes (deploy/pools.py renders the work pool's Job from these; the first three are kubernetes only):
    cluster: Cluster | None = None  # the managed cluster's cloud: its GPU label and taint conventions
    node_pool: str | None = None  # node group / node pool (name on EKS and GKE, id on ACK and TKE) whose
    # autoscaler brings the node up; None: any node of the instance type
    accelerator: str | None = None  # the cloud's GPU label value (GKE gke-accelerator, ACK nvidia_name)
    image: str | None = None  # the probe image (deploy/image/Dockerfile), by tag or digest, in the cloud's registry
    vcpus: int | None = Field(default=None, gt=0)  # the instance's vCPUs: the pod requests what fits beside
    # the node's reservations (deploy/pools.py requests_that_fit)
    memory_gib: float | None = Field(default=None, gt=0)  # the instance's memory, GiB, as the provider sells it
    # the interconnect (tasks/fabric.py's vocabulary), when the published facts (tasks/estimate/data/
    # instance_fabrics.csv, by provider and instance type) do not say it or say it wrong; None: from there
    fabric: str | None = None  # nvswitch | nvlink | pcie | pcie-host: how the instance's GPUs talk
    network: str | None = None  # "kind:gbps" (rdma, efa, tcp; the node's NICs together) between instances

    @field_validator("fabric")
    @classmethod
    def _fabric(cls, v: str | None) -> str | None:
        return check_fabric(v)

    @field_validator("network")
    @classmethod
    def _network(cls, v: str | None) -> str | None:
        net = parse_network(v)
        return str(net) if net else None

    @model_validator(mode="after")
    def _mode_fields(self) -> "Target":
        if self.dispatch == "pool" and not self.work_pool:
            raise ValueError("work_pool: required when dispatch = 'pool'")
        if self.dispatch == "import" and not self.inbox:
            raise ValueError("inbox: required when dispatch = 'import'")
        if self.gpu_count == 0 and self.gpu_model:
            raise ValueError("gpu_count: 0 but gpu_model is set; give the GPUs per instance")
        if self.dispatch == "kubernetes":
            for name in ("work_pool", "cluster", "image", "vcpus", "memory_gib"):
                if getattr(self, name) in (None, ""):
                    raise ValueError(f"{name}: required when dispatch = 'kubernetes'")
            if self.gpu_count < 1:
                raise ValueError("gpu_count: a kubernetes target asks for every GPU of its instance; give at least 1")
            if self.cluster in ("gke", "ack") and not self.accelerator:
                raise ValueError(f"accelerator: required on {self.cluster} (the GPU label value its GPU nodes carry)")
        else:
            for name in ("cluster", "node_pool", "accelerator"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only for dispatch = 'kubernetes' (this target is {self.dispatch!r})")
        return self

    @property
    def wait_s(self) -> float:
        """How long the compare flow waits for this target's probe run: its timeout, plus the node's
        scale-up and image pull on Kubernetes (the Job's activeDeadlineSeconds is the same figure)."""
        return self.timeout_s + (NODE_UP_S if self.dispatch == "kubernetes" else 0.0)

    @property
    def deployment(self) -> str:
        """The Prefect deployment that probes this target: flow 'probe', deployment '<id>'."""
        return f"probe/{self.id}"


def _describe(err: dict) -> tuple[str, str]:
    loc = [str(p) for p in err["loc"]]
    msg = err["msg"].removeprefix("Value error, ")
    if ": " in msg and not loc:  # our own validator: "field: reason"
        field, msg = msg.split(": ", 1)
        return field, msg
    return ".".join(loc) or "<target>", msg


def parse_targets(doc: dict, file: str) -> list[Target]:
    """Validate a parsed targets document. Raises TargetsError(file, target, field)."""
    unknown = sorted(set(doc) - {"target"})
    if unknown:
        raise TargetsError(f"{file}: unknown top-level key '{unknown[0]}': expected only [[target]] tables")
    entries = doc.get("target")
    if not isinstance(entries, list) or not entries:
        raise TargetsError(f"{file}: no [[target]] tables: expected at least one target")
    targets: list[Target] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        name = entry.get("id") if isinstance(entry.get("id"), str) else f"#{i + 1}"
        try:
            target = Target.model_validate(entry)
        except ValidationError as e:
            err = e.errors()[0]
            field, msg = _describe(err)
            value = entry.get(field.split(".")[0], "<missing>")
            raise TargetsError(f"{file}: target '{name}': field '{field}' = {value!r}: {msg}") from None
        if target.id in seen:
            raise TargetsError(f"{file}: target '{name}': field 'id' = {target.id!r}: duplicate id")
        seen.add(target.id)
        targets.append(target)
    return targets


def load_targets(path: str | Path) -> list[Target]:
    """Read and validate a targets file (TOML)."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TargetsError(f"{p}: cannot be read ({e.strerror}): set --targets-file or COSTGAP_TARGETS") from None
    try:
        doc = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        raise TargetsError(f"{p}: not valid TOML ({e})") from None
    return parse_targets(doc, str(p))


LOCAL = Target(id="local", timeout_s=900.0)  # the embedded default: this machine, no targets file needed


def load_targets_or_local(path: str | Path, *, explicit: bool) -> list[Target]:
    """The targets file; when the *default* file is absent (run outside a checkout), just `local`.
    A file the user named (flag or COSTGAP_TARGETS) must exist."""
    if not explicit and not Path(path).exists():
        return [LOCAL]
    return load_targets(path)


def select(targets: list[Target], ids: list[str] | None, file: str = "targets file") -> list[Target]:
    """The targets named by `ids` (all when None/empty), in the order given; unknown ids fail."""
    if not ids:
        return list(targets)
    by_id = {t.id: t for t in targets}
    missing = [i for i in ids if i not in by_id]
    if missing:
        known = ", ".join(sorted(by_id))
        raise TargetsError(f"{file}: no target '{missing[0]}' (known: {known})")
    return [by_id[i] for i in dict.fromkeys(ids)]


def sync_targets(con, targets: list[Target]) -> int:
    """Write the file's facts for `targets` into the warehouse targets table; returns rows written."""
    from warehouse.sql import load_query

    sql = load_query("targets_sync")
    for t in targets:
        con.execute(sql, [t.id, t.provider, t.region, t.instance_type, t.gpu_model, t.gpu_count,
                          t.billing_mode, t.work_pool, t.dispatch])
    return len(targets)
