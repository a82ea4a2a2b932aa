"""The options several commands share, checked in the user's words: the flag, the value, what is allowed.

    costgap targets --billing foo      # costgap: error: --billing 'foo': expected one of on_demand, ..., or target

The cost model checks the same values again (tasks.cost.model.CostOptions) in its own names, for callers
that are not the command line; here the refusal names the flag a person typed.
"""

from __future__ import annotations

from typing import Optional

from reports.text import figure
from tasks.errors import UserError


def billing(text: str, per_target: bool = True) -> Optional[str]:
    """A billing mode; 'target' (where allowed) means each target's own billing mode, None to the cost model."""
    from tasks.pricing.base import BILLING_MODES

    if per_target and text == "target":
        return None
    if text not in BILLING_MODES:
        also = ", or target (each target's own billing mode)" if per_target else ""
        raise UserError(f"--billing {text!r}: expected one of {', '.join(BILLING_MODES)}{also}")
    return text


def currency(text: str) -> str:
    """An ISO 4217 code costgap has FX rates for (upper-cased)."""
    from tasks.pricing.base import CURRENCIES

    code = (text or "").strip().upper()
    if code not in CURRENCIES:
        raise UserError(f"--currency {text!r}: not a currency costgap knows; expected an ISO 4217 code such as "
                        "USD, EUR or CNY")
    return code


def fraction(f: float) -> float:
    """--f: the fraction of an attempt's work lost per failure, in [0, 1]."""
    if not 0.0 <= f <= 1.0:
        raise UserError(f"--f {figure(f)}: expected the fraction of an attempt's work lost per failure, from 0 to 1 "
                        "(0.5: half, on average, without checkpoints)")
    return f
