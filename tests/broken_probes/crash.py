"""A probe that crashes after printing some progress."""

import sys

print("about to measure", file=sys.stderr)
raise RuntimeError("simulated driver failure in the middle of a measurement")
