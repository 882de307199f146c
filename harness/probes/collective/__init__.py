"""Probe processes that start one worker process per rank or GPU: `supervisor` starts, watches and
reaps the workers (a dead or hung worker is a recorded failure, never a hang), `worker` is one
all-reduce rank. Shared by the allreduce and stress probes."""
