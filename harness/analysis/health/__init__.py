"""The health probe's analysis (harness/probes/health/): `figures` the headlines and where a document
disagrees; `contracts` (with `device_contracts` and `contract_facts`) the toolchain and device
contracts re-judged from the facts; `diff` the idle/load comparison (the health-diff step); `fleet`
the figures `dossier fleet collect` compares."""

from harness.analysis.health.declared import FIGURES
from harness.analysis.health.figures import discrepancies, headlines

__all__ = ["FIGURES", "discrepancies", "headlines"]
