"""Host-side rendering of probe documents (Markdown). Probes never render; this reads raw JSON."""
