"""Test-only probes and plans for the bundle mechanics (run, sign, verify), never lab results.

`tick` really measures something small (sha256 throughput of this machine); `fails` exits with
an error after printing partial output; `slow` waits to be interrupted.
"""
