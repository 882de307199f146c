"""Transfer plots: a sweep figure per run, the peer heatmap only where a peer matrix was measured
(and why not otherwise), byte-identical output for identical documents."""

from harness.present.plots.transfer import heatmap_note, render
from tests.transfer_fixtures import FIXTURES, h200_document, two_gpu_document

H200X2_TOPO = FIXTURES / "h200x2" / "nvidia-smi-topo-m.txt"


def names(paths):
    return sorted(p.name for p in paths)


def test_two_gpus_with_peer_copies_get_a_heatmap(tmp_path):
    document = two_gpu_document(H200X2_TOPO, access=True, with_peer_copies=True)
    paths = render(document, tmp_path / "transfer")
    assert names(paths) == ["transfer-peer.png", "transfer-peer.svg", "transfer.png", "transfer.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert heatmap_note(document) is None


def test_one_gpu_gets_no_empty_heatmap_and_the_reason_is_written_down(tmp_path):
    document = h200_document()
    assert names(render(document, tmp_path / "transfer")) == ["transfer.png", "transfer.svg"]
    assert heatmap_note(document) == "no peer heatmap: 1 GPU measured: a peer matrix needs 2"


def test_refused_peer_access_gets_no_heatmap(tmp_path):
    document = two_gpu_document(H200X2_TOPO, access=False, with_peer_copies=False)
    assert names(render(document, tmp_path / "transfer")) == ["transfer.png", "transfer.svg"]
    assert "no peer access for 0->1, 1->0" in heatmap_note(document)


def test_plots_are_deterministic(tmp_path):
    document = two_gpu_document(H200X2_TOPO, access=True, with_peer_copies=True)
    first = [p.read_bytes() for p in sorted(render(document, tmp_path / "a" / "transfer"))]
    second = [p.read_bytes() for p in sorted(render(document, tmp_path / "b" / "transfer"))]
    assert first == second
