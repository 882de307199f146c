"""A probe that hangs, with a child process, until killed."""

import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
time.sleep(600)
