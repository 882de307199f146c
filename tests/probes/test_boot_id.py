"""health's host facts name the machine start: the kernel's boot id, or why it cannot be read."""

from __future__ import annotations

from harness.probes.health import host


def test_the_boot_id_is_read_from_the_kernel(tmp_path):
    path = tmp_path / "boot_id"
    path.write_text("0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6\n")
    assert host.boot_id(path) == "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"


def test_an_unreadable_or_empty_boot_id_says_why(tmp_path):
    missing = host.boot_id(tmp_path / "absent")
    assert set(missing) == {"unavailable"} and "absent" in missing["unavailable"]
    (tmp_path / "empty").write_text("\n")
    assert "empty" in host.boot_id(tmp_path / "empty")["unavailable"]


def test_this_machines_host_facts_carry_one():
    facts = host.host_facts()
    assert isinstance(facts["boot_id"], str) or set(facts["boot_id"]) == {"unavailable"}
