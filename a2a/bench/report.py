"""The bench report as a table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .throughput import MODES, PROCESSES, BenchReport

__all__ = ["render"]


def render(report: BenchReport) -> Group:
    calls = Table(title=f"Calls ({report.loop} event loop)", title_justify="left")
    for column in (
        "mode",
        "throughput (calls/s, 64 in flight)",
        "ratio to raw",
        "p50 µs",
        "p99 µs",
        "p50 added µs",
    ):
        calls.add_column(column, justify="right" if column != "mode" else "left")
    for mode, label in MODES.items():
        calls.add_row(
            label,
            f"{report.throughput[mode]:,.0f}",
            "1.000" if mode == "raw" else f"{report.ratios[mode]:.3f}",
            f"{report.latency_p50_us[mode]:.0f}",
            f"{report.latency_p99_us[mode]:.0f}",
            "" if mode == "raw" else f"{report.added_p50_us[mode]:.0f}",
        )
    cpu = Table(title="CPU per call (µs, 64 in flight; each process's CPU-time clock)", title_justify="left")
    for column in ("mode", *PROCESSES, "callee / raw's", "caller / raw's"):
        cpu.add_column(column, justify="right" if column != "mode" else "left")
    raw = report.cpu_us["raw"]
    for mode, label in MODES.items():
        figures = report.cpu_us[mode]
        cpu.add_row(
            label,
            *(f"{figures[p]:.1f}" for p in PROCESSES),
            f"{figures['callee'] / max(raw['callee'], 1e-9):.2f}",
            f"{figures['caller'] / max(raw['caller'], 1e-9):.2f}",
        )
    registry = Table(title="find_best_agent (µs)", title_justify="left")
    for column in ("instances", "Redis script p50", "p99", "local view p50", "p99"):
        registry.add_column(column, justify="right")
    for size, figures in report.find_best_us.items():
        registry.add_row(
            f"{int(size):,}",
            f"{figures['redis_p50']:.0f}",
            f"{figures['redis_p99']:.0f}",
            f"{figures['view_p50']:.0f}",
            f"{figures['view_p99']:.0f}",
        )
    m = report.memory
    memory = Text(
        f"after {m['calls']:,.0f} calls and 200 timeouts: pending futures {m['pending_before']:.0f} -> "
        f"{m['pending_after']:.0f}, RSS {m['rss_before_mb']:.1f} -> {m['rss_after_mb']:.1f} MB, "
        f"late replies dropped {m['late_replies']:.0f}"
    )
    disturbed = sum(w.disturbed for w in report.windows)
    note = Text(
        f"{len(report.windows)} windows, {disturbed} left out as disturbed (CPU calibration > 1.3x median)"
    )
    targets = Text()
    for name, met in report.targets.items():
        targets.append(("met   " if met else "MISSED ") + name + "\n", style="green" if met else "red")
    return Group(calls, cpu, registry, memory, note, targets)
