"""Alerts: what counts as a change worth telling, decided once for the Prefect events and the site.

    .venv/bin/pytest -q tests/test_alerts_decide.py tests/test_alerts_policy.py tests/test_alerts_warehouse.py

config.py (event names, AlertConfig, Change), decide.py (the decisions, pure), policy.py (no storms: what
is news given what was sent; the events), evaluate.py (the decisions on a warehouse connection:
decisions, pending, recent_changes, record), samples.py (one sample of each event), automations.py (the automation
files in deploy/automations/). Nothing here emits or opens anything: flows/alerts.py does.
"""

from tasks.alerts.config import EVENTS, AlertConfig, Change
from tasks.alerts.evaluate import decisions, pending, recent, recent_changes, record

__all__ = ["EVENTS", "AlertConfig", "Change", "decisions", "pending", "recent", "recent_changes", "record"]
