"""A local agent that cannot start: it complains on stderr and exits with code 7."""

import sys

sys.stderr.write("fatal: no configuration found\n")
sys.exit(7)
