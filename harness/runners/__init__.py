"""Runners start a probe process somewhere (here, or in a container) and record it."""
