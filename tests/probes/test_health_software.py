"""The idle health path's torch, cuDNN, NCCL and device facts, read without importing torch."""

import ctypes
import ctypes.util
import json
import shutil
import subprocess
import sys

import pytest

from harness.analysis.health.contracts import evaluate
from harness.probes.health.torch_files import (
    nccl,
    nccl_version_text,
    software_facts,
    torch_build,
    torch_directory,
    version_file_facts,
)
from harness.probes.loaded_libraries import mapped_file, open_library
from tests.h200_capture import FIXTURES


def torch_answers():
    """torch's own version and CUDA build, from a separate process that imports it."""
    out = subprocess.run(
        [sys.executable, "-c", "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda]))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def dlopen_error(name):
    """The dynamic loader's own text for `name`, or None when it loads here."""
    try:
        ctypes.CDLL(name)
    except OSError as exc:
        return str(exc)
    return None


def test_version_file_matches_torch_itself():
    """Installed torch (2.13 CPU here): version.py parsed == torch.__version__ / torch.version.cuda."""
    version, cuda = torch_answers()
    facts = torch_build(torch_directory())
    assert facts["torch_version"] == version
    if cuda is None:
        assert "built without CUDA" in facts["torch_cuda_build"]["unavailable"]
    else:
        assert facts["torch_cuda_build"] == cuda
    assert facts["torch_version_source"].endswith("version.py (parsed with ast; torch not imported)")


def test_version_file_is_parsed_never_run(tmp_path):
    """torch 2.11+cu130's lines as its version.py writes them; a statement in the file must not run."""
    path = tmp_path / "version.py"
    marker = tmp_path / "ran"
    path.write_text(
        "from typing import Optional\n__version__ = '2.11.0+cu130'\ndebug = False\n"
        "cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"
        f"open({str(marker)!r}, 'w').write('x')\n"
    )
    assert version_file_facts(path) == {"__version__": "2.11.0+cu130", "debug": False, "cuda": "13.0", "hip": None}
    assert not marker.exists()
    assert torch_build(tmp_path) == {
        "torch_version": "2.11.0+cu130",
        "torch_cuda_build": "13.0",
        "torch_version_source": f"{path} (parsed with ast; torch not imported)",
    }


def test_missing_or_broken_version_file_is_a_reason(tmp_path):
    assert "find_spec('torch') found no module" in torch_build(None)["torch_version"]["unavailable"]
    assert "version.py unreadable: FileNotFoundError" in torch_build(tmp_path)["torch_version"]["unavailable"]
    (tmp_path / "version.py").write_text("__version__ = compute()\n")
    assert "no literal __version__" in torch_build(tmp_path)["torch_version"]["unavailable"]


def test_nccl_version_codes():
    """NCCL_VERSION_CODE from nccl.h: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9."""
    assert nccl_version_text(22809) == "2.28.9"  # the H200 image's NCCL (h200-baseline.md)
    assert nccl_version_text(2708) == "2.7.8"
    assert nccl_version_text(21803) == "2.18.3"


@pytest.mark.skipif(dlopen_error("libnccl.so.2") is None, reason="libnccl.so.2 loads on this machine")
def test_no_nccl_here_records_the_loaders_own_error():
    facts = nccl(torch_directory())
    reason = facts["nccl_version"]["unavailable"]
    assert dlopen_error("libnccl.so.2") in reason and "nvidia.nccl" in reason
    assert facts["nccl_available"] is False and facts["nccl_library"] == facts["nccl_version"]


def test_a_library_opened_by_name_is_named_by_the_file_mapped():
    """A real library (zlib) through the loader's search: the file named is the one mapped."""
    name = ctypes.util.find_library("z")
    if name is None:
        pytest.skip("no zlib shared library here")
    lib, where = open_library(name, ())
    assert lib is not None and where == mapped_file("libz.so")
    assert where.startswith("/") and "libz.so" in where


def test_a_package_lib_folder_comes_before_the_loaders_search(tmp_path, monkeypatch):
    """The lib/ of a (namespace) package found by find_spec, as nvidia.nccl's is; a real library copied there."""
    name = ctypes.util.find_library("z")
    if name is None:
        pytest.skip("no zlib shared library here")
    system = mapped_file("libz.so") or open_library(name, ())[1]
    folder = tmp_path / "vendorns" / "zlibpkg" / "lib"
    folder.mkdir(parents=True)
    shutil.copy(system, folder / name)
    monkeypatch.syspath_prepend(str(tmp_path))
    lib, where = open_library(name, ("vendorns.zlibpkg",))
    assert lib is not None and where == str(folder / name)
    sibling, where = open_library(name, ("vendorns.otherpkg",))  # another lib/ of the same namespace
    assert sibling is not None and where == str(folder / name)
    missing, why = open_library("libdoesnotexist.so.7", ("vendorns.zlibpkg", "vendorns.absent"))
    assert missing is None and "libdoesnotexist.so.7: cannot open shared object file" in why["unavailable"]


@pytest.mark.skipif(dlopen_error("libcuda.so.1") is None, reason="libcuda.so.1 loads on this machine")
def test_no_libcuda_here_records_the_loaders_own_error():
    facts = software_facts()
    text = dlopen_error("libcuda.so.1")
    assert facts["cuda_driver_library"] == {"unavailable": f"CUDA driver library not loadable: {text}"}
    assert facts["cuda_driver_api_version"] == facts["cuda_driver_library"]
    assert facts["torch_imported"] is False and "CUDA driver API via ctypes" in facts["device_view_source"]
    assert facts["torch_cuda_available"] is False and "unavailable" in facts["torch_devices"]


def test_idle_probe_never_imports_torch():
    """measure() of the idle path in a fresh interpreter leaves torch out of sys.modules."""
    code = (
        "import sys; from harness.probes import health; "
        "d = health.measure(health.build_parser().parse_args([])); "
        "print('torch' in sys.modules, d['torch_imported'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]


def test_torch_flag_imports_torch():
    code = (
        "import sys; from harness.probes import health; "
        "d = health.measure(health.build_parser().parse_args(['--torch'])); "
        "print('torch' in sys.modules, d['torch_imported'], d['software']['torch_version_source'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split()[:2] == ["True", "True"] and "torch imported" in out.stdout


def h200_idle():
    return json.loads((FIXTURES / "health.idle.json").read_text())


def test_contract_evidence_says_where_the_facts_came_from():
    """The real H200 facts (taken with torch imported), then the same facts as the idle path states them."""
    torch_path = {c["name"]: c for c in evaluate(h200_idle())}
    assert torch_path["nccl_loads"]["evidence"].endswith("loaded by torch; torch.distributed NCCL backend available")
    assert torch_path["driver_supports_torch_cuda_build"]["evidence"].endswith("; CUDA initialised")
    facts = h200_idle()
    facts["torch_imported"] = False
    facts["software"]["nccl_library"] = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
    driver_path = {c["name"]: c for c in evaluate(facts)}
    assert {n: c["status"] for n, c in driver_path.items()} == {n: c["status"] for n, c in torch_path.items()}
    assert "NCCL 2.28.9 loaded from /opt/torch/" in driver_path["nccl_loads"]["evidence"]
    assert "cuInit; torch not imported" in driver_path["driver_supports_torch_cuda_build"]["evidence"]
    facts["software"].update(
        nccl_version={"unavailable": "libnccl.so.2: cannot open shared object file"}, nccl_available=False
    )
    assert {c["name"]: c["status"] for c in evaluate(facts)}["nccl_loads"] == "fail"
