"""The automation files in deploy/automations/: read, check, and fill in the notification block.

    python -c "from tasks.alerts.automations import load_spec; print([a['name'] for a in load_spec().automations])"

A file is Prefect's automation file format (an `automations:` list of name, description, trigger,
actions: what `prefect automation create --from-file` reads) plus one costgap addition: a
`send-notification` action names its block with `block:` (or takes the file's top-level `block:`)
instead of a `block_document_id`, because ids differ per server. `fill(spec, ids)` puts the ids in.
Every costgap automation must expect exactly one costgap event, so `costgap alerts test` knows which
sample each one renders. Errors name the file, the automation and the field.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from tasks.alerts.config import EVENTS
from tasks.errors import UserError

DEFAULT_FILE = "deploy/automations/costgap.yaml"  # the automations costgap ships
BLOCK_ENV = "COSTGAP_ALERT_BLOCK"  # the notification block's name, where --block is not given
NOTIFY = "send-notification"  # Prefect's action type that sends through a notification block


@dataclass(frozen=True)
class Spec:
    path: str  # the file it came from (for messages)
    block: str | None  # the file's default notification block name
    automations: list[dict]  # Prefect automation documents, block ids not filled in yet


def load_spec(path: str | Path = DEFAULT_FILE) -> Spec:
    """Read and check an automation file (module docstring)."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"automation file {p}: no such file (costgap ships {DEFAULT_FILE})") from None
    except yaml.YAMLError as e:
        raise UserError(f"automation file {p}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("automations"), list) or not doc["automations"]:
        raise UserError(f"automation file {p}: expected a mapping with a non-empty `automations:` list")
    names = set()
    for i, a in enumerate(doc["automations"]):
        where = f"automation file {p}, automation {i + 1} ({a.get('name') if isinstance(a, dict) else a!r})"
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not a["name"].strip():
            raise UserError(f"{where}: field 'name': expected a non-empty string")
        if a["name"] in names:
            raise UserError(f"{where}: field 'name': {a['name']!r} appears twice (names are how apply finds them)")
        names.add(a["name"])
        expected_event(a, where)
        actions = a.get("actions")
        if not isinstance(actions, list) or not actions:
            raise UserError(f"{where}: field 'actions': expected a non-empty list")
        for j, act in enumerate(actions):
            if isinstance(act, dict) and act.get("type") == NOTIFY:
                for f in ("subject", "body"):
                    if not isinstance(act.get(f), str) or not act[f].strip():
                        raise UserError(f"{where}, action {j + 1}: field '{f}': expected a message template")
    block = doc.get("block")
    if block is not None and (not isinstance(block, str) or not block.strip()):
        raise UserError(f"automation file {p}: field 'block': expected a notification block name")
    return Spec(str(p), block, doc["automations"])


def expected_event(automation: dict, where: str = "automation") -> str:
    """The one costgap event an automation's trigger expects."""
    trigger = automation.get("trigger")
    expect = trigger.get("expect") if isinstance(trigger, dict) else None
    if not isinstance(expect, list) or len(expect) != 1 or expect[0] not in EVENTS:
        raise UserError(f"{where}: field 'trigger.expect': expected exactly one of {', '.join(EVENTS)}, "
                        f"got {expect!r}")
    return expect[0]


def block_name(spec: Spec, override: str | None = None, action: dict | None = None) -> str:
    """The block an action sends through: its own `block:`, else --block, else $COSTGAP_ALERT_BLOCK, else the file's."""
    name = ((action or {}).get("block") or override or os.environ.get(BLOCK_ENV, "").strip() or spec.block)
    if not name:
        raise UserError(f"automation file {spec.path}: no notification block named: give --block NAME, set "
                        f"{BLOCK_ENV}, or put `block: NAME` in the file")
    return name


def blocks_needed(spec: Spec, override: str | None = None) -> list[str]:
    """Every block name the file's notification actions send through."""
    return sorted({block_name(spec, override, act) for a in spec.automations for act in a["actions"]
                   if isinstance(act, dict) and act.get("type") == NOTIFY})


def fill(spec: Spec, block_ids: dict[str, str], override: str | None = None) -> list[dict]:
    """The automations with each notification action's `block_document_id` filled in (copies)."""
    out = []
    for a in spec.automations:
        a = copy.deepcopy(a)
        for act in a["actions"]:
            if isinstance(act, dict) and act.get("type") == NOTIFY:
                act["block_document_id"] = str(block_ids[block_name(spec, override, act)])
                act.pop("block", None)
        out.append(a)
    return out
