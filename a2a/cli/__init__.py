"""The ``a2a`` command line."""

from .main import build_parser as build_parser
from .main import main as main

__all__ = ["build_parser", "main"]
