"""Past one card: data-parallel scaling efficiency predicted from the interconnect (issue 42).

    costgap scaling                                    # the seed's pair, and 4 nodes over RDMA against TCP
    .venv/bin/python -m tests.bench scaling            # scored on held-out public measurements

The two entry points, both pure (no warehouse, no torch):
- predict_busbw(gpu, count, fabric, nodes=1, network=None) -> Busbw(gbps, lo, hi, reason)
  (tasks/estimate/collective.py: the collective model and its fit);
- predict_scaling(gpu, count, fabric, *, params, trainable_params, tokens_per_gpu_step, tokens_per_s_1,
  strategy="ddp", nodes=1, network=None) -> Scaling(efficiency, lo, hi, comm_s, compute_s, busbw_gbps, reason).

Step model. compute_s = tokens_per_gpu_step / tokens_per_s_1 (one GPU alone; gradient accumulation
included). DDP (and ZeRO-1/2, which move the same bytes) all-reduces the trainable gradients in 25 MiB
buckets during the backward of the last micro-step; FSDP/ZeRO-3 (where the model does not fit one card)
all-gathers the parameters in the forward and again in the backward and reduce-scatters the gradients,
every micro-step; LoRA and QLoRA move only their adapters' gradients (trainable_params is the adapters).
How much of it hides behind compute is not known for an unmeasured type, so the interval runs from no
overlap (at the low end of busbw's interval) to full overlap with the backward (at its high end; the last
bucket can never hide); the point uses the overlap fitted on the public scaling rows (data/collective_fit.json).
efficiency = compute_s / (compute_s + exposed communication).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tasks.estimate.collective import (BUSBW_AT_BYTES, Busbw, allreduce_seconds, gbps_text, load_fit,  # noqa: F401
                                       machine, predict_busbw)

BUCKET_BYTES = 25 * 2**20  # torch DDP's default bucket_cap_mb = 25 (torch.nn.parallel.DistributedDataParallel docs)
FSDP_UNITS = 32  # FSDP wraps one transformer block per unit: Llama 2/3 7B-8B have 32 (13B 40, 70B 80; their
#                 config.json num_hidden_layers), so a parameter all-gather moves ~1/32 of the model per message
STRATEGIES = {"ddp": "ddp", "zero1": "ddp", "zero2": "ddp", "fsdp": "fsdp", "fsdp2": "fsdp", "zero3": "fsdp"}
# share of a step's FLOPs in the backward: full 4N of 6N; an adapter fine-tune's input gradients 2N of 4N
BACKWARD_SHARE = {"full": 2 / 3, "adapter": 1 / 2}
ADAPTER_BELOW = 0.5  # a run training less than half its parameters is an adapter (LoRA/QLoRA) fine-tune


@dataclass
class Scaling:
    """Efficiency = tokens/s on n GPUs / (n x tokens/s on one), its interval, and the step it comes from."""

    efficiency: float | None = None
    lo: float | None = None
    hi: float | None = None
    comm_s: float | None = None  # communication per step, all of it (before overlap)
    exposed_s: float | None = None  # of it, not hidden behind compute at the fitted overlap
    wait_s: float | None = None  # waiting for the slowest GPU of the step (straggler), at the fitted jitter
    compute_s: float | None = None
    busbw_gbps: float | None = None  # at the step's message size (a DDP bucket, an FSDP layer group)
    fabric: str | None = None
    nvls: bool = False
    strategy: str | None = None
    reason: str = ""

    @property
    def comm_share(self) -> float | None:
        """Exposed communication's share of the step at the point estimate."""
        if self.exposed_s is None or self.compute_s is None:
            return None
        return self.exposed_s / (self.exposed_s + self.compute_s + (self.wait_s or 0.0))

    @property
    def label(self) -> str:
        """'predicted from nvswitch, busbw 230 GB/s': what every surface prints beside a predicted figure."""
        if self.efficiency is None:
            return "no estimate"
        if self.strategy == "measured":
            return "measured on this type"
        if self.busbw_gbps is None:
            return "one GPU"
        sharp = " with NVLink SHARP" if self.nvls else ""
        return f"predicted from {self.fabric}{sharp}, busbw {gbps_text(self.busbw_gbps)} GB/s"


@lru_cache(maxsize=256)
def expected_max(n: int) -> float:
    """E[max of n independent standard normals] (0 for n = 1; 0.564 for 2, 1.029 for 4, 1.424 for 8): how far
    the slowest of n GPUs runs behind the mean, in standard deviations of a step's time."""
    if n <= 1:
        return 0.0
    lo, hi, k = -9.0, 9.0, 3600
    h, total = (hi - lo) / k, 0.0
    for i in range(k + 1):
        x = lo + i * h
        pdf = math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
        total += (0.5 if i in (0, k) else 1.0) * x * n * pdf * cdf ** (n - 1)
    return total * h


def straggle_seconds(compute_s: float, n: int, jitter: float) -> float:
    """A synchronous step waits for its slowest GPU: with step-time jitter growing as the square root of the
    work (independent noise per micro-batch), the wait is jitter x sqrt(compute_s) x expected_max(n)."""
    return jitter * math.sqrt(compute_s) * expected_max(n)


def _exposed(comm: float, window: float, floor: float, phi: float) -> float:
    """Communication left on the step at overlap phi: all of it at 0, what `window` cannot hide at 1 (never
    below `floor`, the part that waits for the backward to finish)."""
    full = max(comm - window, min(floor, comm))
    return (1 - phi) * comm + phi * full


def _gb(x: float) -> str:
    return f"{x / 1e9:,.2f} GB" if x >= 1e8 else f"{x / 1e6:,.1f} MB"


