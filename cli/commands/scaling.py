"""`costgap scaling`: two multi-GPU instance types on one fine-tune, predicted from their interconnect (issue 42).

    costgap scaling                                  # the seed: 2x V100 NVLink (GN10Xp) vs 2x A10 PCIe (gn7i), 13B
    costgap scaling --size 7e9 --mode full --a aws/p4d.24xlarge --b lambda/gpu_8x_a100_80gb_sxm4 --json
    costgap scaling --nodes 4                        # ... and both on 4 nodes over RDMA against TCP

Per machine: memory fit (one card or sharded), the scaling efficiency with its 90% interval, the exposed
communication's share of a step, the predicted busbw, tokens/s and cost per 1M tokens with intervals; then
the model size at which the cheaper machine changes; then N nodes of each over RDMA against TCP. Every figure
is a PREDICTION (tasks/estimate/pair.py, scaling.py); nothing here is measured or enters a measured table.
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from runtime.settings import warehouse_path
from tasks.cost.model import F_LOST

WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."


def _num(x: float | None, spec: str = ",.0f") -> str:
    return "n/a" if x is None else format(x, spec)


def _cost(x: float | None) -> str:
    from tasks.estimate.evidence import sig

    return sig(x) if x is not None else "n/a"


def _line(tag: str, r: dict, cur: str) -> str:
    if r.get("tokens_per_s") is None:
        return f"  {tag} {r['machine']}: {'does not fit' if r.get('fits') is False else 'no estimate'}: {r['reason']}"
    eff = (f"efficiency {r['efficiency']:.2f} (90% {r['eff_lo']:.2f}..{r['eff_hi']:.2f}), communication "
           f"{r['comm_share']:.1%} of a step, {r['label']}" if r.get("efficiency") is not None else "one GPU")
    cost = (f"{_cost(r['cost'])} {cur}/1M tokens (90% {_cost(r['cost_lo'])}..{_cost(r['cost_hi'])}) at "
            f"{r['price_per_hour']:,.4f} {cur}/h" if r.get("cost") is not None else "no price")
    return (f"  {tag} {r['machine']} ({r['gpus']}x {r['gpu']}, {r['strategy'].upper()}): {eff}; "
            f"{_num(r['tokens_per_s'])} tokens/s (90% {_num(r['lo'])}..{_num(r['hi'])}); {cost}")


def _flip_text(fl: dict, names: dict) -> list[str]:
    rows, out, start = fl["rows"], [], fl["rows"][0]
    for prev, cur in zip(rows, rows[1:] + [None]):
        if cur is None or cur["cheaper"] != prev["cheaper"]:
            who = ("neither fits" if prev["cheaper"] is None else f"{names[prev['cheaper']]} cheaper")
            out.append(f"  {start['size'] / 1e9:,.1f}B to {prev['size'] / 1e9:,.1f}B: {who}")
            start = cur
    return out


def scaling_cmd(
    size: float = typer.Option(13e9, "--size", help="Model size in parameters (default 13e9: the seed's 13B)."),
    mode: str = typer.Option("lora", "--mode", help="full | lora: the fine-tune compared."),
    a: str = typer.Option(None, "--a", help="Machine A as PROVIDER/INSTANCE_TYPE of instance_fabrics.csv "
                          "(default: tencent/GN10Xp.5XLARGE80, 2x V100 SXM2 with NVLink)."),
    b: str = typer.Option(None, "--b", help="Machine B (default: alibaba/ecs.gn7i-c32g1.16xlarge, 2x A10)."),
    fabric_a: Optional[str] = typer.Option(None, "--fabric-a", help="Override A's fabric (nvswitch | nvlink | pcie "
                                           "| pcie-host)."),
    fabric_b: Optional[str] = typer.Option(None, "--fabric-b", help="Override B's fabric (default for the seed's "
                                           "gn7i: pcie, as the seed puts it; its peer-to-peer was never published)."),
    nodes: int = typer.Option(4, "--nodes", min=1, help="Also compare both on N nodes over RDMA against TCP "
                              "(1: skip)."),
    billing: str = typer.Option("on_demand", "--billing", help="on_demand | monthly | yearly | spot."),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency (dated FX rates)."),
    f: float = typer.Option(F_LOST, "--f", help="Fraction of an attempt's work lost per failure."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    targets_file: Optional[str] = typer.Option(None, "--targets-file", help="Targets file (GPU counts of priced "
                                               "types; default: $COSTGAP_TARGETS, then deploy/targets.toml)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Two multi-GPU instance types on one fine-tune: efficiency, communication share, cost, and where the
    cheaper one changes with model size. PREDICTED from the interconnect, never measured."""
    from cli.commands.estimate import _extra
    from tasks.cost.rules import today
    from tasks.errors import UserError
    from tasks.estimate import pair
    from tasks.fabric import check_fabric
    from warehouse.db import reading

    if mode not in ("full", "lora"):
        raise UserError(f"--mode {mode!r}: expected full or lora")
    if not 1e8 <= size <= 1e12:
        raise UserError(f"--size {size!r}: expected a parameter count between 1e8 and 1e12")
    try:
        fa, fb = check_fabric(fabric_a), check_fabric(fabric_b)
    except ValueError as e:
        raise UserError(f"--fabric-a/--fabric-b: {e}") from None
    seed = a is None and b is None
    ma = pair.machine(a or pair.SEED[0], fa)
    mb = pair.machine(b or pair.SEED[1], fb or (pair.SEED_FABRIC_B if b is None else None))
    with reading(warehouse_path(warehouse)) as con:
        res = pair.compare(con, ma, mb, size=size, mode=mode, nodes=nodes, billing=billing, currency=currency, f=f,
                           extra=_extra(targets_file, []), today=today())
    if as_json:
        typer.echo(json.dumps(res, indent=2, default=str))
        return
    _show(res, ma, mb, seed, nodes, currency)


