#!/usr/bin/env python3
"""A MIG session through NVIDIA's own Python binding (nvidia-ml-py's `pynvml`) against the
fake NVML, as a new user would write it, for one card of a scenario; then what the binding read
compared with what `gpu-partition-helper read` prints for the same state.

    session.py SCENARIO HELPER FAKE_NVML

The environment names the library (`LD_LIBRARY_PATH` holds it as `libnvidia-ml.so.1`) and its
state (`FAKE_NVML_STATE`, shared with the helper and `fake-nvml reset`). Where it names a sysfs
whose drivers' files answer (`FAKE_SYSFS_ROOT`, as `fake-driver-files host` gives it) and the
card has SR-IOV, vGPUs are written through the VFs' files, as a host's tools write them, and
NVML is asked what the driver made of them. Exits non-zero, saying
which step failed, at the first step that does not answer as the driver would.
"""
import ctypes
import errno
import json
import os
import subprocess
import sys

import pynvml as N

SCENARIO, HELPER, FAKE_NVML = sys.argv[1:4]
with open(SCENARIO) as f:
    CARD = json.load(f)["devices"][0]
PROFILES = {p["index"]: p for p in CARD["gpu_instance_profiles"]}
STEPS = []


def step(name):
    """Runs the decorated function as one step of the session, now, and records it."""
    def run(function):
        try:
            function()
        except Exception as error:  # noqa: BLE001 - every failure names its step
            print(f"FAIL {name}: {type(error).__name__}: {error}")
            sys.exit(1)
        STEPS.append(name)
        print(f"ok   {name}")
    return run


def refused(call, error_class):
    """`call` raises the binding's exception for NVML's error code."""
    try:
        call()
    except error_class:
        return
    raise AssertionError(f"expected {error_class.__name__}")


def text(value):
    return value.decode() if isinstance(value, bytes) else value


@step("init, nested init and one shutdown: the library stays")
def _():
    N.nvmlInit()
    N.nvmlInit()
    N.nvmlShutdown()
    assert N.nvmlDeviceGetCount() == 1


DEV = N.nvmlDeviceGetHandleByIndex(0)


@step("count, handle by index, name, UUID, PCI bus ID, architecture")
def _():
    assert N.nvmlDeviceGetCount() == 1
    assert text(N.nvmlDeviceGetName(DEV)) == CARD["name"], N.nvmlDeviceGetName(DEV)
    assert text(N.nvmlDeviceGetUUID(DEV)).startswith("GPU-")
    pci = N.nvmlDeviceGetPciInfo(DEV)
    assert text(pci.busId).lower() == CARD["pci_bus_id"].lower(), pci.busId
    # Every part gives its device ID (NVIDIA's vendor ID in the low half).
    assert pci.pciDeviceId == CARD["pci_device_id"] and pci.pciDeviceId & 0xFFFF == 0x10DE
    # A board serial as the driver prints one: thirteen digits (the fake's start with 0).
    serial = text(N.nvmlDeviceGetSerial(DEV))
    assert len(serial) == 13 and serial.isdigit() and serial.startswith("0"), serial
    # The part's architecture (its scenario names it; NVML answers nvml.h's number).
    architecture = getattr(N, "NVML_DEVICE_ARCH_" + CARD["architecture"].upper())
    assert N.nvmlDeviceGetArchitecture(DEV) == architecture, N.nvmlDeviceGetArchitecture(DEV)
    refused(lambda: N.nvmlDeviceGetHandleByIndex(1), N.NVMLError_InvalidArgument)


@step("memory info, v1 and v2: every part's scenario gives its total, as a real card does")
def _():
    total = CARD["memory_total_mib"]
    v1 = N.nvmlDeviceGetMemoryInfo(DEV)
    assert v1.total == total << 20 and v1.free + v1.used == v1.total
    v2 = N.nvmlDeviceGetMemoryInfo(DEV, version=N.nvmlMemory_v2)
    assert v2.total == total << 20 and v2.free + v2.reserved + v2.used == v2.total


