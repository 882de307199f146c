"""Rig Dossier: audited, reproducible GPU health and performance dossiers."""

__version__ = "0.1.0"
