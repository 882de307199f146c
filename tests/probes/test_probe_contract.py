"""The probe contract as stated in harness/probes/contract.py: a probe imports only the standard
library, torch, nvidia-ml-py and the probe side of the package (PROBE_SIDE), which is exactly what
images/stage-probe.sh copies into a probe image."""

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.probes import contract
from harness.probes.contract import PROBE_SIDE, within_contract

ROOT = Path(__file__).resolve().parents[2]


def probe_side_files() -> list[Path]:
    files = []
    for path in PROBE_SIDE:
        full = ROOT / path
        files += [full] if full.is_file() else sorted(full.rglob("*.py"))
    return [f for f in files if f.suffix == ".py" and "__pycache__" not in f.parts]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in PATH names, at any depth (inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            package = ROOT / node.module.replace(".", "/")
            found += [
                (node.lineno, f"{node.module}.{a.name}")
                for a in node.names
                if (package / f"{a.name}.py").exists() or (package / a.name / "__init__.py").exists()
            ]
    return found


def test_the_rule_names_what_the_contract_allows_and_refuses():
    for allowed in (
        "json",
        "os.path",
        "__future__",
        "torch.distributed",
        "pynvml",
        "harness",
        "harness.catalogue",
        "harness.analysis.bandwidth",
        "harness.probes.nvml",
    ):
        assert within_contract(allowed), allowed
    for refused in (
        "jsonschema",
        "cryptography",
        "jinja2",
        "rich",
        "matplotlib",
        "docker",
        "huggingface_hub",
        "safetensors",
        "numpy",
        "harness.registry",
        "harness.run.plan",
        "harness.bundle.view",
        "harness.present",
        "harness.judge",
        "harness.signing",
        "harness.schemas",
        "harness.errors",
        "harness.checkpoints",
        "harness.runners",
        "harness.commands",
        "harness.fleet",
    ):
        assert not within_contract(refused), refused


def test_every_import_statement_on_the_probe_side_is_within_the_contract():
    """Statically, so imports inside functions (torch, lazily) are held to it too."""
    outside = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in probe_side_files()
        for line, name in imported_names(path)
        if not within_contract(name)
    ]
    assert not outside, outside


HOOK = r"""
import importlib, json, sys
sys.path.insert(0, ROOT)
from harness.probes.contract import within_contract
refused = []

class Contract:
    # Refuses what a harness module imports outside the contract (torch's own imports are torch's).
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back
        importer = frame.f_globals.get("__name__", "") if frame else ""
        if importer.split(".")[0] == "harness" and not within_contract(name):
            refused.append(f"{importer} imports {name}")
            raise ImportError(f"outside the probe contract: {name}")
        return None

sys.meta_path.insert(0, Contract())
failed = {}
for module in MODULES:
    try:
        importlib.import_module(module)
    except Exception as exc:
        failed[module] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"refused": refused, "failed": failed, "loaded": sorted(m for m in sys.modules if m.startswith("harness"))}))
"""


def test_every_probe_side_module_imports_in_a_process_that_refuses_the_rest():
    modules = sorted(
        module_name(path) for path in probe_side_files() if path.name != "__main__.py"
    )  # __main__ runs the probe
    code = HOOK.replace("ROOT", repr(str(ROOT))).replace("MODULES", repr(modules))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["refused"] == [] and result["failed"] == {}, result
    assert all(within_contract(m) for m in result["loaded"]), result["loaded"]


def test_the_probe_image_holds_exactly_the_probe_side(tmp_path):
    subprocess.run(
        ["bash", str(ROOT / "images" / "stage-probe.sh"), str(tmp_path / "probe")],
        check=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=60,
    )
    staged = {p.relative_to(tmp_path / "probe").as_posix() for p in (tmp_path / "probe").rglob("*") if p.is_file()}
    expected = set()
    for path in PROBE_SIDE:
        full = ROOT / path
        expected |= (
            {path}
            if full.is_file()
            else {
                p.relative_to(ROOT).as_posix() for p in full.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            }
        )
    assert staged == expected


PUBLIC_PROBE_MODULES = (
    "harness.probes",
    "harness.probes.contract",
    "harness.probes.lifetime",
    "harness.probes.nvml",
    "harness.probes.policy",
    "harness.probes.scratch",
    "harness.probes.tensor_file",
)


def public_probe_modules() -> set[str]:
    """contract, policy (the options' replay policies), lifetime and scratch (a worker that ends with its
    parent, a folder a killed process does not leave), nvml, tensor_file, and each probe's package
    (harness/probes/NAME/: its OPTIONS)."""
    probes = ROOT / "harness" / "probes"
    return {*PUBLIC_PROBE_MODULES, *(f"harness.probes.{main.parent.name}" for main in probes.glob("*/__main__.py"))}


def test_the_host_imports_no_private_probe_module():
    """The host uses the probes' public modules only (contract, nvml, tensor_file, each probe's package
    for its OPTIONS), never a probe's helpers (harness/probes/NAME/*.py) or the probes' shared ones."""
    host = [p for p in (ROOT / "harness").rglob("*.py") if ROOT / "harness" / "probes" not in p.parents]
    public = public_probe_modules()
    users = [
        f"{p.relative_to(ROOT)} imports {name}"
        for p in host
        for _, name in imported_names(p)
        if name.startswith("harness.probes.") and name not in public
    ]
    assert not users, users


def test_a_stop_during_a_deferred_block_is_taken_once_the_block_ends():
    """A health probe stopped during torch's import aborted (pybind11's `terminate called after throwing`)
    instead of unwinding: a stop inside interrupts_deferred() is raised when the block ends, not inside it."""
    previous = signal.signal(signal.SIGTERM, contract._stop_as_interrupt)  # as probe_main installs it
    reached = []
    try:
        with pytest.raises(KeyboardInterrupt, match="signal 15"):
            with contract.interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                reached.append("the block went on after the signal")
        assert reached == ["the block went on after the signal"]
        assert signal.getsignal(signal.SIGTERM) is contract._stop_as_interrupt
        with pytest.raises(KeyboardInterrupt):  # outside the block a stop raises where it lands
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
    finally:
        signal.signal(signal.SIGTERM, previous)
