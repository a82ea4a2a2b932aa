"""The seed's question, answered as a prediction: two multi-GPU instance types on one fine-tune (issue 42).

    costgap scaling                      # 2x V100 NVLink (GN10Xp) against 2x A10 PCIe (gn7i), 13B LoRA
    costgap scaling --size 7e9 --mode lora --a aws/p4d.24xlarge --b alibaba/ecs.gn7i-4x.8xlarge --json

A machine is an instance type of tasks/estimate/data/instance_fabrics.csv (its GPU, count, fabric and network),
with the fabric overridable where the provider never published it (the seed's gn7i says "over PCIe"). Each is
answered by tasks/estimate/at_size.py: memory fit (one card, else sharded), tokens/s per GPU from the
calibrated estimator scaled to the size, and the scaling efficiency predicted from the interconnect. Prices:
the price book in force, else the per-GPU price of a priced type of the same family (said so). `compare` adds
the model size where the cheaper machine changes (`flip`), and `nodes` the same pair on N nodes over RDMA
against TCP at each type's own line rate. Everything here is a prediction and says so.
"""

from __future__ import annotations

import re

from tasks.cost.derived import FLOPS_PER_TOKEN, TierConfig
from tasks.cost.model import effective_cost
from tasks.estimate import at_size
from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est
from tasks.estimate import public_rows as pr
from tasks.estimate import scaling as scaling_
from tasks.errors import UserError

SEED = ("tencent/GN10Xp.5XLARGE80", "alibaba/ecs.gn7i-c32g1.16xlarge")  # the GN10X-like and the gn7-like pair
SEED_FABRIC_B = "pcie"  # the seed puts the A10 pair "over PCIe"; gn7i's peer-to-peer was never published
FLIP_SIZES = tuple(round(1e9 * 1.1 ** k, -7) for k in range(45))  # 1B .. ~73B, 10% apart


def family(instance_type: str) -> str:
    """'GN10Xp.5XLARGE80' -> 'GN10Xp'; 'ecs.gn7i-c32g1.16xlarge' -> 'ecs.gn7i'."""
    m = re.match(r"(ecs\.)?[A-Za-z]+\d+[A-Za-z]*", instance_type)
    return m.group(0) if m else instance_type


def machine(spec: str, fabric: str | None = None) -> dict:
    """'provider/instance_type' from instance_fabrics.csv, the fabric overridden where given."""
    provider, _, itype = spec.partition("/")
    row = pr.instance_fabrics().get((provider.lower(), itype.lower()))
    if row is None:
        raise UserError(f"{spec!r}: not in tasks/estimate/data/instance_fabrics.csv (give PROVIDER/INSTANCE_TYPE "
                        "of a published multi-GPU type)")
    sheet = cal_.match_gpu(row["gpu"])
    if sheet is None:
        raise UserError(f"{spec!r}: GPU {row['gpu']!r} has no datasheet entry in gpu_specs.json")
    how = ("as published" if not fabric or fabric == row["fabric"] else
           f"as asked; published: {row['fabric'] or 'nothing'}")
    return {"spec": spec, "provider": row["provider"], "instance_type": row["instance_type"], "sheet": sheet,
            "gpus": int(row["gpu_count"]), "fabric": fabric or row["fabric"], "network": row["network"],
            "fabric_how": how, "source": f"{row['source_url']} ({row['source_date']})"}


def price(m: dict, book: dict) -> tuple[float | None, str]:
    """(price per hour, where it came from): the book's price of the type, else per GPU as a priced type of
    the same family, else none."""
    own = book.get((m["provider"], m["instance_type"]))
    if own is not None:
        return own["price_per_hour"], f"price book: {own['source']}"
    kin = sorted((k, v) for k, v in book.items() if k[0] == m["provider"] and family(k[1]) == family(m["instance_type"]))
    sib = [(k, v) for k, v in kin if v.get("gpu_count")]
    if not sib and kin:  # priced, but nothing says how many GPUs that price buys
        return None, (f"the book prices {', '.join(k[1] for k, _ in kin)} of the family, but no targets file "
                      "(--targets-file, $COSTGAP_TARGETS, ./deploy/targets.toml) or catalog gives its GPU count")
    if not sib:
        return None, f"no price for {m['instance_type']} or its family in the price book"
    (_, it), v = sib[0]
    per_gpu = v["price_per_hour"] / v["gpu_count"]
    return per_gpu * m["gpus"], (f"{m['gpus']} x the per-GPU price of {it} ({v['price_per_hour']:,.4f}/h for "
                                 f"{v['gpu_count']} GPU): the book has no price for {m['instance_type']}")


