"""Tell people when it matters: emit costgap's events after landing; apply and test the automations.

    costgap alerts apply --block slack-webhook/costgap-alerts
    costgap alerts test --block slack-webhook/costgap-alerts
    .venv/bin/pytest -q -m slow tests/test_alerts_notify.py

`after_landing(warehouse, site, source)` is the one call every command that lands data makes once its
writes are done: `costgap ingest`, `prices import|refresh`, `fx import|refresh`, `run` (the compare flow)
and the prices flow; `rebuild` replays history and tells nothing. Inside the warehouse's write slot (so
two writers never tell the same change twice) it does the landing-time work (`at_landing`), asks
tasks.alerts what is news, emits one Prefect event per alert (`prefect.events.emit_event`, resource
`costgap.target.<id>`, figures and the report's link in the payload) and records what it emitted in
alerts_sent. Where no Prefect API that outlives the command answers (the one-shot server of
COSTGAP_API=ephemeral, a server gone since the landing), nothing is emitted or recorded and one line says
the next landing command that reaches one tells it. It never fails the command that called it: a failure
is said (logged in a flow) and returned.
Automations (deploy/automations/*.yaml) turn the events into notifications on the Prefect server:
`apply_automations` creates or updates them by name; `send_samples` renders each one's message for a
sample event with the server's own template renderer and sends it through the block.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

# Not `from prefect import task`: that imports prefect.main, which sets up Prefect's logging on import, and a
# landing command (which imports this module) would then print Great Expectations' INFO lines on stderr.
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger
from prefect.tasks import task

from runtime import settings
from runtime.write_slot import writer
from tasks.alerts import AlertConfig, pending, record
from tasks.alerts.automations import DEFAULT_FILE, NOTIFY, block_name, blocks_needed, expected_event, fill, load_spec
from tasks.errors import UserError

SEND_WAIT_S = 30.0  # how long a landing waits for its events to leave (milliseconds on a live API)
SITE_LINK_ENV = "COSTGAP_SITE_LINK"  # the report's address people open (the site may be published to s3://)


def site_link(site: str | None) -> str:
    """The report's address for a message: $COSTGAP_SITE_LINK, else the site's index.html (a file:// URI
    for a directory)."""
    given = os.environ.get(SITE_LINK_ENV, "").strip()
    if given:
        return given
    site = site or settings.site_url(None)
    if "://" in site:
        return site if site.endswith(".html") else site.rstrip("/") + "/index.html"
    path = Path(site).resolve()
    return (path if path.suffix == ".html" else path / "index.html").as_uri()


def unheard() -> str | None:
    """None when the Prefect API in use outlives this command and answers its health check; else why an
    event emitted now would reach no one (one phrase). Events on this command's one-shot server
    (COSTGAP_API=ephemeral) would die with it: that server runs no automations, and they would be
    recorded as told."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    from runtime.api import HEALTH_TIMEOUT_S, one_shot_url

    url = PREFECT_API_URL.value()
    if not url:
        return "no Prefect API is set"
    if url == one_shot_url():
        return "the Prefect API is this command's one-shot server (COSTGAP_API=ephemeral)"
    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=HEALTH_TIMEOUT_S).raise_for_status()
    except httpx.HTTPError as e:
        return f"the Prefect API {url} does not answer ({type(e).__name__})"
    return None


def at_landing(con, now: datetime, say: Callable[[str], None]) -> None:
    """Landing-time work on the warehouse just written, in the same write slot, before the alerts read it.

    The one place for what must happen whenever data lands, whichever command landed it (ingest, prices,
    fx, run, the prices flow): e.g. scoring recorded estimates against the measurements that just landed
    (a function of tasks/cost, called here with `con` and `now`). Nothing yet."""


