"""Issue 37, case 1: their plan is data. Every option of every probe in the registry declares how a replay
may take it (harness.probes.policy), and harness.run.policy.vet does what each declares: a value it
takes is checked (a number in range, a shape as a shape, a dtype from the list) and written as this
build's own words; an option naming a file, a process or a host of theirs is left out and said; one the
step re-makes here is left to the step. A new option without a policy, or without a sample here, fails
`test_every_option_of_every_probe_has_a_policy_and_a_sample`."""

from __future__ import annotations

import importlib

import pytest

from harness import registry
from harness.errors import UsageError
from harness.probes.bandwidth import read_kernels
from harness.probes.policy import REFUSE, REMAKE, TAKE
from harness.registry.steps import RunState
from harness.run import replay
from harness.run.policy import vet
from tests.accept_support import h200_bandwidth

READ_KERNEL = read_kernels.NAMES[0]
# (probe, flag): (words a replay takes, or refuses or re-makes; words it refuses as bad input, or None)
SAMPLES = {
    ("health", "--torch"): ([], None),
    ("health", "--under-load"): (["8"], ["100000"]),
    ("health", "--sample-interval"): (["0.1"], ["100"]),
    ("health", "--during-load"): (["1", "4242"], None),
    ("health", "--load-window"): (["2"], ["-1"]),
    ("health", "--load-what"): (["their load"], None),
    ("bandwidth", "--size-mib"): (["1", "4"], ["1e9"]),
    ("bandwidth", "--repeats"): (["3"], ["1000000000"]),
    ("bandwidth", "--spec-gbps"): (["4800"], ["1e12"]),
    ("bandwidth", "--kernel"): (["triad"], ["rm"]),
    ("bandwidth", "--read-kernel"): ([READ_KERNEL], ["$(id)"]),
    ("bandwidth", "--device"): (["cpu"], ["/dev/nvidia0"]),
    ("bandwidth", "--device-index"): (["1"], ["-5"]),
    ("bandwidth", "--point-budget-s"): (["0.05"], ["86400"]),
    ("bandwidth", "--repeat-budget-s"): (["2"], ["86400"]),
    ("bandwidth", "--compare-sku"): (["h200-sxm-141gb"], ["../../etc/passwd"]),
    ("roofline", "--bandwidth-gbps"): (["4245.5"], None),
    ("roofline", "--dtype"): (["fp8"], ["fp4"]),
    ("roofline", "--peak-tflops"): (["989"], ["1e30"]),
    ("roofline", "--check-dtypes"): (["fp16", "tf32"], ["int1"]),
    ("roofline", "--shapes"): (["256x256x256:mine"], ["$(id)"]),
    ("roofline", "--shapes-file"): (["/home/them/.aws/credentials"], None),
    ("roofline", "--no-default-shapes"): ([], None),
    ("roofline", "--max-square"): (["4096"], ["100000000"]),
    ("roofline", "--prefill-tokens"): (["2048"], ["99999999"]),
    ("roofline", "--decode-tokens"): (["1", "64"], ["99999999"]),
    ("roofline", "--max-shape-seconds"): (["5"], ["1e6"]),
    ("roofline", "--max-operand-mib"): (["512"], ["1e12"]),
    ("roofline", "--tile"): (["128x256"], ["128x256;rm"]),
    ("roofline", "--no-fusion"): ([], None),
    ("roofline", "--fusion-elements"): (["1024"], ["1e30"]),
    ("roofline", "--device"): (["cpu"], ["tpu"]),
    ("precision", "--file"): (["/their/disk/model.safetensors"], None),
    ("precision", "--tensor"): (["embedding=embeddings.word_embeddings.weight"], ["x=$(id)"]),
    ("precision", "--tensor-index"): (['{"a": 1}'], None),
    ("precision", "--provenance"): (['{"repo": "x"}'], None),
    ("precision", "--device"): (["cpu"], ["gpu"]),
    ("allreduce", "--world-size"): (["2,4"], ["2;reboot"]),
    ("allreduce", "--backend"): (["gloo"], ["mpi"]),
    ("allreduce", "--min-bytes"): (["8"], ["1T"]),
    ("allreduce", "--max-bytes"): (["64M"], ["100000G"]),
    ("allreduce", "--launcher"): (["spawn"], ["env"]),
    ("allreduce", "--master-addr"): (["10.0.0.1"], None),
    ("allreduce", "--master-port"): (["29500"], None),
    ("allreduce", "--time-budget-s"): (["0.2"], ["1e6"]),
    ("allreduce", "--warmup"): (["5"], ["1e9"]),
    ("allreduce", "--min-iters"): (["5"], ["0"]),
    ("allreduce", "--max-iters"): (["1000"], ["1e12"]),
    ("allreduce", "--size-timeout-s"): (["120"], ["1e9"]),
    ("allreduce", "--init-timeout-s"): (["300"], ["1e9"]),
    ("allreduce", "--no-nccl-log"): ([], None),
    ("transfer", "--sizes"): (["4K", "1M"], ["1P"]),
    ("transfer", "--device-index"): (["0", "1"], ["99999"]),
    ("transfer", "--point-budget-s"): (["0.1"], ["1e9"]),
    ("transfer", "--skip"): (["peer"], ["everything"]),
    ("transfer", "--device"): (["cpu"], ["xpu"]),
    ("stress", "--seconds"): (["60"], ["1e9"]),
    ("stress", "--dtype"): (["bf16"], ["fp64"]),
    ("stress", "--shape"): (["512x512x1024"], ["512x512"]),
    ("stress", "--memory-share"): (["0.5"], ["2"]),
    ("stress", "--memory-chunk-mib"): (["256"], ["1e12"]),
    ("stress", "--no-memory-test"): ([], None),
    ("stress", "--no-check"): ([], None),
    ("stress", "--inject-fault"): (["gemm"], ["disk"]),
    ("stress", "--sample-interval-s"): (["0.1"], ["1e6"]),
    ("stress", "--seed"): (["7"], ["-1"]),
    ("stress", "--device"): (["cpu"], ["fpga"]),
}


