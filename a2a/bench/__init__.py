"""Measurements kept in the repository: context bloat (seed 000) and throughput benchmarks."""
