#!/bin/sh
# The init of the kernel test bed (busybox, in an initramfs): mxctl against Debian's kernel
# and QEMU's emulated PCI functions. Every check prints `VMTEST <name> pass|fail <detail>`;
# then the machine powers off.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /run /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
for module in $(cat /etc/modules.order); do
    insmod "/lib/modules/$module" 2>/dev/null || echo "VMTEST modules fail insmod $module"
done

M="/bin/mxctl --config /dev/null --state-dir /run/mxctl --json -q"
check() { # check NAME EXPECTED-SUBSTRING OUTPUT
    if printf '%s' "$3" | grep -q -- "$2"; then
        echo "VMTEST $1 pass $2"
    else
        echo "VMTEST $1 fail expected $2 in: $(printf '%s' "$3" | tr '\n' ' ' | cut -c1-600)"
    fi
}
to_vfio() { # bind a function to vfio-pci
    d=/sys/bus/pci/devices/$1
    echo vfio-pci > "$d/driver_override"
    [ -e "$d/driver" ] && echo "$1" > "$d/driver/unbind"
    echo "$1" > /sys/bus/pci/drivers_probe
}
function_of() { # the address of the function with this vendor:device and class prefix
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat "$d/vendor"):$(cat "$d/device")" = "$1" ] && grep -q "^$2" "$d/class"; then
            echo "${d##*/}"
        fi
    done
}

echo "VMTEST-LISTING $(for d in /sys/bus/pci/devices/*; do printf '%s=%s:%s/%s/%s ' "${d##*/}" "$(cat $d/vendor)" "$(cat $d/device)" "$(cat $d/class)" "$(cat $d/reset_method 2>/dev/null | tr ' ' ,)"; done)"

VGA=$(function_of 0x1234:0x1111 0x0300 | head -n 1)
NVME=$(function_of 0x1b36:0x0010 0x0108 | head -n 1)
NICS=$(function_of 0x8086:0x10d3 0x0200)
NIC_ROOT=""; NIC_PORT=""; MF0=""; MF1=""
for nic in $NICS; do
    case "$nic" in
        0000:00:*) NIC_ROOT=$nic ;;
        *.1) MF1=$nic ;;
        *)
            if [ -e "/sys/bus/pci/devices/${nic%.0}.1" ]; then MF0=$nic; else NIC_PORT=$nic; fi ;;
    esac
done

out=$($M gpus 2>/tmp/stderr); check gpus_lists_the_display_function "\"device\": \"$VGA\"" "$out"
check gpus_reads_its_class "\"class\": \"030000\"" "$out"
out=$($M sync --pool enabled --after-boot yes 2>/tmp/stderr)
check sync_on_real_sysfs_has_no_partitionable_gpu '"reason": "no_partitionable_gpu"' "$out"

to_vfio "$NVME"
out=$($M reset --method pci --device "$NVME" --dry-run 2>/tmp/stderr)
check reset_dry_run_on_a_vfio_function '"outcome": "dry_run"' "$out"
out=$($M reset --method pci --device "$NVME" 2>/tmp/stderr)
check reset_of_a_vfio_function_with_flr_is_done '"outcome": "done"' "$out"

group=$(basename "$(readlink /sys/bus/pci/devices/$NVME/iommu_group)")
sleep 600 3<>"/dev/vfio/$group" &
holder=$!
sleep 1
out=$($M reset --method pci --device "$NVME" 2>/tmp/stderr)
check reset_with_its_vfio_group_held_is_gpu_busy '"reason": "gpu_busy"' "$out"
check reset_with_its_vfio_group_held_names_the_pid "$holder" "$out"
kill "$holder"

out=$($M reset --method pci --device "$NIC_ROOT" 2>/tmp/stderr)
check reset_of_a_function_bound_to_a_host_driver_is_driver_in_use '"reason": "driver_in_use"' "$out"
out=$($M reset --method pci --device "$VGA" 2>/tmp/stderr)
check reset_of_a_function_without_a_reset_method_is_reset_unsupported '"reason": "reset_unsupported"' "$out"
out=$($M reset --method pci --device 0000:00:1f.7 2>/tmp/stderr)
check reset_of_an_absent_address_is_unknown_device '"reason": "unknown_device"' "$out"

