#!/bin/sh
# The reboot bed's GPU, made at every boot before the sync: QEMU cannot give a PCI function
# NVIDIA's vendor ID, so an H100 80GB bound to `nvidia` is a directory of the sysfs files
# mxctl reads (vendor, device, class, the driver link), bind-mounted over /sys/bus/pci/devices
# (the package's units run unchanged on it); the fake NVML's state lives on /run, so a reboot
# really loses every GPU instance and the MIG mode, as it does on Hopper.
set -e
mkdir -p /run/vmbed/pci-devices/0000:3b:00.0 /run/vmbed/drivers/nvidia
d=/run/vmbed/pci-devices/0000:3b:00.0
echo 0x10de >"$d/vendor"
echo 0x2330 >"$d/device"
echo 0x030200 >"$d/class"
ln -sfn /run/vmbed/drivers/nvidia "$d/driver"
mount --bind /run/vmbed/pci-devices /sys/bus/pci/devices
