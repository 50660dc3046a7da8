"""The error tree is drawn once (``bus/errors.py``) and shown by ``a2a.errors``; the drawing
names every error class with its code, so it cannot drift from the classes."""

from __future__ import annotations

import inspect

import a2a.errors
import bus.errors


def test_the_drawing_names_every_error_with_its_code() -> None:
    drawing = bus.errors.__doc__ or ""
    classes = [
        obj
        for name in bus.errors.__all__
        if inspect.isclass(obj := getattr(bus.errors, name)) and issubclass(obj, bus.errors.A2AError)
    ]
    assert len(classes) > 20
    for cls in classes:
        line = next((line for line in drawing.splitlines() if f" {cls.__name__} " in f"{line} "), "")
        assert line, f"{cls.__name__} is missing from the drawing"
        if cls not in (bus.errors.A2AError, bus.errors.LimitExceeded):
            assert line.rstrip().endswith(cls.code), (cls.__name__, line)


def test_the_public_module_shows_the_same_tree_and_names() -> None:
    assert a2a.errors.__doc__ == bus.errors.__doc__
    assert a2a.errors.__all__ == bus.errors.__all__
    assert all(getattr(a2a.errors, name) is getattr(bus.errors, name) for name in a2a.errors.__all__)
