"""A probe that writes its pid to $DOSSIER_TEST_PIDFILE and waits to be interrupted."""

import os
import time

from harness.probes.contract import progress

progress(0, 100, "waiting")
pidfile = os.environ.get("DOSSIER_TEST_PIDFILE")
if pidfile:
    with open(pidfile + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(pidfile + ".tmp", pidfile)
time.sleep(120)
