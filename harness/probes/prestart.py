"""`python -m harness.probes.prestart MODULE [IMPORT ...]`: a probe process started ahead of its step.

It imports the listed modules (torch) and MODULE where it is a package (a probe's: its __init__, never its
__main__), else MODULE's package (a module's top level may be the probe itself), touching no GPU: importing
torch initialises no CUDA context and opens no NVML session. A probe package may define `prestart()`,
called then (it too touches no GPU: the stress probe starts its first worker ahead, harness.probes.stress.warm).
Then it waits for one line on stdin, {"argv": [...]}, the probe's arguments, given when its step starts; it
then runs MODULE as `python -m MODULE ARGV...` would (runpy, as __main__, sys.argv set alike), with stdin
closed. An empty stdin (the step did not run: discarded) ends it with exit 0. The runner that started it
records the probe's own command and says in its note when and how it was started (harness.runners.prestart).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import runpy
import sys


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m harness.probes.prestart MODULE [IMPORT ...]", file=sys.stderr)
        return 2
    module, imports = argv[0], argv[1:]
    spec = importlib.util.find_spec(module)
    package = module if spec is not None and spec.submodule_search_locations else module.rpartition(".")[0]
    for name in (*imports, package):
        if name:
            importlib.import_module(name)
    hook = getattr(sys.modules[module], "prestart", None) if package == module else None
    if callable(hook):
        hook()  # the probe's own start-ahead (the stress probe's first worker: harness.probes.stress.warm)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    request = json.loads(line)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)
    sys.argv = [module, *[str(a) for a in request["argv"]]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