def emit_changes(warehouse: str, link: str | None, source: str, cfg: AlertConfig | None = None,
                 now: datetime | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Inside the write slot: the landing-time work (at_landing), then one event per alert that is news, each
    recorded in alerts_sent. Where no Prefect API that outlives this command answers (unheard), nothing is
    emitted or recorded, and `untold` says why: the next landing command that reaches one tells it."""
    from prefect.events import emit_event

    now = now or datetime.now(timezone.utc)
    say = progress or (lambda _line: None)
    with writer(warehouse, progress=progress) as con:
        at_landing(con, now, say)
        alerts, ev = pending(con, cfg or AlertConfig(), now, link)
        why = unheard() if alerts else None
        if why is not None:
            return {"emitted": [], "not_emitted": [f"{a.event}: {a.summary}" for a in alerts], "errors": ev.errors,
                    "untold": why}
        ids = []
        for a in alerts:
            sent = emit_event(event=a.event, resource=a.resource, related=a.related_resources, payload=a.payload)
            ids.append(str(sent.id) if sent is not None else None)
        told = [(a, i) for a, i in zip(alerts, ids) if i]
        late = [] if not told or _handed_over(SEND_WAIT_S) else [
            f"alerts: {len(told)} event(s) still queued for the Prefect API after {SEND_WAIT_S:.0f} s; recorded as told"]
        record(con, [a for a, _ in told], now, source, [i for _, i in told])
    untold = "Prefect events are off in this process" if len(told) < len(alerts) else None
    return {"emitted": [f"{a.event}: {a.summary}" for a, _ in told],
            "not_emitted": [f"{a.event}: {a.summary}" for a, i in zip(alerts, ids) if not i],
            "errors": ev.errors + late, "untold": untold}


def _handed_over(timeout_s: float) -> bool:
    """Wait (at most timeout_s) until Prefect's events worker has handed every emitted event to the API. It
    sends from a background thread and drains at interpreter exit, which a command forked from the warm
    process skips (os._exit): without this wait its events could be recorded as told and never sent."""
    import threading

    from prefect.events.worker import EventsWorker

    waiter = threading.Thread(target=EventsWorker.instance().wait_until_empty, name="costgap-events", daemon=True)
    waiter.start()
    waiter.join(timeout_s)
    return not waiter.is_alive()


def tell(out: dict, say: Callable[[str], None], warn: Callable[[str], None] | None = None) -> None:
    """What after_landing did, for a person: one line per alert told, one line for those left to the next command."""
    warn = warn or say
    for line in out["emitted"]:
        say(f"alert: {line}")
    if out["not_emitted"]:
        warn(f"alerts: {len(out['not_emitted'])} not told here ({out.get('untold') or 'not emitted'}); the next "
             "costgap command that lands data and reaches a Prefect API tells them")
    for line in out["errors"]:
        warn(line)


@task(name="alerts", cache_policy=NO_CACHE)
def notify_changes(warehouse: str, site: str | None, source: str) -> dict:
    """after_landing as a task of the calling flow: the same path, its lines in the flow's log."""
    log = get_run_logger()
    out = emit_changes(warehouse, site_link(site), source, progress=log.info)
    tell(out, log.info, log.warning)
    if not out["emitted"] and not out["not_emitted"]:
        log.info("alerts: nothing new to tell")
    return out


def after_landing(warehouse: str, site: str | None, source: str,
                  progress: Callable[[str], None] | None = None) -> dict:
    """The one call every command that lands data makes once its writes are done (ingest, prices import and
    refresh, fx import and refresh, run's compare flow, the prices flow; not rebuild, which replays history):
    emit_changes, as a task when called from a flow. A failure is returned (and said), never raised: the
    data has landed whatever happens here."""
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is not None:
        state = notify_changes(warehouse, site, source, return_state=True)
        if state.is_completed():
            return state.result()
        return {"emitted": [], "not_emitted": [], "errors": [f"alerts failed: {state.message}"], "untold": None}
    say = progress or (lambda _line: None)
    try:
        out = emit_changes(warehouse, site_link(site), source, progress=progress)
    except Exception as e:  # noqa: BLE001 (the landing stands; the next landing command tries again)
        out = {"emitted": [], "not_emitted": [], "untold": None,
               "errors": [f"costgap: warning: alerts failed after landing ({type(e).__name__}: {e}); the next "
                          "costgap command that lands data tells what is news"]}
    tell(out, say)
    return out


# -- automations on the server ------------------------------------------------------------------------------

def _require_server() -> str:
    from prefect.settings import PREFECT_API_URL

    from runtime.api import ensure_api

    url = PREFECT_API_URL.value()
    if not url:
        raise UserError("PREFECT_API_URL is not set: automations and notification blocks live on a Prefect "
                        "server (prefect server start, or the team's server); set PREFECT_API_URL to its /api URL")
    ensure_api(None)
    return url


def resolve_block(client, name: str):
    """The notification block document called `name` (`<type slug>/<name>`, or a bare name that is unique)."""
    slug, _, bare = name.rpartition("/")
    docs = [d for d in client.read_block_documents(include_secrets=False) if not d.is_anonymous]
    notify = [d for d in docs if d.block_schema and "notify" in (d.block_schema.capabilities or [])]
    found = [d for d in notify if d.name == bare and (not slug or d.block_type.slug == slug)]
    if len(found) == 1:
        return found[0]
    known = ", ".join(sorted(f"{d.block_type.slug}/{d.name}" for d in notify)) or "none"
    if found:
        raise UserError(f"notification block {name!r}: {len(found)} blocks have that name; name one as "
                        f"<type>/<name>: {', '.join(sorted(d.block_type.slug + '/' + d.name for d in found))}")
    other = [d for d in docs if d.name == bare]
    why = (f"{other[0].block_type.slug}/{bare} exists but cannot send notifications" if other
           else "no such block on this server")
    raise UserError(f"notification block {name!r}: {why}; notification blocks here: {known}. Create one "
                    "(docs/deploy.md, section Alerts) or pass --block")


def _same(existing, wanted) -> bool:
    from prefect.events.schemas.automations import AutomationCore

    return (AutomationCore.model_validate(existing.model_dump()).model_dump(mode="json")
            == wanted.model_dump(mode="json"))


def apply_automations(path: str = DEFAULT_FILE, block: str | None = None,
                      progress: Callable[[str], None] | None = None) -> list[tuple[str, str]]:
    """Create or update every automation of the file on the server, by name; returns (name, what happened).
    Running it twice changes nothing the second time ('unchanged')."""
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore
    from prefect.server.utilities.user_templates import validate_user_template
    from pydantic import ValidationError

    spec = load_spec(path)
    _require_server()
    say = progress or (lambda _line: None)
    out = []
    with get_client(sync_client=True) as client:
        ids = {name: resolve_block(client, name).id for name in blocks_needed(spec, block)}
        for doc in fill(spec, ids, block):
            where = f"automation file {spec.path}, automation {doc['name']!r}"
            for act in doc["actions"]:
                for f in ("subject", "body") if act.get("type") == NOTIFY else ():
                    try:
                        validate_user_template(act[f])
                    except Exception as e:  # jinja2's syntax errors, Prefect's loop limits
                        raise UserError(f"{where}: field '{f}': not a valid message template ({e})") from None
            try:
                wanted = AutomationCore.model_validate(doc)
            except ValidationError as e:
                first = e.errors()[0]
                raise UserError(f"{where}: field '{'.'.join(map(str, first['loc']))}': {first['msg']}") from None
            existing = client.read_automations_by_name(wanted.name)
            if not existing:
                client.create_automation(wanted)
                what = "created"
            elif _same(existing[0], wanted):
                what = "unchanged"
            else:
                client.update_automation(existing[0].id, wanted)
                what = "updated"
            for dup in existing[1:]:  # made by hand or by an older apply: one automation per name
                client.delete_automation(dup.id)
                what += f", {len(existing) - 1} duplicate(s) removed"
            say(f"  {what}: {wanted.name}")
            out.append((wanted.name, what))
    return out


def send_samples(path: str = DEFAULT_FILE, block: str | None = None, link: str | None = None,
                 progress: Callable[[str], None] | None = None) -> list[tuple[str, str]]:
    """Render each automation's message for a sample of its event and send it through its block, as the
    server would; returns (event, subject) per message sent."""
    from prefect.blocks.core import Block
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.events import Event
    from prefect.server.utilities.user_templates import render_user_template_sync

    from tasks.alerts.samples import samples

    spec = load_spec(path)
    _require_server()
    say = progress or (lambda _line: None)
    by_event = {a.event: a for a in samples(link or site_link(None))}
    blocks: dict[str, Block] = {}
    out = []
    with get_client(sync_client=True) as client:
        for auto in spec.automations:
            sample = by_event[expected_event(auto, f"automation {auto['name']!r}")]
            event = Event(event=sample.event, resource=sample.resource, related=sample.related_resources,
                          payload=sample.payload)
            for act in (a for a in auto["actions"] if isinstance(a, dict) and a.get("type") == NOTIFY):
                name = block_name(spec, block, act)
                if name not in blocks:
                    doc = resolve_block(client, name)
                    blocks[name] = Block.load(f"{doc.block_type.slug}/{doc.name}")
                subject, body = (render_user_template_sync(act[f], {"event": event}) for f in ("subject", "body"))
                try:
                    blocks[name].notify(body=body, subject=subject)
                except Exception as e:  # the block's service refused or could not be reached
                    raise RuntimeError(f"block {name!r} could not send the {sample.event} sample: "
                                       f"{type(e).__name__}: {e}") from None
                say(f"  sent: {sample.event} via {name}: {subject}")
                out.append((sample.event, subject))
    return out