def value(answer):
    """A number the binding answers, plain or as the ctypes object some calls return."""
    return getattr(answer, "value", answer)


def address(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value


@step("index, minor number, handle by UUID; no MIG device while MIG is off")
def _():
    assert value(N.nvmlDeviceGetIndex(DEV)) == 0
    assert value(N.nvmlDeviceGetMinorNumber(DEV)) == 0
    assert address(N.nvmlDeviceGetHandleByUUID(N.nvmlDeviceGetUUID(DEV))) == address(DEV)
    refused(lambda: N.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000"),
            N.NVMLError_NotFound)
    assert value(N.nvmlDeviceGetMaxMigDeviceCount(DEV)) == 0
    refused(lambda: N.nvmlDeviceGetMigDeviceHandleByIndex(DEV, 0), N.NVMLError_NotSupported)


@step("MIG off: a GPU instance is NOT_SUPPORTED")
def _():
    assert N.nvmlDeviceGetMigMode(DEV) == [0, 0]
    refused(lambda: N.nvmlDeviceCreateGpuInstance(DEV, PROFILES[0]["id"]), N.NVMLError_NotSupported)


@step("the vGPU type catalogue: IDs, names, profiles, framebuffer, maxima; MIG off creates time-sliced ones")
def _():
    types = CARD.get("vgpu_types", [])
    if not types:
        # A part whose scenario gives no catalogue answers as a card without vGPU support.
        refused(lambda: N.nvmlDeviceGetSupportedVgpus(DEV), N.NVMLError_NotSupported)
        return
    assert list(N.nvmlDeviceGetSupportedVgpus(DEV)) == [t["id"] for t in types]
    for t in types:
        assert text(N.nvmlVgpuTypeGetName(t["id"])) == t["name"], t
        assert text(N.nvmlVgpuTypeGetClass(t["id"])) == t["class"], t
        profile = N.nvmlVgpuTypeGetGpuInstanceProfileId(t["id"])
        if t.get("gpu_instance_profile_id") is None:
            # nvml.h's INVALID_GPU_INSTANCE_PROFILE_ID (the binding does not name it).
            assert profile == 0xFFFFFFFF, (t, profile)
        else:
            assert profile == t["gpu_instance_profile_id"], (t, profile)
        assert N.nvmlVgpuTypeGetFramebufferSize(t["id"]) == t["framebuffer_mib"] << 20, t
        assert N.nvmlVgpuTypeGetMaxInstances(DEV, t["id"]) == t["max_instances"], t
    time_sliced = [t["id"] for t in types if t.get("gpu_instance_profile_id") is None]
    assert list(N.nvmlDeviceGetCreatableVgpus(DEV)) == time_sliced
    refused(lambda: N.nvmlVgpuTypeGetName(1), N.NVMLError_InvalidArgument)


SYSFS = os.environ.get("FAKE_SYSFS_ROOT")
BDF = CARD["pci_bus_id"].lower()[-12:]
VGPU_TYPES = CARD.get("vgpu_types", [])
TIME_SLICED = [t for t in VGPU_TYPES if t.get("gpu_instance_profile_id") is None]


def sysfs(path, text):
    """One write(2) of `text` to the driver's file at `path` (under the card's directory)."""
    with open(f"{SYSFS}/bus/pci/devices/{BDF}/{path}", "w") as f:
        f.write(text)


def vf_type(index, type_id):
    sysfs(f"virtfn{index}/nvidia/current_vgpu_type", f"{type_id}\n")


def refused_by_driver(write, code):
    try:
        write()
    except OSError as error:
        assert error.errno == code, (error, code)
        return
    raise AssertionError(f"the driver took a write it refuses with {errno.errorcode[code]}")


def sriov_manage(flag):
    """NVIDIA's `sriov-manage` (the fake's) on the card: the PF takes no raw count itself."""
    subprocess.run([FAKE_NVML, "sriov-manage", flag, BDF], check=True, capture_output=True)


def with_vfs(run):
    """`run` between the card's VFs enabled and disabled by `sriov-manage`."""
    refused_by_driver(lambda: sysfs("sriov_numvfs", f"{CARD['sriov']['total_vfs']}\n"),
                      errno.ENOENT)
    sriov_manage("-e")
    try:
        assert open(f"{SYSFS}/bus/pci/devices/{BDF}/sriov_numvfs").read() == \
            f"{CARD['sriov']['total_vfs']}\n"
        run()
    finally:
        sriov_manage("-d")


@step("a time-sliced vGPU written through a VF's sysfs file: NVML's creatable list shrinks, a second type is EIO")
def _():
    if not (SYSFS and "sriov" in CARD and len(TIME_SLICED) > 1):
        print("     skipped: no served sysfs, or no SR-IOV with two time-sliced types on this card")
        return

    def run():
        first = max(TIME_SLICED, key=lambda t: t["max_instances"])
        other = next(t for t in TIME_SLICED if t["id"] != first["id"])
        vf_type(0, first["id"])
        # One type at a time while it has room: the list is that type's (nvml.h).
        assert list(N.nvmlDeviceGetCreatableVgpus(DEV)) == [first["id"]]
        refused_by_driver(lambda: vf_type(1, other["id"]), errno.EIO)
        # A type on a VF that has one is EPERM.
        refused_by_driver(lambda: vf_type(0, first["id"]), errno.EPERM)
        vf_type(0, 0)
        assert list(N.nvmlDeviceGetCreatableVgpus(DEV)) == [t["id"] for t in TIME_SLICED]

    with_vfs(run)


@step("MIG on, with the reset rule of the part")
def _():
    activation = N.nvmlDeviceSetMigMode(DEV, N.NVML_DEVICE_MIG_ENABLE)
    assert activation == N.NVML_SUCCESS, activation
    if CARD.get("mig_mode_change") == "reset":
        # Ampere: pending until a GPU reset.
        assert N.nvmlDeviceGetMigMode(DEV) == [0, 1]
        subprocess.run([FAKE_NVML, "reset", "--device", CARD["pci_bus_id"]], check=True)
        # The library reads its state again at the next init.
        N.nvmlShutdown()
        N.nvmlInit()
    assert N.nvmlDeviceGetMigMode(DEV) == [1, 1]


@step("the profile table: every index until INVALID_ARGUMENT, gaps NOT_SUPPORTED, each as published")
def _():
    index = 0
    while True:
        try:
            info = N.nvmlDeviceGetGpuInstanceProfileInfo(DEV, index)
        except N.NVMLError_InvalidArgument:
            break
        except N.NVMLError_NotSupported:
            assert index not in PROFILES, index
            index += 1
            continue
        want = PROFILES[index]
        got = (info.id, text(info.name), info.sliceCount, info.instanceCount,
               info.multiprocessorCount, info.copyEngineCount, info.decoderCount,
               info.jpegCount, info.ofaCount, info.memorySizeMB)
        expected = (want["id"], want["name"], want["slice_count"], want["instance_count"],
                    want["multiprocessor_count"], want["copy_engine_count"],
                    want["decoder_count"], want["jpeg_count"], want["ofa_count"],
                    want["memory_size_mb"])
        assert got == expected, (index, got, expected)
        index += 1
    assert index > max(PROFILES), index


def placements(profile_id):
    count = ctypes.c_uint(0)
    array = (N.c_nvmlGpuInstancePlacement_t * 16)()
    count.value = 16
    N.nvmlDeviceGetGpuInstancePossiblePlacements(DEV, profile_id, array, ctypes.byref(count))
    return [(array[i].start, array[i].size) for i in range(count.value)]


@step("possible placements of every profile, as published")
def _():
    for profile in PROFILES.values():
        want = [(p["start"], p["size"]) for p in profile["placements"]]
        assert placements(profile["id"]) == want, (profile["name"], placements(profile["id"]))


SMALL = PROFILES[0]


def beside_small(profile):
    """Whether a placement of `profile` leaves SMALL's last placement free."""
    last = SMALL["placements"][-1]
    return any(p["start"] + p["size"] <= last["start"] or p["start"] >= last["start"] + last["size"]
               for p in profile["placements"])


# The biggest profile that fits beside SMALL at its last placement.
BIG = max((p for p in PROFILES.values() if beside_small(p)), key=lambda p: p["slice_count"])
CREATED = {}


@step("a GPU instance at a placement, another where the driver chooses; both listed")
def _():
    last = SMALL["placements"][-1]
    at = N.c_nvmlGpuInstancePlacement_t()
    at.start, at.size = last["start"], last["size"]
    gi = N.nvmlDeviceCreateGpuInstanceWithPlacement(DEV, SMALL["id"], ctypes.byref(at))
    info = N.nvmlGpuInstanceGetInfo(gi)
    assert (info.profileId, info.placement.start, info.placement.size) == (SMALL["id"], last["start"], last["size"])
    CREATED["small"] = gi
    chosen = N.nvmlDeviceCreateGpuInstance(DEV, BIG["id"])
    info = N.nvmlGpuInstanceGetInfo(chosen)
    assert info.profileId == BIG["id"]
    CREATED["big"] = chosen
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(DEV, BIG["id"]) < BIG["instance_count"]


@step("an occupied placement is INSUFFICIENT_RESOURCES")
def _():
    last = SMALL["placements"][-1]
    at = N.c_nvmlGpuInstancePlacement_t()
    at.start, at.size = last["start"], last["size"]
    refused(lambda: N.nvmlDeviceCreateGpuInstanceWithPlacement(DEV, SMALL["id"], ctypes.byref(at)),
            N.NVMLError_InsufficientResources)


FILL = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}


