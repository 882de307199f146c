"""The CUDA driver API device view (harness.probes.cuda_driver).

This CPU machine has no libcuda.so.1 (tests/probes/test_health_software.py checks the real dlopen
failure the probe records). The call sequence, error words and record spelling are tested here
against a FAKE library object, FakeLibcuda, standing in for libcuda ONLY because no real one
exists here; its device answers are the real H200's (tests/fixtures/h200/health.idle.json,
taken through torch on the same card) and its error names/strings are cuda.h's and the driver's.
The real library is exercised on the H200 (see docs/health.md).
"""

import json

from harness.probes.cuda_driver import Driver, driver_view
from tests.h200_capture import FIXTURES

# cuda.h CUresult values with the driver's cuGetErrorName / cuGetErrorString words.
ERRORS = {
    100: (b"CUDA_ERROR_NO_DEVICE", b"no CUDA-capable device is detected"),
    101: (b"CUDA_ERROR_INVALID_DEVICE", b"invalid device ordinal"),
    999: (b"CUDA_ERROR_UNKNOWN", b"unknown error"),
}


def h200_device():
    return json.loads((FIXTURES / "health.idle.json").read_text())["torch_devices"][0]


class FakeLibcuda:
    """FAKE libcuda (no real one on this machine): the H200's answers through the driver's C signatures."""

    def __init__(self, device, fail=None, v2=True):
        self.device, self.fail, self.calls = device, fail or {}, []
        if v2:
            self.cuDeviceGetUuid_v2 = self._uuid
        else:
            self.cuDeviceGetUuid = self._uuid

    def _result(self, name):
        self.calls.append(name)
        return self.fail.get(name, 0)

    def cuGetErrorName(self, result, out):
        if result not in ERRORS:
            return 1  # CUDA_ERROR_INVALID_VALUE, as the driver answers for an unknown code
        out[0] = ERRORS[result][0]
        return 0

    def cuGetErrorString(self, result, out):
        if result not in ERRORS:
            return 1
        out[0] = ERRORS[result][1]
        return 0

    def cuDriverGetVersion(self, out):
        out.contents.value = 13000
        return self._result("cuDriverGetVersion")

    def cuInit(self, flags):
        assert flags == 0
        return self._result("cuInit")

    def cuDeviceGetCount(self, out):
        out.contents.value = 1
        return self._result("cuDeviceGetCount")

    def cuDeviceGet(self, out, ordinal):
        out.contents.value = ordinal
        return 101 if ordinal >= 1 else self._result("cuDeviceGet")

    def cuDeviceGetName(self, buffer, size, handle):
        buffer.value = self.device["name"].encode()[: size - 1]
        return self._result("cuDeviceGetName")

    def _uuid(self, out, handle):
        hexed = self.device["uuid"].removeprefix("GPU-").replace("-", "")
        out.contents.bytes[:] = list(bytes.fromhex(hexed))
        return self._result("uuid")

    def cuDeviceGetPCIBusId(self, buffer, size, handle):
        buffer.value = b"0000:00:06.0"  # the driver's 4-digit domain form
        return self._result("cuDeviceGetPCIBusId")

    def cuDeviceTotalMem_v2(self, out, handle):
        out.contents.value = round(self.device["total_memory_mib"] * 2**20)
        return self._result("cuDeviceTotalMem_v2")

    def cuDeviceGetAttribute(self, out, attribute, handle):
        out.contents.value = {
            16: self.device["multiprocessor_count"],
            75: int(self.device["compute_capability"].split(".")[0]),
            76: int(self.device["compute_capability"].split(".")[1]),
        }[attribute]
        return self._result("cuDeviceGetAttribute")


def test_driver_answers_give_the_record_torch_gave_on_the_h200():
    view = driver_view(Driver(FakeLibcuda(h200_device())))
    assert view["cuda_driver_api_version"] == "13.0" and view["cuda_initialised"] is True
    assert view["device_count"] == 1
    assert view["devices"] == [h200_device()]


def test_uuid_falls_back_to_v1_where_v2_is_absent():
    fake = FakeLibcuda(h200_device(), v2=False)
    assert driver_view(Driver(fake))["devices"][0]["uuid"] == h200_device()["uuid"]


def test_cuinit_failure_is_the_drivers_error_name_and_text():
    view = driver_view(Driver(FakeLibcuda(h200_device(), fail={"cuInit": 100})))
    reason = {"unavailable": "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected (cuInit)"}
    assert view == {
        "cuda_driver_api_version": "13.0",
        "cuda_initialised": False,
        "device_count": reason,
        "devices": reason,
    }


def test_one_failing_call_spoils_only_its_field():
    view = driver_view(Driver(FakeLibcuda(h200_device(), fail={"cuDeviceGetPCIBusId": 999})))
    device = view["devices"][0]
    assert device["pci_bus_id"] == {"unavailable": "CUDA_ERROR_UNKNOWN: unknown error (cuDeviceGetPCIBusId)"}
    assert device["uuid"] == h200_device()["uuid"]


def test_an_unknown_code_and_a_missing_function_are_said_plainly():
    fake = FakeLibcuda(h200_device(), fail={"cuDeviceGetCount": 12345})
    assert driver_view(Driver(fake))["devices"] == {
        "unavailable": "CUresult 12345 (cuGetErrorName does not know it) (cuDeviceGetCount)"
    }
    old_driver = FakeLibcuda(h200_device())
    old_driver.cuDeviceTotalMem_v2 = None  # a libcuda that does not export the function
    memory = driver_view(Driver(old_driver))["devices"][0]["total_memory_mib"]
    assert memory == {"unavailable": "cuDeviceTotalMem_v2 is not exported by this libcuda (driver too old?)"}


def test_no_driver_repeats_the_loaders_reason():
    why = {"unavailable": "CUDA driver library not loadable: libcuda.so.1: cannot open shared object file"}
    assert driver_view(None, why) == {
        "cuda_driver_api_version": why,
        "cuda_initialised": False,
        "device_count": why,
        "devices": why,
    }
