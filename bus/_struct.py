"""The base of every wire type."""

from __future__ import annotations

import msgspec

__all__ = ["Wire"]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base of every wire type: camelCase keys, defaults omitted.

    ``kw_only`` holds for the fields a class declares itself, not for its subclasses'
    (msgspec's rule): a subclass that wants them keyword-only says so too.
    """
