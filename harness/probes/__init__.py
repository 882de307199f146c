"""Probes: one module each, run as its own process (`python -m harness.probes.NAME`).

The contract (see `contract.py`): a probe imports only the standard library, torch and
nvidia-ml-py; it writes exactly one JSON document on stdout, shaped by
`schemas/NAME.schema.json`; everything else it says goes to stderr. The host side
(runners, validation, bundles) never lives here.
"""

# The explicit registry: probe name -> the lab step it implements.
PROBES: dict[str, str] = {
    "health": "M1T5 toolchain and health diagnostics",
    "bandwidth": "M1T1 HBM bandwidth sweep",
    "roofline": "M1T2 roofline",
    "precision": "M1T3 precision of real checkpoint tensors",
    "allreduce": "M1T4 all-reduce curves",
}