@step("compute instances: the profile table, with and without a placement, listed")
def _():
    gi = CREATED["big"]
    slices = BIG["slice_count"]
    info = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, FILL[1], N.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    assert info.sliceCount == 1
    assert N.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, FILL[1]) == slices
    at = N.c_nvmlComputeInstancePlacement_t()
    at.start, at.size = slices - 1, 1
    placed = N.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, FILL[1], ctypes.byref(at))
    assert N.nvmlComputeInstanceGetInfo(placed).placement.start == slices - 1
    anywhere = N.nvmlGpuInstanceCreateComputeInstance(gi, FILL[1])
    assert N.nvmlComputeInstanceGetInfo(anywhere).placement.start == 0
    count = ctypes.c_uint(16)
    array = (N.c_nvmlComputeInstance_t * 16)()
    N.nvmlGpuInstanceGetComputeInstances(gi, FILL[1], array, ctypes.byref(count))
    assert count.value == 2
    CREATED["cis"] = [placed, anywhere]


@step("the MIG devices a device plugin walks: one per compute instance, the tail NOT_FOUND")
def _():
    most = value(N.nvmlDeviceGetMaxMigDeviceCount(DEV))
    assert most == max(p["instance_count"] for p in PROFILES.values()), most
    big = N.nvmlGpuInstanceGetInfo(CREATED["big"]).id
    found = []
    for index in range(most):
        try:
            mig = N.nvmlDeviceGetMigDeviceHandleByIndex(DEV, index)
        except N.NVMLError_NotFound:
            continue
        assert value(N.nvmlDeviceIsMigDeviceHandle(mig)) == 1
        assert address(N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)) == address(DEV)
        found.append((value(N.nvmlDeviceGetGpuInstanceId(mig)),
                      value(N.nvmlDeviceGetComputeInstanceId(mig))))
    cis = sorted((big, N.nvmlComputeInstanceGetInfo(ci).id) for ci in CREATED["cis"])
    assert sorted(found) == cis, (found, cis)
    assert value(N.nvmlDeviceIsMigDeviceHandle(DEV)) == 0
    refused(lambda: N.nvmlDeviceGetMigDeviceHandleByIndex(DEV, most), N.NVMLError_InvalidArgument)


