"""The benchmarks read another process's CPU to the microsecond, ended threads included."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from a2a.bench.cpu import _ticks, process_cpu

# Spins 0.2 s on its main thread and 0.2 s on a second one, then waits to be killed.
_SPIN = """
import threading, time
def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
t = threading.Thread(target=spin, args=(0.2,))
t.start()
spin(0.2)
t.join()
print("done", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux process CPU clocks and /proc")
def test_a_processs_cpu_counts_its_ended_threads_too_finer_than_a_tick() -> None:
    child = subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"done\n"
        time.sleep(0.05)
        first = process_cpu(child.pid)
        assert 0.4 <= first < 1.5  # both threads' 0.2 s (one has ended), and starting Python
        assert abs(first - _ticks(child.pid)) < 0.05  # the same CPU as the kernel's ticks say
        time.sleep(0.05)
        assert process_cpu(child.pid) - first < 0.005  # asleep: nothing more
    finally:
        child.kill()
        child.wait()
    assert process_cpu(child.pid) == 0.0  # gone
    assert process_cpu(None) == 0.0
