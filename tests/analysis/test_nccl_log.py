"""harness/analysis/allreduce/nccl_log.py on real NCCL INFO lines (tests/fixtures/allreduce/nccl-debug.real-lines.log)."""

from pathlib import Path

from harness.analysis.allreduce import nccl_log

FIXTURE = Path(__file__).parents[1] / "fixtures" / "allreduce" / "nccl-debug.real-lines.log"


def test_reads_algorithms_transports_and_nvls_from_real_lines():
    parsed = nccl_log.parse(FIXTURE.read_text())
    # NCCL >= 2.19 form (names) and the older form (numeric codes: algo 0 = TREE, proto 1 = LL128)
    assert parsed["algorithms_by_bytes"] == {4: {"RING/SIMPLE": 1, "TREE/LL": 1}, 262144: {"TREE/LL128": 2}}
    assert parsed["transports"] == ["P2P/CUMEM", "SHM/direct/direct"]
    assert parsed["nvls_support"] == ["NVLS multicast support is not available on dev 5"]


def test_the_per_call_collective_trace_is_not_taken_for_an_algorithm_choice():
    line = (
        "host:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f recvbuff 0x7f count 1 datatype 7 op 0 "
        "root 0 comm 0x55 [nranks=16] stream 0x55"
    )
    assert nccl_log.parse(line)["algorithms_by_bytes"] == {}


def test_symmetric_kernel_form_is_read():
    line = "h:1:1 [0] NCCL INFO AllReduce [Symmetric]: 4096 Bytes -> Kernel AllReduce_AGxLL_R nchannels 4 nthreads 512 nWorks 1"
    assert nccl_log.parse(line)["algorithms_by_bytes"] == {4096: {"SYMMETRIC/AllReduce_AGxLL_R": 1}}
