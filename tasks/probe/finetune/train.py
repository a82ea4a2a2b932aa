"""The fine-tune's training loop: precision choice, optimizer, one step, warm-up and the timed phase.

    .venv/bin/pytest -q tests/test_finetune.py -k tiny

Signatures other probes use (the distributed fine-tune):
    choose_precision(device_type: str, capability: tuple[int, int] | None) -> (precision, note)
    make_optimizer(model, lr: float, device_type: str) -> torch.optim.AdamW   (fused on CUDA)
    make_step(model, optimizer, *, precision: str, device: str, scaler=None, mlm=None) -> step(batch) -> loss
        (mlm=(mask_id, n_tokens): masked-LM steps for encoders, encoder.mlm_batch; None: causal LM)
    train_steps(model, batches, steps, *, optimizer, precision="fp32", device="cpu", scaler=None)
        -> {"step_time_s": [...], "losses": [...]}    # plain loop, every step timed, no warm-up logic
    timed_phase(step, next_batch, *, tokens_per_step, device, rule=None, fixed_steps=None, deadline=inf)
        -> {"step_time_s", "losses", "window_tokens_per_s", "window_steps", "steady"}
GPU steps are timed with CUDA events (synchronised once per window, not per step); CPU steps with
the host clock (CPU work is synchronous).
"""

from __future__ import annotations

import contextlib
import math
import time

import torch

from tasks.probe.finetune.steady import SteadyRule, should_stop


class ProbeTimeout(Exception):
    """The fine-tune ran past its time budget."""


class NonFiniteLoss(Exception):
    """The loss became NaN or Inf: the run has failed."""


def choose_precision(device_type: str, capability: tuple[int, int] | None) -> tuple[str, str]:
    """bf16 on CUDA compute capability >= 8.0 (Ampere+); fp16 with GradScaler before (e.g. V100,
    cc 7.0, which has no bf16 tensor cores); fp32 on CPU. Returns (precision, note for the bundle)."""
    if device_type != "cuda":
        return "fp32", "fp32 on CPU"
    if capability is not None and capability >= (8, 0):
        return "bf16", f"bf16 (cc {capability[0]}.{capability[1]})"
    cc = f"{capability[0]}.{capability[1]}" if capability else "unknown"
    return "fp16", f"fp16 + GradScaler (pre-bf16 GPU, cc {cc})"


def make_optimizer(model, lr: float, device_type: str) -> torch.optim.AdamW:
    params = [p for p in model.parameters() if p.requires_grad]
    kw = {"fused": True} if device_type == "cuda" else {"foreach": True}
    return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0, **kw)


def make_scaler(precision: str, device_type: str):
    return torch.amp.GradScaler(device_type) if precision == "fp16" else None


def make_step(model, optimizer, *, precision: str, device: str, scaler=None,
              mlm: tuple[int, int] | None = None, seed: int = 0):
    """One optimizer step on a [micro_batch, seq_len] batch of token ids: labels = inputs (causal
    LM), or with mlm=(mask_id, n_tokens) BERT's masking drawn on the device (masked LM)."""
    dev = torch.device(device)
    # fp16 keeps fp32 trainable weights and autocasts the matmuls; bf16 weights are already bf16.
    amp = (torch.autocast(dev.type, dtype=torch.float16) if precision == "fp16" else None)
    if mlm is not None:
        from tasks.probe.finetune.encoder import mlm_batch

        gen = torch.Generator(device=dev).manual_seed(seed)

    def step(batch: torch.Tensor) -> torch.Tensor:
        ids = batch.to(dev, non_blocking=True)
        labels = ids
        if mlm is not None:
            ids, labels = mlm_batch(ids, mask_id=mlm[0], n_tokens=mlm[1], generator=gen)
        with amp if amp is not None else contextlib.nullcontext():
            loss = model(input_ids=ids, labels=labels).loss
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


class _Timer:
    """CUDA events on a GPU, the host clock elsewhere."""

    def __init__(self, device: str):
        self.cuda = torch.device(device).type == "cuda"

    def start(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return [ev, None]
        return [time.perf_counter(), None]

    def stop(self, mark) -> None:
        if self.cuda:
            mark[1] = torch.cuda.Event(enable_timing=True)
            mark[1].record()
        else:
            mark[1] = time.perf_counter()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def seconds(self, mark) -> float:
        return mark[0].elapsed_time(mark[1]) / 1e3 if self.cuda else mark[1] - mark[0]


def _check_finite(losses: list[torch.Tensor]) -> None:
    if losses and not bool(torch.isfinite(torch.stack(losses).float()).all()):
        raise NonFiniteLoss("loss became NaN/Inf")


def timed_phase(step, next_batch, *, tokens_per_step: int, device: str, rule: SteadyRule | None = None,
                fixed_steps: int | None = None, deadline: float = math.inf) -> dict:
    """Run timed steps until the steady rule stops them (or exactly `fixed_steps` when given)."""
    if (rule is None) == (fixed_steps is None):
        raise ValueError("timed_phase: give exactly one of rule or fixed_steps")
    timer = _Timer(device)
    step_times: list[float] = []
    losses: list[torch.Tensor] = []
    windows: list[float] = []
    window_steps: list[int] = []
    pending: list = []
    steady, elapsed = None, 0.0
    win_t0 = time.perf_counter()
    while True:
        if time.perf_counter() > deadline:
            raise ProbeTimeout(f"timed phase passed its budget after {len(step_times) + len(pending)} steps")
        batch = next_batch()
        mark = timer.start()
        losses.append(step(batch))
        timer.stop(mark)
        pending.append(mark)
        done = len(step_times) + len(pending)
        if fixed_steps is not None:
            if done < fixed_steps:
                continue
        elif time.perf_counter() - win_t0 < rule.window_s:
            continue
        timer.sync()
        times = [timer.seconds(m) for m in pending]
        pending = []
        step_times += times
        _check_finite(losses[-len(times):])
        if fixed_steps is not None:
            break
        windows.append(len(times) * tokens_per_step / sum(times))
        window_steps.append(len(times))
        elapsed += sum(times)
        stop, steady = should_stop(windows, elapsed, rule)
        if stop:
            break
        win_t0 = time.perf_counter()
    return {"step_time_s": step_times, "losses": torch.stack(losses).float().tolist(),
            "window_tokens_per_s": windows, "window_steps": window_steps, "steady": steady}


def train_steps(model, batches, steps: int, *, optimizer, precision: str = "fp32", device: str = "cpu",
                scaler=None) -> dict:
    """Plain loop for other probes: `steps` steps over the iterable `batches`, each one timed."""
    step = make_step(model, optimizer, precision=precision, device=device, scaler=scaler)
    it = iter(batches)
    out = timed_phase(step, lambda: next(it), tokens_per_step=1, device=device, fixed_steps=steps)
    return {"step_time_s": out["step_time_s"], "losses": out["losses"]}
