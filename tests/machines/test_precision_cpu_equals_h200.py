"""The precision step's figures are the same bits on the CPU as on the H200's CUDA (issue 40 moves `dossier
run`'s precision step to the CPU, beside the stress step): the committed campaign dossier's precision document
(tests/fixtures/h200/campaign/c1-r1.tar.gz, computed on CUDA) against the same tensors of the packaged
all-MiniLM-L6-v2 file measured here on the CPU, compared exactly (harness.analysis.precision)."""

import json
import tarfile
from pathlib import Path

from harness.analysis.precision.compare import compare_measurements
from harness.cli import main

CAMPAIGN = Path(__file__).parents[1] / "fixtures" / "h200" / "campaign" / "c1-r1.tar.gz"


def test_the_cpu_gives_the_h200s_precision_figures_bit_for_bit(tmp_path):
    with tarfile.open(CAMPAIGN) as bundle:
        theirs = json.load(bundle.extractfile("raw/precision.json"))
    assert theirs["device"] == "cuda"
    tensors = [word for t in theirs["tensors"] for word in ("--tensor", f"{t['role']}={t['name']}")]
    output = tmp_path / "precision.json"
    code = main(
        ["precision", "--offline", "--cache-dir", str(tmp_path / "cache"), "--device", "cpu", *tensors]
        + ["-o", str(output)]
    )
    mine = json.loads(output.read_text())
    assert code == 0 and mine["device"] == "cpu"
    assert compare_measurements(theirs, mine) == []
    assert [t["sha256"] for t in mine["tensors"]] == [t["sha256"] for t in theirs["tensors"]]
