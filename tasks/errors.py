"""Errors a person can act on. Anything raised as UserError is printed as one line, exit 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or config: the message names the file, the field, the value and what was expected."""