def predict_scaling(gpu: str, count: int, fabric: str, *, params: float, trainable_params: float,
                    tokens_per_gpu_step: float, tokens_per_s_1: float, strategy: str = "ddp", nodes: int = 1,
                    network: str | None = None, grad_bytes_per_param: float = 2.0, param_bytes: float = 2.0,
                    micro_steps: int = 1, nvls: bool | None = None, fit: dict | None = None) -> Scaling:
    """Scaling efficiency of data-parallel training on `count` GPUs per node x `nodes`, its interval and its
    reason in one line. grad_bytes_per_param: 2 for bf16/fp16 gradients, 4 for fp32 (LoRA adapters);
    param_bytes: what FSDP gathers per parameter; micro_steps: gradient accumulation steps in a step."""
    fit = fit or load_fit()
    kind = STRATEGIES.get(strategy)
    out = Scaling(fabric=fabric, strategy=strategy)
    n = count * nodes
    if kind is None:
        out.reason = f"strategy {strategy!r} unknown: expected one of {', '.join(STRATEGIES)}"
        return out
    if min(params, trainable_params, tokens_per_gpu_step, tokens_per_s_1) <= 0 or micro_steps < 1 or count < 1:
        out.reason = "params, trainable_params, tokens_per_gpu_step and tokens_per_s_1 must be > 0: no estimate"
        return out
    compute = tokens_per_gpu_step / tokens_per_s_1
    if n == 1:
        out.efficiency = out.lo = out.hi = 1.0
        out.comm_s = out.exposed_s = out.wait_s = 0.0
        out.compute_s, out.reason = compute, "one GPU: no communication"
        return out
    if fit is None:
        out.reason = "no collective fit (python -m tasks.estimate.collective_fit): no estimate"
        return out
    m, why = machine(gpu, count, fabric, nodes, network, nvls, fit)
    if m is None:
        out.reason = why
        return out
    mode = "adapter" if trainable_params < ADAPTER_BELOW * params else "full"
    bwd = compute * BACKWARD_SHARE[mode] / micro_steps  # the backward a step's communication can hide behind
    fwd = compute * (1 - BACKWARD_SHARE[mode]) / micro_steps
    grads = trainable_params * grad_bytes_per_param
    st = fit.get("step") or {}
    phi, sigma = st.get("overlap"), st.get("jitter", 0.0)
    w = math.exp(m["halfwidth"])
    wait = lambda sg: straggle_seconds(compute, n, sg)  # noqa: E731

    def step(scale: float, overlap: float) -> tuple[float, float, float]:
        """(all communication, exposed at `overlap`, the message size it moves) at bandwidths x scale."""
        if kind == "ddp":
            k = max(1, math.ceil(grads / BUCKET_BYTES))
            size = grads / k
            one = allreduce_seconds(m, size, count, nodes, scale)
            return k * one, _exposed(k * one, bwd, one, overlap), size
        gathered = params * param_bytes
        # an all-gather or a reduce-scatter moves half an all-reduce's bytes at the same busbw, one unit at a time
        half = lambda s: FSDP_UNITS * allreduce_seconds(m, s / FSDP_UNITS, count, nodes, scale) / 2  # noqa: E731
        ag, rs = half(gathered), half(grads)
        comm = micro_steps * (2 * ag + rs)
        exposed = micro_steps * (_exposed(ag, fwd, 0.0, overlap) + _exposed(ag + rs, bwd, 0.0, overlap))
        return comm, exposed, gathered / FSDP_UNITS

    point_phi = phi if phi is not None else 0.5
    comm, exposed, size = step(1.0, point_phi)
    lo_exposed = step(1 / w, 0.0)[1] + wait(st.get("jitter_hi", sigma))
    hi_exposed = step(w, 1.0)[1] + wait(st.get("jitter_lo", sigma))
    eff = lambda e: compute / (compute + e)  # noqa: E731
    busbw = predict_busbw(gpu, count, fabric, nodes, network, size_bytes=size, nvls=m["nvls"], fit=fit)
    out.efficiency, out.lo, out.hi = eff(exposed + wait(sigma)), eff(lo_exposed), eff(hi_exposed)
    out.comm_s, out.exposed_s, out.compute_s, out.wait_s = comm, exposed, compute, wait(sigma)
    out.busbw_gbps, out.nvls = busbw.gbps, m["nvls"]
    what = (f"DDP all-reduces {_gb(grads)} of {'adapter ' if mode == 'adapter' else ''}gradients in "
            f"{max(1, math.ceil(grads / BUCKET_BYTES))} bucket(s)" if kind == "ddp" else
            f"FSDP all-gathers {_gb(params * param_bytes)} of parameters twice and reduce-scatters {_gb(grads)} of "
            f"gradients{f' x {micro_steps} micro-steps' if micro_steps > 1 else ''}")
    fitted = (f"overlap {phi:.2f} and step jitter {sigma:.3f} s^0.5 (slowest of {n} GPUs: "
              f"{wait(sigma) * 1e3:,.1f} ms per step) fitted on {len(st['rows'])} public scaling rows" if phi is not None
              else "overlap 0.5 ASSUMED and no straggler wait (no public scaling rows to fit them on)")
    out.reason = (f"{out.label} at {_gb(size)} messages ({busbw.reason}); {what}: {comm * 1e3:,.1f} ms per step "
                  f"against {compute * 1e3:,.1f} ms of compute ({tokens_per_gpu_step:,.0f} tokens per GPU at "
                  f"{tokens_per_s_1:,.0f} tokens/s on one GPU); {fitted}; interval from no overlap to full overlap "
                  f"with the backward, busbw and jitter at their 90% bounds")
    return out