def _show(res: dict, ma: dict, mb: dict, seed: bool, nodes: int, cur: str) -> None:
    names = {"a": ma["spec"], "b": mb["spec"]}
    typer.echo(f"PREDICTED, not measured: a {res['size'] / 1e9:,.0f}B {res['mode']} fine-tune"
               + (" (the seed's question)" if seed else "") + f"; R {res['R']:.3f} ({res['r_source']})")
    for tag, m in (("A", ma), ("B", mb)):
        typer.echo(f"  {tag} = {m['spec']}: {m['gpus']}x {m['sheet'].key}, fabric {m['fabric'] or 'unknown'} "
                   f"({m['fabric_how']}), network {m['network'] or 'unknown'} [{m['source']}]")
    typer.echo(_line("A", res["a"], cur))
    typer.echo(_line("B", res["b"], cur))
    if "b_host" in res:
        typer.echo(_line("B without peer-to-peer (pcie-host)", res["b_host"], cur))
    for tag in ("a", "b"):
        typer.echo(f"  price {tag.upper()}: {res[tag]['price_source']}")
    ca, cb = res["a"].get("cost"), res["b"].get("cost")
    if ca is not None and cb is not None:
        lo_a, hi_a, lo_b, hi_b = res["a"]["cost_lo"], res["a"]["cost_hi"], res["b"]["cost_lo"], res["b"]["cost_hi"]
        overlap = lo_a <= hi_b and lo_b <= hi_a
        win = "A" if ca < cb else "B"
        typer.echo(f"  cheaper: {win} by {abs(ca / cb - 1) if win == 'B' else abs(cb / ca - 1):.0%} of the other's cost "
                   f"({'the 90% intervals overlap' if overlap else 'the 90% intervals do not overlap'})")
    typer.echo(f"by model size ({res['mode']}, point estimates; A = {names['a']}, B = {names['b']}):")
    for line in _flip_text(res["flip"], {"a": "A", "b": "B"}):
        typer.echo(line)
    if nodes > 1:
        typer.echo(f"{nodes} nodes of each over RDMA against TCP, at each type's own line rate:")
        for row in res.get("nodes", []):
            tag = f"{row['tag'].upper()} x{nodes} over {row['network']}"
            bd = row.get("tcp_line_rate_bound")
            if row.get("efficiency") is None and bd and bd.get("efficiency") is not None:
                typer.echo(f"  {tag}: no estimate ({row['reason']}); even at TCP's full line rate at most efficiency "
                           f"{bd['efficiency']:.2f}, {_cost(bd['cost'])} {cur}/1M tokens at best")
                continue
            typer.echo(_line(tag, row, cur))


def register(app: typer.Typer) -> None:
    app.command("scaling")(scaling_cmd)
