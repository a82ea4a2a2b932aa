"""One rank of a multi-GPU probe job; started by tasks.probe.distributed.multi_gpu, never by a person.

    python -m pytest -q tests/test_distributed.py   # drives it through run_multi_gpu (gloo, 2 ranks)

The launcher starts one of these per GPU with RANK, WORLD_SIZE, LOCAL_RANK, COSTGAP_STORE_ADDR/PORT
(a TCPStore the launcher hosts on 127.0.0.1) and COSTGAP_DIST_JOB (a JSON job spec). Each rank
writes <result_dir>/rank<R>.json exactly once (atomically): {"ok": true, "result": {...}} on rank 0,
{"ok": true} elsewhere, or {"ok": false, "error_kind", "message"}. Every rendezvous and collective
runs under the job's timeouts, so a dead peer becomes an error here, not a hang. Imports: stdlib +
torch (+ the fine-tune's transformers, lazily).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from tasks.probe.distributed.launch import INJECT_ENV, classify_text

# What the launcher handed this rank, read before main() re-asserts it (the sweep reports it).
NVLS_AT_START = os.environ.get("NCCL_NVLS_ENABLE")


def _inject(where: str, rank: int, micro_batch: int = 1) -> None:
    """Fault injection for tests: make one rank crash (os._exit), raise or hang at `where`.

    INJECT_ENV holds "RANK:MODE[:WHERE]", MODE crash | raise | hang | oom, WHERE init | allreduce |
    finetune. Without WHERE the fault fires in whichever job runs, after the process group is up.
    "oom" raises torch.OutOfMemoryError while the micro-batch is above 1.
    """
    spec = os.environ.get(INJECT_ENV, "")
    if not spec:
        return
    parts = spec.split(":")
    target = parts[2] if len(parts) > 2 else None  # None: whichever job runs, never at init
    if int(parts[0]) != rank or (target != where if target else where == "init"):
        return
    mode = parts[1]
    if mode == "crash":
        sys.stderr.write(f"rank {rank}: injected crash at {where}\n")
        sys.stderr.flush()
        os._exit(13)
    if mode == "raise":
        raise RuntimeError(f"rank {rank}: injected failure at {where}")
    if mode == "oom":
        if micro_batch > 1:
            raise torch.OutOfMemoryError(f"rank {rank}: injected out of memory at micro-batch {micro_batch}")
        return
    if mode == "hang":
        while True:  # killed by the launcher's deadline
            time.sleep(1)
    raise ValueError(f"{INJECT_ENV}={spec!r}: mode must be crash, raise, hang or oom")


def classify(exc: BaseException) -> str:
    """Bundle error_kind for an exception raised inside a rank."""
    if isinstance(exc, torch.OutOfMemoryError):
        return "oom"
    return classify_text(f"{type(exc).__name__}: {exc}")


def _write(result_dir: Path, rank: int, doc: dict[str, Any]) -> None:
    tmp = result_dir / f".rank{rank}.json.tmp"
    tmp.write_text(json.dumps(doc, allow_nan=False))
    os.replace(tmp, result_dir / f"rank{rank}.json")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _max_across_ranks(values: list[float], device: torch.device) -> list[float]:
    """Element-wise max over ranks: the slowest rank sets the pace of a collective or a step."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [float(v) for v in t.cpu()]


