"""`python -m harness.probes.check`: this node's reading for `dossier check`, as JSON on stdout
(schemas/check-reading.schema.json); `dossier check --reading F` judges it."""

from __future__ import annotations

import json

from harness.probes.check import read

if __name__ == "__main__":
    print(json.dumps(read(), indent=1, sort_keys=True, allow_nan=False))
