"""Exports for monitoring: `--prometheus FILE` on check, run, accept and fleet collect (node_exporter's
textfile collector format, written atomically by prometheus_client)."""