def answer(m: dict, size: float, mode: str, cal: cal_.Calibration, cfg: TierConfig, price_h: float | None,
           r: float, nodes: int = 1, network: str | None = None, fit: dict | None = None) -> dict:
    """One machine on one fine-tune: fit, tokens/s, efficiency, communication share, cost, all with intervals."""
    ref = max((w for w in cal.reference.values() if (w.mode == "full") == (mode == "full")),
              key=lambda w: w.params_total, default=None) or max(cal.reference.values(), key=lambda w: w.params_total)
    rate = est.per_gpu_rate(ref, m["sheet"], cal)
    out = {"machine": m["spec"], "gpu": m["sheet"].key, "gpus": m["gpus"] * nodes, "nodes": nodes, "size": size,
           "mode": mode, "fabric": m["fabric"], "network": network, "price_per_hour": price_h and price_h * nodes}
    if rate is None:
        return {**out, "reason": f"no estimate for {m['sheet'].key}"}
    gpus = m["gpus"] * nodes
    p = at_size.plan(size, mode, m["sheet"], m["gpus"], cfg, per_gpu=rate[:3], ref_flops=FLOPS_PER_TOKEN[ref.mode] * ref.params_total,
                     fabric=m["fabric"], network=None) if nodes == 1 else _nodes(size, mode, m, cfg, rate, ref, nodes,
                                                                                 network, fit)
    sc = p.scaling
    out.update(fits=p.fits, strategy=p.strategy, reason=p.reason, notes=p.notes + [f"tokens/s from {rate[3]}"],
               tokens_per_s=p.tokens_per_s, lo=p.lo, hi=p.hi)
    if sc is not None and sc.efficiency is not None and gpus > 1:
        out.update(efficiency=sc.efficiency, eff_lo=sc.lo, eff_hi=sc.hi, comm_share=sc.comm_share,
                   busbw_gbps=sc.busbw_gbps, label=sc.label, scaling_reason=sc.reason)
    if p.tokens_per_s is not None and price_h is not None:
        ph = price_h * nodes
        out.update(cost=effective_cost(ph, p.tokens_per_s, r), cost_lo=effective_cost(ph, p.hi, r),
                   cost_hi=effective_cost(ph, p.lo, r))
    return out


def _nodes(size, mode, m, cfg, rate, ref, nodes, network, fit):
    """at_size.plan over `nodes` nodes: memory sharded over every GPU where one card is too small."""
    sheet = m["sheet"]
    p = at_size.memory_fit(size, mode, sheet, m["gpus"] * nodes, cfg)
    if not p.fits:
        return p
    ratio = FLOPS_PER_TOKEN[ref.mode] * ref.params_total / at_size.flops_per_token(size, mode, p.checkpointing)
    x1, lo1, hi1 = (v * ratio for v in rate[:3])
    _, _, n_lora = at_size.memory.param_counts(at_size.shape_for(size))
    sc = scaling_.predict_scaling(
        sheet.key, m["gpus"], m["fabric"], params=size, trainable_params=size if mode == "full" else n_lora,
        tokens_per_gpu_step=cfg.seq_len * cfg.micro_batch * cfg.grad_accumulation, tokens_per_s_1=x1,
        strategy=p.strategy, nodes=nodes, network=network, micro_steps=cfg.grad_accumulation,
        grad_bytes_per_param=at_size.memory.gradient_bytes_per_param(mode, p.precision),
        param_bytes=float(at_size.memory.param_bytes(mode, p.precision)[1 if mode == "full" else 0]), fit=fit)
    p.scaling, p.per_gpu = sc, x1
    if sc.efficiency is None:
        p.reason = sc.reason
        return p
    g = m["gpus"] * nodes
    p.tokens_per_s, p.lo, p.hi = x1 * g * sc.efficiency, lo1 * g * sc.lo, hi1 * g * sc.hi
    return p