def allreduce_sweep(job: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """Time all_reduce(sum) per size: warm-up, then `repeats` batches of `iters` collectives.

    A batch is timed with CUDA events on GPU (host clock after a barrier on CPU); its time divided
    by `iters` is one sample, maxed over ranks (nccl-tests does the same), median over samples.
    """
    cfg = job["config"]
    dtype = getattr(torch, cfg["allreduce_dtype"])
    elem = torch.tensor([], dtype=dtype).element_size()
    rows = []
    for size_bytes in cfg["allreduce_sizes_bytes"]:
        # zeros: repeated sums of ones would overflow to inf within ~128 rounds (half: ~16)
        buf = torch.zeros(max(1, size_bytes // elem), dtype=dtype, device=device)
        for _ in range(cfg["allreduce_warmup"]):
            dist.all_reduce(buf)
        _sync(device)
        samples = []
        for _ in range(cfg["allreduce_repeats"]):
            dist.barrier()
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(cfg["allreduce_iters"]):
                    dist.all_reduce(buf)
                end.record()
                end.synchronize()
                seconds = start.elapsed_time(end) / 1e3
            else:
                t0 = time.perf_counter()
                for _ in range(cfg["allreduce_iters"]):
                    dist.all_reduce(buf)
                seconds = time.perf_counter() - t0
            samples.append(seconds / cfg["allreduce_iters"])
        rows.append({"bytes": buf.numel() * elem, "seconds": _max_across_ranks(samples, device)})
        del buf
    return {"sizes": rows, "dtype": cfg["allreduce_dtype"],
            "nccl_nvls_enable": NVLS_AT_START}


def _strategy(requested: str, preset, micro_batch: int, precision: str, device: torch.device) -> str:
    """"auto": FSDP2 when presets.estimate_bytes says weights + grads + AdamW states would not fit one GPU."""
    if dist.get_world_size() == 1:
        return "single"  # the n=1 baseline: the same loop with no gradient collectives
    if requested != "auto":
        return requested
    if device.type != "cuda":
        return "ddp"
    from tasks.probe.finetune.presets import estimate_bytes

    need = estimate_bytes(preset, micro_batch, precision=precision, checkpointing=False)
    return "fsdp2" if need > 0.9 * torch.cuda.get_device_properties(device).total_memory else "ddp"


def _wrap(model: torch.nn.Module, strategy: str, device: torch.device) -> torch.nn.Module:
    """DDP, or FSDP2 (fully_shard per decoder layer, then the root) when the model must be sharded."""
    if strategy == "single":
        return model
    if strategy == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        inner = model
        while not hasattr(inner, "layers") and hasattr(inner, "model"):
            inner = inner.model  # LlamaForCausalLM.model, or peft's base_model.model.model
        for layer in getattr(inner, "layers", []):
            fully_shard(layer)
        return fully_shard(model)
    from torch.nn.parallel import DistributedDataParallel as DDP

    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)


def finetune(job: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """Data-parallel steps of one preset with the fine-tune's model, optimizer, step; step time = max over ranks.

    Each rank trains on its own micro-batches of the packed Alpaca sample (as data parallelism does);
    the per-GPU micro-batch and sequence length are identical for n=1 and n, so the ratio is fair.
    """
    from tasks.probe.finetune import data, flops, presets, train

    cfg, rank, world = job["config"], dist.get_rank(), dist.get_world_size()
    p = presets.get_preset(job["preset"])
    cap = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    precision, _ = train.choose_precision(device.type, cap)
    seq_len = min(cfg["seq_len"] or p.seq_len, p.seq_len)
    micro_batch = job.get("micro_batch") or cfg["micro_batch"] or p.micro_batch_max
    strategy = _strategy(job["strategy"], p, micro_batch, precision, device)
    model, mcfg, meta = presets.build_preset(p.name, device, precision=precision, seed=0)
    model = _wrap(model, strategy, device)
    opt = train.make_optimizer(model, p.lr, device.type)
    scaler = train.make_scaler(precision, device.type)
    tok = data.ByteTokenizer()
    mlm = None
    if p.objective == "mlm":  # encoders train as masked LMs (encoder.mlm_batch, same recipe)
        from tasks.probe.finetune.encoder import mask_token_id

        mlm = (mask_token_id(tok, p.vocab), len(tok))
    step = train.make_step(model, opt, precision=precision, device=str(device), scaler=scaler,
                           mlm=mlm, seed=rank)
    blocks = data.pack(data.read_alpaca(data.SAMPLE_PATH), tok, seq_len, min_blocks=micro_batch * world)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of the batches

    def next_batch() -> torch.Tensor:
        return blocks[torch.randint(0, blocks.shape[0], (micro_batch,), generator=gen)]

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    first_loss = None
    for i in range(cfg["finetune_warmup_steps"]):
        loss = step(next_batch())
        first_loss = float(loss) if first_loss is None else first_loss
    _inject("finetune", rank, micro_batch)  # tests: a rank dies while the others sit in DDP's all-reduce
    out = train.timed_phase(step, next_batch, tokens_per_step=micro_batch * seq_len, device=str(device),
                            fixed_steps=cfg["finetune_timed_steps"])
    times = _max_across_ranks(out["step_time_s"], device)
    first_loss = out["losses"][0] if first_loss is None else first_loss
    mem = [torch.cuda.max_memory_allocated(device) / 2**30, torch.cuda.max_memory_reserved(device) / 2**30] \
        if device.type == "cuda" else [0.0, 0.0]
    mem = _max_across_ranks(mem, device)
    # losses: the mean over ranks of the first and last step (each rank saw different data)
    ends = torch.tensor([first_loss, out["losses"][-1]], dtype=torch.float64, device=device)
    dist.all_reduce(ends)
    ends = (ends / world).tolist()
    tps = world * micro_batch * seq_len / statistics.median(times)
    fpt, peak = _flops(p, mcfg, meta, seq_len, precision, device)
    return {
        "preset": p.name, "strategy": strategy, "n_gpus": world, "device": device.type,
        "step_time_s": times, "tokens_per_s": tps, "flops_per_token": fpt, "peak_tflops": peak,
        "mfu": flops.mfu(tps / world, fpt, peak),  # per GPU: each GPU's share against its own peak
        "build_s": meta["build_s"], "mode": meta["mode"], "precision": precision,
        "seq_len": seq_len, "micro_batch": micro_batch, "model_source": meta["model_source"],
        "params_total": meta["params_total"], "params_trainable": meta["params_trainable"],
        "params_non_embedding": meta["params_non_embedding"],
        "peak_mem_allocated_gib": mem[0] if device.type == "cuda" else None,
        "peak_mem_reserved_gib": mem[1] if device.type == "cuda" else None,
        "loss_first": ends[0], "loss_last": ends[1],
    }


def _flops(p, mcfg, meta: dict, seq_len: int, precision: str, device: torch.device):
    """(training FLOPs per token, per-GPU peak TFLOP/s) as the single-GPU fine-tune has them."""
    from tasks.probe.finetune import flops
    from tasks.probe.host import specs

    fpt = flops.flops_per_token(mode="lora" if p.mode == "qlora" else p.mode,
                                n_non_embedding=meta["params_non_embedding"],
                                n_layers=mcfg.num_hidden_layers, hidden=mcfg.hidden_size,
                                seq_len=seq_len, n_lora=meta["params_lora"])
    if device.type != "cuda":
        return fpt, None  # no catalog peak for CPUs: MFU stays null
    return fpt, specs.lookup(torch.cuda.get_device_name(device), warn=False).peak_tflops(precision)


def main() -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    job = json.loads(os.environ["COSTGAP_DIST_JOB"])
    result_dir = Path(job["result_dir"])
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLS multicast stays off on these hosts (KINDS.md); re-assert
    try:
        backend = job["backend"]
        if backend == "nccl":
            device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
            torch.cuda.set_device(device)
        else:
            device = torch.device("cpu")
        _inject("init", rank)
        timeout = timedelta(seconds=job["config"]["collective_timeout_s"])
        store = dist.TCPStore(os.environ["COSTGAP_STORE_ADDR"], int(os.environ["COSTGAP_STORE_PORT"]),
                              world, is_master=False,
                              timeout=timedelta(seconds=job["config"]["init_timeout_s"]))
        dist.init_process_group(backend, store=dist.PrefixStore(job["store_prefix"], store), rank=rank,
                                world_size=world, timeout=timeout,
                                device_id=device if backend == "nccl" else None)
        if job["job"] == "allreduce":
            _inject("allreduce", rank)
            result = allreduce_sweep(job, device)
        else:
            result = finetune(job, device)
        dist.barrier()
        dist.destroy_process_group()
        _write(result_dir, rank, {"ok": True, "result": result} if rank == 0 else {"ok": True})
        return 0
    except BaseException as exc:  # every failure becomes a report the launcher can record
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        _write(result_dir, rank, {"ok": False, "error_kind": classify(exc), "message": tail[:1500]})
        traceback.print_exc(file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
