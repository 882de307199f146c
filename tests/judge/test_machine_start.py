"""Which machine start a bundle ran on (harness.judge.reproduction.environment.instance_of), and the case a
pair is judged in: the same start and GPUs, or another start or GPU of the SKU."""

from __future__ import annotations

import copy

from harness.judge.facts import BundleFacts
from harness.judge.reproduction import environment
from tests.accept_support import h200_health, view_of

LENT = ["0::/process_api/858681c7ee5adfef9101f0c2dda589e6"]  # a lent H200's process cgroup (c1, 2026-12-02)


def identity(cgroup=None, boot=None, uuid=None) -> environment.Identity:
    idle = copy.deepcopy(h200_health()[0])
    if cgroup is not None:
        idle["host"]["container"] = {**(idle["host"].get("container") or {}), "cgroup": cgroup}
    if boot is not None:
        idle["host"]["boot_id"] = boot
    if uuid is not None:
        idle["devices"][0]["uuid"] = uuid
    return environment.identity(BundleFacts(view_of({"health": idle})))


def test_a_lent_machines_instance_id_names_its_start():
    one, two = identity(LENT), identity(LENT)
    assert one.instance == "cgroup " + LENT[0] and one.same_start(two)
    assert not one.same_start(identity(["0::/process_api/7140a88660429bc6d70736c170ee2e12"]))


def test_the_instance_wins_over_the_boot_id_and_a_plain_cgroup_names_no_start():
    """Lent machines one after another may share a host kernel (one boot id): the finer instance decides."""
    assert identity(LENT, boot="b1").instance == "cgroup " + LENT[0]
    assert identity(["0::/"], boot="b1").instance == "boot b1"
    assert identity(["0::/"], boot="b1").same_start(identity(["0::/user.slice"], boot="b1"))
    plain = identity(["0::/"])
    assert plain.instance is None and not plain.same_start(identity(["0::/"]))  # unknown is never the same


def test_another_gpu_on_the_same_start_is_another_case():
    assert not identity(LENT).same_start(identity(LENT, uuid="GPU-another"))
