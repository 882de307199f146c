"""A probe that prints partial output, complains on stderr and exits 3."""

import sys

print('{"partial": ')
print("measuring...\nerror: the device went away", file=sys.stderr)
raise SystemExit(3)
