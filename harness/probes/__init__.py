"""Probes: one folder each (NAME/__init__.py the probe, __main__.py runs it, its helpers beside it),
run as its own process (`python -m harness.probes.NAME`); what two probes share sits here
(contract, timing, nvml, devices, topology, ...).

The contract (harness/probes/contract.py): a probe imports the standard library, torch,
nvidia-ml-py and the probe side of this package only; it writes exactly one JSON document on
stdout, shaped by `schemas/NAME.schema.json`; everything else it says goes to stderr. Its
options are declared once, in its OPTIONS. Which probes the host runs, and how, is the
registry's (harness/registry/); the host side (runners, validation, bundles) never lives here.
"""
