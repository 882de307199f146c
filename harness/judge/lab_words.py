"""What each of the lab's success criteria asks (lab-m1.txt's words) and what it is called in a few
words: report.md heads each criterion with its label ("Memory bandwidth") and says what is asked
below it; the criterion's name ("bandwidth", "idle-load") is only a reference beside the words."""

from __future__ import annotations

HEALTH_TEXT = (
    "health.json names the driver, framework CUDA build, visible devices, topology, active processes, "
    "clocks, power, and ECC state, or records why a field is unavailable."
)
BANDWIDTH_TEXT = (
    "Three large-buffer bandwidth medians vary by less than 5% and the median is within 15% of a "
    "known-good result from the same GPU SKU and form factor."
)
ROOFLINE_TEXT = (
    "The roofline uses the measured bandwidth and matching dense-compute peak; every measured GEMM is "
    "classified before the run and explained afterward."
)
PRECISION_TEXT = (
    "The precision table includes three real checkpoint tensors and explains at least one range, "
    "outlier, or scaling reversal."
)
ALLREDUCE_TEXT = (
    "On a multi-GPU host, both normal and peer-to-peer-disabled all-reduce curves identify a "
    "startup-to-bandwidth knee. On a one-GPU host, the limitation is recorded rather than simulated."
)
IDLE_LOAD_TEXT = "(Step 7) Low idle clocks rise under work and no unexpected process shares the device."

LABELS = {
    "health": "Health and toolchain",
    "bandwidth": "HBM bandwidth",
    "roofline": "GEMM roofline (every GEMM classified and explained)",
    "precision": "Precision of checkpoint tensors",
    "allreduce": "All-reduce between GPUs",
    "idle-load": "Clocks, power and processes under load",
}
