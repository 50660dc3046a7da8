"""Child processes of this one: how a child is tied to the life of the process that started it."""

from .lifetime import die_with_parent as die_with_parent

__all__ = ["die_with_parent"]
