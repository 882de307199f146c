"""Plots rendered on the host from raw JSON (never by probes), deterministically."""