@step("a GPU instance with compute instances is IN_USE to destroy")
def _():
    refused(lambda: N.nvmlGpuInstanceDestroy(CREATED["big"]), N.NVMLError_InUse)


@step("destroy: one compute instance, then the small GPU instance")
def _():
    N.nvmlComputeInstanceDestroy(CREATED["cis"][0])
    N.nvmlGpuInstanceDestroy(CREATED["small"])
    refused(lambda: N.nvmlGpuInstanceGetInfo(CREATED["small"]), N.NVMLError_InvalidArgument)


@step("NVML's own words for its errors")
def _():
    assert text(N.nvmlErrorString(N.NVML_ERROR_INSUFFICIENT_RESOURCES)) == "Insufficient Resources"
    assert text(N.nvmlErrorString(N.NVML_ERROR_IN_USE)) == "In use by another client"
    assert str(N.NVMLError(N.NVML_ERROR_NOT_SUPPORTED)) == "Not Supported"


def binding_view():
    """The card as the binding reads it: (profile ID, placement, its compute instances)."""
    seen = []
    for profile in PROFILES.values():
        count = ctypes.c_uint(16)
        array = (N.c_nvmlGpuInstance_t * 16)()
        N.nvmlDeviceGetGpuInstances(DEV, profile["id"], array, ctypes.byref(count))
        for i in range(count.value):
            info = N.nvmlGpuInstanceGetInfo(array[i])
            cis = []
            for ci_profile in range(8):
                try:
                    ci_count = ctypes.c_uint(16)
                    ci_array = (N.c_nvmlComputeInstance_t * 16)()
                    N.nvmlGpuInstanceGetComputeInstances(array[i], ci_profile, ci_array, ctypes.byref(ci_count))
                except (N.NVMLError_NotSupported, N.NVMLError_InvalidArgument):
                    continue
                for j in range(ci_count.value):
                    ci = N.nvmlComputeInstanceGetInfo(ci_array[j])
                    cis.append((ci.id, ci.profileId, ci.placement.start, ci.placement.size))
            seen.append((info.id, info.profileId, info.placement.start, info.placement.size, sorted(cis)))
    return sorted(seen)


