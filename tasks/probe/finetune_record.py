"""Finetune record dicts (bundle Finetune fields) for tasks.probe.finetune: start and close one.

    .venv/bin/pytest -q tests/test_finetune.py -k record
"""

from __future__ import annotations

import torch


def base_record(p, device: torch.device, precision: str, compile_: bool) -> dict:
    """The fields known before any step runs; the measured ones are added by the attempt."""
    return {
        "preset": p.name, "model_source": "preset", "status": "failed", "mode": p.mode,
        "precision": precision, "device": device.type, "n_gpus": 1, "seq_len": p.seq_len,
        "micro_batch": None, "grad_accum": 1, "compile": bool(compile_),
        "activation_checkpointing": False,
    }


def closed(rec: dict, status: str, message: str | None) -> dict:
    """A finished record: status set, message kept short, measured-only fields left as given."""
    out = dict(rec)
    out["status"] = status
    out["message"] = message[:4000] if message else None
    if status in ("skipped", "not_applicable"):
        out["micro_batch"] = None
    return out
