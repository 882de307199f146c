"""The precision formats verify holds a document's rows to (harness/analysis/precision/checks.py) are
the ones the probe measures: the same names, order, family, width and scaling, and each float
format's range as torch.finfo gives it (issue 28)."""

import torch

from harness.analysis.precision import checks as precision_checks
from harness.probes.precision.quantize import FORMATS, GROUP_SIZE


def test_the_checked_formats_are_the_probes_with_torchs_ranges():
    assert precision_checks.GROUP_SIZE == GROUP_SIZE
    assert list(precision_checks.FORMATS) == [f.name for f in FORMATS]
    for fmt in FORMATS:
        family, bits, scaling, range_max, smallest_normal = precision_checks.FORMATS[fmt.name]
        assert (family, bits, scaling) == (fmt.family, fmt.bits, fmt.scaling)
        if fmt.family == "float":
            info = torch.finfo(getattr(torch, fmt.dtype))
            assert (range_max, smallest_normal) == (float(info.max), float(info.tiny))
        else:
            assert (range_max, smallest_normal) == (float(fmt.qmax), None)
