#!/bin/sh
# The reboot bed's GPU, made at every boot before the sync: QEMU cannot give a PCI function
# NVIDIA's vendor ID, so an H100 80GB bound to `nvidia` is a directory of the sysfs files
# mxctl reads (vendor, device, class, the driver link), bind-mounted over /sys/bus/pci/devices
# (the package's units run unchanged on it); the fake NVML's state lives on /run, so a reboot
# really loses every GPU instance, the MIG mode and every VF with its vGPU type, as it does on
# Hopper.
set -e
mkdir -p /run/vmbed/pci-devices/0000:3b:00.0 /run/vmbed/drivers/nvidia
d=/run/vmbed/pci-devices/0000:3b:00.0
echo 0x10de >"$d/vendor"
echo 0x2330 >"$d/device"
echo 0x030200 >"$d/class"
ln -sfn /run/vmbed/drivers/nvidia "$d/driver"
# SR-IOV capable, its VFs disabled, as a host boots (the fake's sriov-manage makes them here).
echo 4 >"$d/sriov_totalvfs"
echo 0 >"$d/sriov_numvfs"
mount --bind /run/vmbed/pci-devices /sys/bus/pci/devices
