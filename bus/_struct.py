"""The base of every wire type."""

from __future__ import annotations

import msgspec

__all__ = ["Wire"]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base of every wire type: camelCase keys, defaults omitted, keyword-only fields."""
