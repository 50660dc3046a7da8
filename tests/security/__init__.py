"""Security tests: attacks on every input edge, against real servers configured as deployed."""