def flip(a: dict, b: dict, mode: str, cal, cfg, price_a, price_b, r) -> dict:
    """Over FLIP_SIZES: which machine is cheaper at each size (point estimates), and where that changes or a
    machine stops fitting."""
    rows = []
    for s in FLIP_SIZES:
        ca = answer(a, s, mode, cal, cfg, price_a, r).get("cost")
        cb = answer(b, s, mode, cal, cfg, price_b, r).get("cost")
        rows.append({"size": s, "a": ca, "b": cb,
                     "cheaper": None if ca is None and cb is None else ("a" if cb is None or (ca is not None and ca < cb)
                                                                        else "b")})
    changes = [(p["size"], q["size"], p["cheaper"], q["cheaper"]) for p, q in zip(rows, rows[1:])
               if p["cheaper"] != q["cheaper"]]
    return {"rows": rows, "changes": changes}


def tcp_bound(fit: dict) -> dict:
    """The fit with TCP at its full line rate: an upper bound on any TCP figure where no public TCP rows exist."""
    from tasks.estimate.collective_fit import NCCL_HOP_US

    nets = dict(fit["networks"])
    nets.setdefault("tcp", {"fraction": 1.0, "hop_us": NCCL_HOP_US["network"], "log_halfwidth": 0.0, "rows": []})
    return {**fit, "networks": nets}


def compare(con, ma: dict, mb: dict, *, size: float = 13e9, mode: str = "lora", nodes: int = 4,
            billing: str = "on_demand", currency: str = "USD", f: float | None = None, extra: list[dict] = (),
            today=None, cfg: TierConfig | None = None) -> dict:
    """The whole answer for machines A and B (see the module docstring), from one open warehouse connection:
    the estimator's calibration, the price book in force `today` and the fleet's failure rate."""
    from tasks.cost.model import F_LOST
    from tasks.cost.rules import today as rules_today
    from tasks.estimate.scaling import load_fit
    from warehouse import sql

    fit, cfg, now = load_fit(), cfg or TierConfig(), today or rules_today()
    if fit is None:
        raise UserError("no collective fit (tasks/estimate/data/collective_fit.json): "
                        "python -m tasks.estimate.collective_fit")
    cal = cal_.calibrate(cal_.workloads(con), cal_.efficiencies(con))
    if cal is None:
        raise UserError("no measured fine-tune to calibrate the estimator on (costgap ingest warehouse/samples/)")
    counts = {(t["provider"], t["instance_type"]): t["gpu_count"]
              for t in [*extra, *sql.rows(con, "estimate_catalog", {"preset": None})]}
    counts.update({(k[0], v["instance_type"]): int(v["gpu_count"]) for k, v in pr.instance_fabrics().items()
                   if v.get("gpu_count")})
    book = {(p["provider"], p["instance_type"]): {**p, "gpu_count": counts.get((p["provider"], p["instance_type"]))}
            for p in sql.rows(con, "estimate_prices", {"today": now, "billing": billing, "currency": currency})
            if not p["fx_missing"]}
    fleet = sql.rows(con, "estimate_fleet_attempts")[0]
    _p, r, r_why = est.rerun(fleet, (0, 0), F_LOST if f is None else f)
    r_why = r_why.replace("its own history", "every fine-tune attempt in the warehouse")
    (pa, why_a), (pb, why_b) = price(ma, book), price(mb, book)
    res = {"size": size, "mode": mode, "currency": currency, "R": r, "r_source": r_why, "nodes_compared": nodes,
           "a": {**answer(ma, size, mode, cal, cfg, pa, r), "price_source": why_a, "fabric_how": ma["fabric_how"]},
           "b": {**answer(mb, size, mode, cal, cfg, pb, r), "price_source": why_b, "fabric_how": mb["fabric_how"]}}
    if mb["fabric"] == "pcie":  # bracket: the same type if its GPUs cannot do peer-to-peer
        res["b_host"] = answer({**mb, "fabric": "pcie-host"}, size, mode, cal, cfg, pb, r)
    res["flip"] = flip(ma, mb, mode, cal, cfg, pa, pb, r)
    res["nodes"] = []
    bound = tcp_bound(fit)
    for tag, m, ph in (("a", ma, pa), ("b", mb, pb)) if nodes > 1 else ():
        gbps = (m["network"] or "tcp:0").split(":")[1]
        for kind in ("rdma", "tcp"):
            net = f"{kind}:{gbps}"
            row = answer(m, size, mode, cal, cfg, ph, r, nodes=nodes, network=net, fit=fit)
            if kind == "tcp" and row.get("efficiency") is None:
                up = answer(m, size, mode, cal, cfg, ph, r, nodes=nodes, network=net, fit=bound)
                row["tcp_line_rate_bound"] = {k: up.get(k) for k in ("efficiency", "cost", "tokens_per_s")}
            res["nodes"].append({"tag": tag, **row})
    return res
