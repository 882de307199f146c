"""A probe whose JSON is well-formed but breaks its schema (a number where text belongs)."""

import json

print(json.dumps({"probe": "badschema", "contract_version": 1, "started_at": 12345}))
