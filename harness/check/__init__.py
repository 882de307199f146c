"""`dossier check`, the quick node check (docs/check.md): what the node should have (`expectation`), the
judgement of a node reading (`judge`, `xid`), the answer (`result`) and Slurm's drain and resume (`drain`).
The reading itself is measured on the probe side, by harness/probes/check/."""
