"""`dossier check --npd` speaks node-problem-detector's custom-plugin protocol, and the set-up under
docs/npd/ is one NPD and Kubernetes accept.

The protocol is exercised as NPD runs a plugin (kubernetes/node-problem-detector v1.36.0,
pkg/custompluginmonitor/plugin/plugin.go): the real command in its own process group, killed at
the rule's timeout, at most 4 KiB of stdout read, trimmed, cut at max_output_length bytes; exit 0
OK, 1 NonOK, anything else Unknown. No cluster is needed for that. The DaemonSet is validated
against the Kubernetes 1.37 schemas (kubernetes-validate, strict: a field Kubernetes does not know
fails), the plugin configuration against NPD's own fields and rules (tests/fixtures/npd/, written
from NPD's config.go at v1.36.0)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from harness.check import npd
from harness.cli import build_parser
from tests.check_support import changed, reading

ROOT = Path(__file__).resolve().parents[2]
DAEMONSET = ROOT / "docs" / "npd" / "dossier-check-daemonset.yaml"
MONITOR = ROOT / "docs" / "npd" / "dossier-check-monitor.json"
NPD_SCHEMA = ROOT / "tests" / "fixtures" / "npd" / "custom-plugin-monitor.schema.json"
KUBERNETES = "1.37.0"
OK, NON_OK, UNKNOWN = 0, 1, 2
RULE_TIMEOUT_S = 60  # generous on this shared 2-core host (the interpreter alone takes seconds under load)


def run_as_npd(args: list[str], max_output: int = 80) -> tuple[int, str, bytes]:
    """(status, message, raw stdout) as NPD's plugin.run derives them."""
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "check", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # NPD: Setpgid, and a timeout kills the whole group
        cwd=ROOT,
    )
    try:
        out, _ = process.communicate(timeout=RULE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return UNKNOWN, "Timeout when running plugin", b""
    message = out[: npd.NPD_READ_LIMIT].strip()[:max_output].decode("utf-8")
    status = {0: OK, 1: NON_OK}.get(process.returncode, UNKNOWN)
    return status, message, out


def saved(tmp_path: Path, r: dict) -> str:
    path = tmp_path / "reading.json"
    path.write_text(json.dumps(r))
    return str(path)


def test_a_healthy_node_is_ok_with_its_line_as_the_message():
    status, message, out = run_as_npd(["--npd", "--expect-gpus", "0"])
    assert status == OK and "| PASS: healthy" in message and out.count(b"\n") == 1


def test_a_sick_node_is_non_ok_led_by_its_action_within_the_limit():
    status, message, out = run_as_npd(["--npd", "--expect-gpus", "1"])
    assert status == NON_OK
    assert message.startswith("FAIL INSPECT_HARDWARE: gpu_count: expected 1 GPU(s)")  # no GPU on the bus at all
    assert len(out.strip()) <= 80  # NPD cuts nothing: the message was fitted to the limit already


def test_a_node_that_cannot_be_judged_is_unknown(tmp_path):
    def nvml_down(r):
        r["nvml"] = r["devices"] = {"unavailable": "NVMLError_Unknown: Unknown Error"}
        r["kernel_module"] = {"version": "580.65.06", "banner": "NVRM version: ... Kernel Module  580.65.06 ..."}

    r = changed(reading("node-idle.json"), nvml_down)
    status, message, _ = run_as_npd(
        ["--npd", "--npd-max-output", "120", "--expect-gpus", "1", "--reading", saved(tmp_path, r)], 120
    )
    assert status == UNKNOWN and message.startswith("INCOMPLETE DRAIN: gpu_count: cannot count usable GPUs")
    assert len(message.encode()) <= 120


def test_an_error_before_any_judgement_is_unknown_with_a_message():
    status, message, _ = run_as_npd(["--npd"])
    assert status == UNKNOWN and message.startswith("UNKNOWN: dossier check could not judge: say what this node")


def test_the_message_is_cut_on_a_character_boundary():
    text = "FAIL DRAIN: gpu_sku: GPU0 is «H200 NVL» " + "é" * 60
    for limit in range(30, 100):
        fitted = npd.fitted(text, limit)
        assert len(fitted.encode("utf-8")) <= limit and text.startswith(fitted)


def manifests() -> list[dict]:
    return [doc for doc in yaml.safe_load_all(DAEMONSET.read_text()) if doc]


def test_the_daemonset_and_its_rbac_are_valid_kubernetes_objects():
    kinds = []
    for doc in manifests():
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        kinds.append(doc["kind"])
    assert kinds == ["ServiceAccount", "ClusterRoleBinding", "DaemonSet"]


def test_the_kubernetes_validation_refuses_a_field_kubernetes_does_not_know():
    daemonset = manifests()[-1]
    daemonset["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []  # volumeMounts, misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBERNETES, strict=True)


def monitor() -> dict:
    return json.loads(MONITOR.read_text())


def test_the_plugin_configuration_is_what_npd_accepts():
    config = monitor()
    jsonschema.validate(config, json.loads(NPD_SCHEMA.read_text()))
    conditions = {c["type"] for c in config["conditions"]}
    global_timeout = duration_s(config["pluginConfig"]["timeout"])
    for rule in config["rules"]:
        assert rule["type"] != "permanent" or rule["condition"] in conditions  # Validate: a preset condition
        assert duration_s(rule["timeout"]) <= global_timeout  # Validate: not above the global timeout


def test_the_npd_schema_refuses_a_misspelt_key():
    config = monitor()
    config["pluginConfig"]["max_output_lenght"] = 80
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, json.loads(NPD_SCHEMA.read_text()))


def test_the_rule_runs_dossier_check_npd_with_options_this_build_has_and_limits_that_fit():
    config, daemonset = monitor(), manifests()[-1]
    (rule,) = config["rules"]
    assert rule["path"] == "/usr/bin/nsenter"  # util-linux, which NPD's image installs
    args = rule["args"]
    dossier = args[args.index("--") + 1 :]
    assert dossier[0] == "/opt/rig-dossier/bin/dossier"
    parsed = build_parser().parse_args(dossier[1:])
    assert parsed.command == "check" and parsed.npd
    assert parsed.npd_max_output == config["pluginConfig"]["max_output_length"]
    assert parsed.timeout + 5 <= duration_s(rule["timeout"])  # the reading's bound, then room to start and answer
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    flag = next(a for a in container["command"] if a.startswith("--config.custom-plugin-monitor="))
    mounted = {v["configMap"]["items"][0]["path"] for v in daemonset["spec"]["template"]["spec"]["volumes"]}
    assert flag == f"--config.custom-plugin-monitor=/config/{MONITOR.name}" and MONITOR.name in mounted
    assert daemonset["spec"]["template"]["spec"]["hostPID"] is True  # nsenter --target=1 needs the host's pid 1


def duration_s(text: str) -> float:
    """A Go duration as these files write it: whole seconds or minutes ("15s", "1m")."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(text[:-1]) * units[text[-1]]