to_vfio "$MF0"; to_vfio "$MF1"
out=$($M reset --method pci --device "$MF0" 2>/tmp/stderr)
check reset_of_one_of_two_functions_on_a_bus_is_done '"outcome": "done"' "$out"
if printf '%s' "$out" | grep -q "$MF1"; then
    echo "VMTEST reset_of_one_of_two_functions_touches_it_alone fail $MF1 in: $(printf '%s' "$out" | tr '\n' ' ')"
else
    echo "VMTEST reset_of_one_of_two_functions_touches_it_alone pass $MF1 not in the group"
fi

to_vfio "$NIC_PORT"
methods=$(cat "/sys/bus/pci/devices/$NIC_PORT/reset_method")
check a_function_alone_behind_a_root_port_offers_pm_and_bus "pm bus" "$methods"
echo bus > "/sys/bus/pci/devices/$NIC_PORT/reset_method"
out=$($M reset --method pci --device "$NIC_PORT" --window 10 2>/tmp/stderr)
check a_bus_reset_the_root_port_never_completes_needs_a_cold_reboot '"reason": "reset_error"' "$out"
check a_bus_reset_is_refused_by_the_kernel_with_enotty 'Inappropriate ioctl for device' "$out"

# SR-IOV from the real kernel: QEMU's NVMe with `sriov_max_vfs=2` is a real PF. mxctl lists
# display-class functions only, so a root beside /sys shows the PF as one (its class, vendor
# and device files written there) while every SR-IOV file and link is the kernel's own: the
# numbers are read through links to the real files, the virtfn links lead to the real VFs,
# whose physfn the kernel wrote.
SRIOV_PF=""; SRIOV_PFS=0
for d in /sys/bus/pci/devices/*; do
    if [ -e "$d/sriov_totalvfs" ]; then SRIOV_PF=${d##*/}; SRIOV_PFS=$((SRIOV_PFS + 1)); fi
done
shim_root() { # a root whose one display function is the SR-IOV PF, as the kernel shows it now
    rm -rf /tmp/shim
    shim=/tmp/shim/bus/pci/devices/$SRIOV_PF
    mkdir -p "$shim"
    echo 0x030200 > "$shim/class"
    echo 0x10de > "$shim/vendor"
    echo 0x2335 > "$shim/device"
    ln -s "/sys/bus/pci/devices/$SRIOV_PF/sriov_totalvfs" "$shim/sriov_totalvfs"
    ln -s "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs" "$shim/sriov_numvfs"
    for link in /sys/bus/pci/devices/$SRIOV_PF/virtfn*; do
        [ -e "$link" ] && ln -s "$(readlink -f "$link")" "$shim/${link##*/}"
    done
}
if [ "$SRIOV_PFS" != 1 ]; then
    echo "VMTEST sriov_pf_found fail $SRIOV_PFS functions with sriov_totalvfs, one expected"
