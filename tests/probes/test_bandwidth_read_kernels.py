"""The read kernel's variants (`--kernel read --read-kernel V`) on the CPU: the default reads as before, another
variant reads the same bytes and says how, a variant's sum is checked before any timing, and what a CPU cannot
run (an NVRTC kernel) or a variant given to another kernel is refused with one line (exit 2)."""

import json

import pytest
import torch

from harness.analysis.bandwidth import discrepancies
from harness.analysis.bandwidth.figures import KERNELS
from harness.cli import main
from harness.probes.bandwidth import read_kernels
from harness.probes.contract import ProbeUsageError
from harness.schemas import violations

FAST = ["--device", "cpu", "--size-mib", "1", "2", "--point-budget-s", "0.01", "--repeats", "1"]


def run(tmp_path, *extra):
    output = tmp_path / "read.json"
    code = main(["bandwidth", *FAST, "--kernel", "read", *extra, "-o", str(output), "--no-plot"])
    return code, json.loads(output.read_text()) if output.exists() else None


def test_the_default_read_kernel_is_torch_sum_and_its_document_says_so(tmp_path):
    assert read_kernels.DEFAULT == "torch-sum"
    code, document = run(tmp_path)
    assert code in (0, 1) and violations("bandwidth", document) == [] and discrepancies(document) == []
    assert document["byte_counting"]["torch_op"] == KERNELS["read"]["torch_op"]  # as every earlier document
    assert document["byte_counting"]["read_kernel"] == {"variant": "torch-sum"}
    assert document["byte_counting"]["reads"] == 1 and document["byte_counting"]["writes"] == 0


def test_another_variant_reads_the_same_bytes_and_names_how(tmp_path):
    code, document = run(tmp_path, "--read-kernel", "torch-mv")
    assert code in (0, 1) and violations("bandwidth", document) == [] and discrepancies(document) == []
    assert document["byte_counting"]["read_kernel"] == {"variant": "torch-mv"}
    assert document["byte_counting"]["torch_op"].startswith("torch.mv(a.view(-1, 4096)")
    point = document["sweep"][1]
    assert point["bytes_per_iteration"] == 2 * 2**20  # one read of the 2 MiB buffer, the rule unchanged


def test_what_a_cpu_cannot_run_is_refused(tmp_path, capsys):
    code, _ = run(tmp_path, "--read-kernel", "nvrtc-v4u4t512b4")
    assert code == 2 and "an NVRTC kernel needs a CUDA device (here: cpu)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        run(tmp_path, "--read-kernel", "nvrtc-nonesuch")
    assert exited.value.code == 2 and "invalid choice: 'nvrtc-nonesuch'" in capsys.readouterr().err


def test_a_variant_for_another_kernel_is_refused(tmp_path, capsys):
    code = main(["bandwidth", *FAST, "--kernel", "copy", "--read-kernel", "torch-mv", "-o", str(tmp_path / "c.json")])
    assert code == 2 and "only with --kernel read (not copy)" in capsys.readouterr().err


def test_a_variant_whose_sum_is_wrong_gives_no_figure():
    variants = read_kernels.Variants(torch, "torch-mv", "cpu")
    a = torch.rand(4 * read_kernels.ROW)
    kernel = variants.over(a, torch.empty(()))
    variants.check(kernel, a)  # the right sum passes
    wrong = read_kernels.ReadKernel(kernel, lambda: kernel.total() * 1.01)  # a kernel that misses 1% of its reads
    with pytest.raises(RuntimeError, match="its reads are wrong, no figure is taken"):
        variants.check(wrong, a)
    with pytest.raises(ProbeUsageError, match="are not rows of 4096"):
        variants.over(torch.rand(100), torch.empty(()))


def test_every_compiled_variant_has_its_own_source_and_a_grid_that_fits():
    sources = {c.name: read_kernels.source(c) for c in read_kernels.COMPILED}
    assert len(sources) == len(read_kernels.COMPILED)  # every name its own; two may share a source, not a grid
    shapes = {(c.vec, c.unroll, c.threads, c.streams, c.load, c.blocks) for c in read_kernels.COMPILED}
    assert len(shapes) == len(sources)
    for shape in read_kernels.COMPILED:
        text = sources[shape.name]
        resident = int(text.split("#define RESIDENT ")[1].split()[0])
        assert resident * shape.threads <= read_kernels.MAX_THREADS_PER_SM and 1 <= resident <= shape.blocks
        assert f"typedef float{shape.vec} vec_t;" in text and ("__ldcs" in text) == (shape.load == "cs")
        assert shape.name in read_kernels.NAMES and shape.name in read_kernels.DESCRIPTIONS[shape.name]