@step("read back: what the binding reads is what gpu-partition-helper read prints")
def _():
    mine = binding_view()
    names = sorted((p["id"], p["name"]) for p in PROFILES.values())
    N.nvmlShutdown()
    bdf = CARD["pci_bus_id"].lower()[-12:]
    out = subprocess.run([HELPER, "read", "--device", bdf, "--format", "1"], check=True,
                         capture_output=True, text=True).stdout
    reply = json.loads(out)
    helper = sorted(
        (gi["id"], gi["profile_id"], gi["placement"]["start"], gi["placement"]["size"],
         sorted((ci["id"], ci["profile_id"], ci["placement"]["start"], ci["placement"]["size"])
                for ci in gi["compute_instances"]))
        for gi in reply["gpu_instances"])
    assert mine == helper, (mine, helper)
    assert sorted((p["id"], p["name"]) for p in reply["profiles"]) == names
    assert reply["mode"]["current"] == "enabled", reply["mode"]
    assert mine, "the read-back compared an empty card"


@step("a MIG-backed vGPU written through a VF's file holds its GPU instance: destroy is IN_USE")
def _():
    backed = [t for t in VGPU_TYPES
              if t.get("gpu_instance_profile_id") in {p["id"] for p in PROFILES.values()}]
    if not (SYSFS and "sriov" in CARD and backed):
        print("     skipped: no served sysfs, or no SR-IOV with MIG-backed types on this card")
        return
    N.nvmlInit()
    dev = N.nvmlDeviceGetHandleByIndex(0)

    def run():
        kind = backed[0]
        gi = N.nvmlDeviceCreateGpuInstance(dev, kind["gpu_instance_profile_id"])
        vf_type(0, kind["id"])
        refused(lambda: N.nvmlGpuInstanceDestroy(gi), N.NVMLError_InUse)
        vf_type(0, 0)
        N.nvmlGpuInstanceDestroy(gi)

    try:
        with_vfs(run)
    finally:
        N.nvmlShutdown()


@step("a shutdown past the init count is no error (nvml.h)")
def _():
    N.nvmlShutdown()


print(f"{len(STEPS)} steps passed on {CARD['name']}")
