"""`costgap export skypilot TARGET...`: one SkyPilot task file per target, to measure without keeping a GPU.

    costgap export skypilot aws-g5-xlarge lambda-gpu-1x-a10 --results s3://bucket/costgap --out sky/
    costgap export skypilot --all --k8s-context alibaba=ack-hangzhou --k8s-context tencent=tke-gz --out sky/

Writes <out>/<target>.sky.yaml for every target SkyPilot can reach (tasks/dispatch/skypilot.py) and
<out>/targets-import.toml, the same targets as `import` targets whose inbox is where the tasks put
their bundles. Every target it cannot reach is named with the reason. A results store the instances
cannot write back to (a local path, without --keep-instance) is refused: the bundles would go down with
the instance. Exit 0 when at least one task was written, 2 when none could be (a bad argument, or no
target SkyPilot can reach); nothing is half-written: every file goes to a temporary name and is moved
into place.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from runtime import settings
from tasks.errors import UserError

export_app = typer.Typer(help="Write deployment files for other launchers (SkyPilot).", no_args_is_help=True)


def _contexts(specs: List[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        provider, sep, ctx = spec.partition("=")
        if not sep or not provider.strip() or not ctx.strip():
            raise UserError(f"--k8s-context {spec!r}: expected PROVIDER=CONTEXT, e.g. alibaba=ack-hangzhou")
        out[provider.strip()] = ctx.strip()
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@export_app.command("skypilot")
def skypilot_cmd(
    targets: Optional[List[str]] = typer.Argument(None, help="Target ids from the targets file."),
    all_: bool = typer.Option(False, "--all", help="Every target in the targets file."),
    out: str = typer.Option("sky", "--out", help="Directory the task files are written to."),
    results: Optional[str] = typer.Option(None, "--results", help="Results store the tasks put bundles in: a URL "
                                          "every instance reaches, e.g. s3://bucket/costgap (default: "
                                          "$COSTGAP_RESULTS, then ./results)."),
    profile: str = typer.Option("standard", "--profile", help="Probe profile the tasks run."),
    k8s_context: Optional[List[str]] = typer.Option(None, "--k8s-context", help="PROVIDER=CONTEXT: reach a "
                                                    "provider SkyPilot has no cloud for (alibaba, tencent) "
                                                    "through its Kubernetes support on that kubeconfig context."),
    targets_file: Optional[str] = typer.Option(None, "--targets-file", help="Targets file (default: "
                                               "$COSTGAP_TARGETS, then deploy/targets.toml)."),
    keep_instance: bool = typer.Option(False, "--keep-instance", help="Stop each instance when idle instead of "
                                       "tearing it down, so its disk (and a local --results path on it) is kept; "
                                       "fetch the bundles, then `sky down`."),
) -> None:
    """One SkyPilot task per target: launch, probe, put the bundle in the results store, tear down.

    --results must be an object store the instances reach (s3://, gs://, oss://, cos://): a task tears
    its instance down, disk and all, once idle. A local path is accepted only with --keep-instance."""
    from tasks.dispatch import skypilot as sky
    from tasks.dispatch.targets import load_targets, select
    from tasks.probe.profiles import PROFILES

    if bool(targets) == all_:
        raise UserError("export skypilot: name the targets, or give --all (not both)")
    if profile not in PROFILES:
        raise UserError(f"--profile {profile!r}: expected one of {', '.join(sorted(PROFILES))}")
    contexts = _contexts(k8s_context or [])
    file = settings.targets_path(targets_file)
    chosen = select(load_targets(file), None if all_ else list(targets or []), str(file))
    store = settings.results_url(results)
    tasks, entries, skipped = {}, [], []
    for t in chosen:
        infra, why = sky.reach(t, contexts)
        if infra is None:
            skipped.append((t.id, why))
            continue
        tasks[sky.task_file(t.id)] = sky.to_yaml(sky.task(t, results=store, profile=profile, k8s_contexts=contexts,
                                                          down=not keep_instance))
        entries.append(sky.import_target(t, store))
    if not tasks:
        for tid, why in skipped:
            typer.echo(f"not exported: {tid}: {why}")
        raise UserError(f"export skypilot: no task written: none of {', '.join(t.id for t in chosen)} can be "
                        "reached by SkyPilot (reasons above)")
    if not keep_instance and not sky.results_reachable(store):
        schemes = ", ".join(f"{x}://" for x in sky.REMOTE_SCHEMES)
        raise UserError(f"--results {store!r}: the tasks tear their instance down when it is idle, and a bundle "
                        f"written to {'a local path' if '://' not in store else 'that store'} goes with its disk; "
                        f"give --results with a store the instances reach ({schemes}), e.g. --results "
                        "s3://my-bucket/costgap, or --keep-instance to stop each instance instead of tearing it down")
    for tid, why in skipped:
        typer.echo(f"not exported: {tid}: {why}")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in tasks.items():
        _write(folder / name, text)
        typer.echo(f"wrote {folder / name}")
    _write(folder / "targets-import.toml", sky.toml_targets(entries))
    typer.echo(f"wrote {folder / 'targets-import.toml'}")
    land = f"costgap run --targets-file {folder}/targets-import.toml --targets all"
    if keep_instance:
        typer.echo(f"launch each from the checkout root: sky launch -c NAME {folder}/TARGET.sky.yaml -y; the instance "
                   f"stops when idle, keeping its disk: copy {store}/{sky.INBOX_DIR}/ back from it (e.g. rsync -a "
                   f"NAME:{store}/{sky.INBOX_DIR}/ {store}/{sky.INBOX_DIR}/; a relative path is under sky_workdir/), "
                   f"then sky down NAME; then land: {land}")
    else:
        typer.echo(f"launch each from the checkout root: sky launch -c NAME {folder}/TARGET.sky.yaml --down -y; "
                   f"then land: {land}")


def register(app: typer.Typer) -> None:
    app.add_typer(export_app, name="export")
