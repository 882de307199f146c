"""XIDs in the kernel log: the reader's two sources (/dev/kmsg records, `dmesg` text) on real lines,
the XID line form NVIDIA documents, which XIDs fail a node (the catalogue's list, with sources),
and the time window.

Real lines: the H200's NVIDIA driver lines (tests/fixtures/h200/check/node-idle.json: a healthy
machine, no Xid) and /dev/kmsg records read on this project's CI VM (2026-12-01). The Xid lines
are written in NVIDIA's documented form (https://docs.nvidia.com/deploy/xid-errors/:
`NVRM: Xid (PCI:0000:xx:00): 79, pid=..., ...`) with the H200's bus address, constructed here,
except ROW_REMAP_XID, quoted from a real log in stas00/ml-engineering
(compute/accelerator/nvidia/debug.md, commit 7bc7c30).
"""

from __future__ import annotations

from harness import catalogue
from harness.analysis.verdict import Verdict
from harness.check import xid
from harness.check.expectation import Expectation
from harness.check.judge import judge
from harness.probes.check.kernel import _kmsg_record, kernel_log, kernel_log_from_dmesg
from tests.check_support import capture, changed, reading

FALLEN_OFF = "NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus."  # constructed
APP_ERROR = (
    "NVRM: Xid (PCI:0000:00:06): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
    "(GPC 0, TPC 0, SM 0): Out Of Range Address"
)  # constructed
OLD_FORM = (
    "NVRM: Xid (0000:00:06): 48, pid=77, An uncorrectable double bit error (DBE) has been detected."  # constructed
)
ROW_REMAP_XID = (
    "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."
)
SXID = (
    "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error"  # constructed
)
REAL_KMSG = [
    b"6,342,1326820,-;tokio-rt-worker (69): drop_caches: 3\n",
    b"6,193,295813,-;acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI "
    b"HPX-Type3]\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A08:00\n",
]
EXPECT = Expectation(gpus=1, sku="h200-sxm-141gb", sku_from="--sku")


def with_lines(*timed: tuple[float, str], uptime: float | None = None):
    def edit(r):
        r["kernel_log"]["lines"] += [{"uptime_s": t, "text": text} for t, text in timed]
        if uptime is not None:
            r["uptime_s"] = uptime

    return changed(reading(), edit)


def xid_finding(r, expect=EXPECT):
    return next(f for f in judge(r, expect) if f.name == "xid_events")


def test_the_documented_line_forms_parse_to_their_gpu_and_number():
    events = xid.parse(
        [
            {"uptime_s": 1.0, "text": FALLEN_OFF},
            {"uptime_s": 2.0, "text": OLD_FORM},
            {"uptime_s": 3.0, "text": ROW_REMAP_XID},
            {"uptime_s": 4.0, "text": SXID},
            {"uptime_s": 5.0, "text": "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04"},
        ]
    )
    assert [(e.xid, e.address) for e in events] == [(79, "0000:00:06"), (48, "0000:00:06"), (63, "0000:10:1c")]
    assert events[0].text.startswith("pid=1234") and events[0].uptime_s == 1.0
    assert xid.pci_key("00000000:00:06.0") == xid.pci_key("0000:00:06") == (0, 0, 6)


def test_the_fatal_list_is_the_catalogues_with_a_source_for_each():
    rules = catalogue.node_check_rules()
    fatal = xid.fatal()
    assert {48, 74, 79, 94, 95, 119, 120} <= set(fatal) and 13 not in fatal and 31 not in fatal
    for entry in fatal.values():
        assert entry["sources"] and all(source in rules["sources"] for source in entry["sources"])
    assert "azurehpc-health-checks" in rules["sources"]["azure"] and "DCGM" in rules["sources"]["dcgm"]


def test_the_real_healthy_h200_log_has_no_xid_and_passes():
    found = xid_finding(reading())
    assert found.verdict == Verdict.PASS and "no fatal XID since boot" in found.message
    lines = capture()["kernel_log"]["dmesg"]["nvidia_lines"]
    parsed = kernel_log_from_dmesg("\n".join(lines), "dmesg")
    assert parsed["driver_lines"] == 5 and parsed["lines"][2]["uptime_s"] == 0.677237
    assert parsed["lines"][2]["text"].startswith("NVRM: loading NVIDIA UNIX Open Kernel Module")


def test_a_fatal_xid_fails_the_node_and_an_application_xid_is_listed_only():
    found = xid_finding(with_lines((120.5, FALLEN_OFF), (121.0, FALLEN_OFF), (130.0, APP_ERROR)))
    assert found.verdict == Verdict.FAIL
    assert "XID 79 (GPU has fallen off the bus) on 0000:00:06 x2" in found.message
    assert "other XIDs (not fatal): 13 x1" in found.message
    only_app = xid_finding(with_lines((130.0, APP_ERROR)))
    assert only_app.verdict == Verdict.PASS and "13 x1" in only_app.message


def test_since_counts_only_recent_lines():
    r = with_lines((100.0, FALLEN_OFF), uptime=5000.0)
    assert xid_finding(r, Expectation(gpus=1, since_s=600)).verdict == Verdict.PASS  # logged 4900 s ago
    assert xid_finding(r, Expectation(gpus=1, since_s=5000)).verdict == Verdict.FAIL
    assert xid_finding(r, Expectation(gpus=1)).verdict == Verdict.FAIL  # default: since boot
    unknown = with_lines((100.0, FALLEN_OFF))  # the capture has no uptime: the window cannot be applied
    found = xid_finding(unknown, Expectation(gpus=1, since_s=600))
    assert found.verdict == Verdict.FAIL and "not applied" in found.message


def test_kmsg_records_as_the_kernel_writes_them():
    assert _kmsg_record(REAL_KMSG[0]) == (1.32682, "tokio-rt-worker (69): drop_caches: 3")
    assert _kmsg_record(REAL_KMSG[1])[1].endswith("HPX-Type3]")  # the KEY=VALUE continuation is not the message
    assert _kmsg_record(b"not a record") is None


def test_the_live_kernel_log_is_read_or_says_why_not():
    log = kernel_log()
    if "unavailable" in log:  # an unprivileged CI user: the reason is the OS's, with the remedy
        assert "/dev/kmsg" in log["unavailable"]
    else:
        assert log["source"] == "/dev/kmsg" and log["records_read"] > 0
        assert all(set(line) == {"uptime_s", "text"} for line in log["lines"])