else
    echo "VMTEST sriov_pf_found pass $SRIOV_PF (driver $(basename "$(readlink "/sys/bus/pci/devices/$SRIOV_PF/driver")"))"
    echo 0 > "/sys/bus/pci/devices/$SRIOV_PF/sriov_drivers_autoprobe"
    shim_root
    out=$(/bin/mxctl --config /dev/null --state-dir /run/mxctl --json -q gpus --sysfs-root /tmp/shim 2>&1)
    check sriov_read_from_the_kernel_before_any_vf '"total_vfs": 2,' "$out"
    check sriov_read_from_the_kernel_lists_no_vf '"vfs": \[\]' "$out"
    if echo 2 > "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs"; then
        echo "VMTEST sriov_the_kernel_enables_two_vfs pass"
    else
        echo "VMTEST sriov_the_kernel_enables_two_vfs fail the write of sriov_numvfs was refused"
    fi
    shim_root
    VF0=$(basename "$(readlink -f "/sys/bus/pci/devices/$SRIOV_PF/virtfn0")")
    VF1=$(basename "$(readlink -f "/sys/bus/pci/devices/$SRIOV_PF/virtfn1")")
    out=$(/bin/mxctl --config /dev/null --state-dir /run/mxctl --json -q gpus --sysfs-root /tmp/shim 2>&1)
    check sriov_vfs_the_kernel_made_are_read_in_index_order "\"index\": 1, *\"device\": \"$VF1\"" "$(printf '%s' "$out" | tr -d '\n')"
    check sriov_vf0_is_read_at_its_address "\"device\": \"$VF0\"" "$out"
    text=$(/bin/mxctl --config /dev/null --state-dir /run/mxctl -q gpus --sysfs-root /tmp/shim 2>&1)
    check sriov_text_says_two_of_two "2 of 2" "$text"
    echo 0 > "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs" ||
        echo "VMTEST sriov_the_kernel_disables_the_vfs fail the write of sriov_numvfs was refused"
    shim_root
    out=$(/bin/mxctl --config /dev/null --state-dir /run/mxctl --json -q gpus --sysfs-root /tmp/shim 2>&1)
    check sriov_vfs_disabled_are_gone '"vfs": \[\]' "$out"

    # A vGPU apply on the real PF (tests/vm/vgpu/README.md): the stand-in sriov-manage writes
    # the kernel's sriov_numvfs, the kernel makes the VFs, mxctl reads them back and writes a
    # type to each; then leave, and the kernel removes them.
    rm -rf /tmp/vshim
    vshim=/tmp/vshim/bus/pci/devices/$SRIOV_PF
    mkdir -p "$vshim" /tmp/vshim/bus/pci/drivers/nvidia
    echo 0x030200 > "$vshim/class"
    echo 0x10de > "$vshim/vendor"
    echo 0x20f1 > "$vshim/device"
    ln -s /tmp/vshim/bus/pci/drivers/nvidia "$vshim/driver"
    ln -s "/sys/bus/pci/devices/$SRIOV_PF/sriov_totalvfs" "$vshim/sriov_totalvfs"
    ln -s "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs" "$vshim/sriov_numvfs"
    V="/bin/mxctl --config /dev/null --state-dir /run/mxctl-vgpu --lock-dir /run/mxctl-vgpu-lock --sysfs-root /tmp/vshim --json -q"
    apply="vgpu apply --vgpu-config /etc/vgpu/config.yaml --select two-10c --pool enabled --helper /bin/vgpu-helper --sriov-manage /bin/sriov-manage"
    out=$($V $apply 2>&1)
    check vgpu_apply_on_the_real_pf_is_done '"outcome": "done"' "$out"
    check vgpu_apply_made_real_vfs "2 /sys/bus/pci/devices/$SRIOV_PF/virtfn1" "$(cat "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs") $(ls -d /sys/bus/pci/devices/$SRIOV_PF/virtfn1)"
    VF1=$(basename "$(readlink -f "/sys/bus/pci/devices/$SRIOV_PF/virtfn1")")
    check vgpu_apply_wrote_a_type_on_each_vf "471 471" "$(cat /tmp/vshim/bus/pci/devices/*/nvidia/current_vgpu_type | tr '\n' ' ') $VF1"
    out=$($V $apply 2>&1)
    check vgpu_apply_again_writes_nothing '"vgpu_done": \[\]' "$(printf '%s' "$out" | tr -d '\n ' | sed 's/:/: /g')"
    out=$($V vgpu leave --pool enabled --helper /bin/vgpu-helper --sriov-manage /bin/sriov-manage 2>&1)
    check vgpu_leave_disables_the_real_vfs "0 done" "$(cat "/sys/bus/pci/devices/$SRIOV_PF/sriov_numvfs") $(printf '%s' "$out" | grep -o '"outcome": "[a-z_]*"' | head -n 1 | cut -d'"' -f4)"
fi

echo "VMTEST-DONE"
poweroff -f