def every_option():
    return [(entry, option) for entry in registry.PROBES for option in entry.options]


def parsed(probe: str, args) -> dict:
    args = list(args) + (["--file", "x"] if probe == "precision" and "--file" not in args else [])
    return vars(importlib.import_module(f"harness.probes.{probe}").build_parser().parse_known_args(args)[0])


def test_every_option_of_every_probe_has_a_policy_and_a_sample():
    missing = [
        f"{entry.name} {option.flags[0]}"
        for entry, option in every_option()
        if option.replay is None or (entry.name, option.flags[0]) not in SAMPLES
    ]
    assert not missing, f"options without a replay policy or a sample in this test: {missing}"
    assert len(SAMPLES) == len(every_option())


@pytest.mark.parametrize(("probe", "flag"), sorted(SAMPLES), ids=lambda v: str(v))
def test_each_option_is_taken_refused_or_re_made_as_it_declares(probe, flag):
    entry = registry.spec(probe)
    option = next(o for o in entry.options if o.flags[0] == flag)
    good, bad = SAMPLES[(probe, flag)]
    given = [flag, *good]
    if probe == "precision" and flag != "--file":
        given += ["--file", "/their/disk/model.safetensors"]  # required by the probe's parser
    vetted = vet(probe, probe, entry.options, given)
    said = " ".join(vetted.refused)
    if option.replay.policy == TAKE:
        assert flag in vetted.args and not said
        assert parsed(probe, vetted.args)[option.dest] == parsed(probe, given)[option.dest]
        if bad is not None:
            with pytest.raises(UsageError, match=f"their plan's {probe} step"):
                vet(probe, probe, entry.options, [flag, *bad] + given[len(good) + 1 :])
    else:
        assert flag not in vetted.args and not any(word in vetted.args for word in good if word.startswith("/"))
        assert (flag in said) == (option.replay.policy == REFUSE), said
        assert option.replay.policy in (REFUSE, REMAKE) and option.replay.why


def test_their_words_become_this_builds_words():
    """An abbreviated flag, `--opt=value` and an unknown option: parsed as the probe parses them."""
    options = registry.spec("roofline").options
    vetted = vet("roofline", "roofline", options, ["--dty=fp16", "--shapes-f", "/etc/shadow", "--no-fus"])
    assert vetted.args == ("--dtype", "fp16", "--no-fusion")
    assert vetted.refused == ("their --shapes-file is not taken (a file of their machine): the step runs without it",)
    with pytest.raises(UsageError, match="are not this build's: unrecognized arguments: --rm"):
        vet("roofline", "roofline", options, ["--rm", "-rf"])


def test_a_plan_naming_a_file_of_theirs_runs_without_it_saying_so_before_any_probe():
    """Case 1: a signer adds --shapes-file FILE to the roofline step; the replay never passes it, says so,
    and the step's figures are not comparable."""
    entry = {
        "step": "roofline",
        "kind": "probe",
        "probe": "roofline",
        "status": "completed",
        "argv": [
            "python",
            "-m",
            "harness.probes.roofline",
            "--dtype",
            "fp32",
            "--shapes-file",
            "/root/.aws/credentials",
        ],
    }

    class View:
        steps = [entry]
        commands = {"runner": {"name": "local"}, "options": {}}

    made = replay.derive(View(), "their bundle x (sha256 abc)")
    state = RunState(analyses=registry.analysis_module)
    state.add("bandwidth", h200_bandwidth(), "bandwidth")
    args = made.plan[0].arguments(state).args
    assert "--shapes-file" not in args and "/root/.aws/credentials" not in args
    assert made.said == (
        "roofline: their --shapes-file is not taken (a file of their machine): the step runs without it",
    )
    assert made.unhonoured == {"roofline": made.said[0].removeprefix("roofline: ")}
