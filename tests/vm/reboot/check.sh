#!/bin/sh
# The reboot bed's checks, one phase per boot (the phase is kept on the disk): 0, a layout
# applied, then a real reboot; 1, after it, with no command from here: the restore ran once at
# boot, before a unit ordered after mxctl-layout.target, and the layout holds; then the restore
# turned off in the config and another reboot; 2, the host says the layout drifted. Each check
# prints `VMTEST <name> pass|fail <detail>`.
pass() { echo "VMTEST $1 pass $2"; }
fail() { echo "VMTEST $1 fail $2"; }
ok() { if [ "$2" = 0 ]; then pass "$1" "$3"; else fail "$1" "$3"; fi; }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }
show() { systemctl show -p "$2" --value "$1"; }
phase=$(cat /var/lib/vmbed/phase 2>/dev/null || echo 0)
labels=/etc/kubernetes/node-feature-discovery/features.d/mxctl
reboot_now() {
    echo "$1" >/var/lib/vmbed/phase
    sync
    systemctl reboot --no-block
    exit 0
}
echo "VMTEST-LISTING phase $phase, boot $(cat /proc/sys/kernel/random/boot_id)"

case "$phase" in
0)
    [ "$(show mxctl-sync.service Result)" = success ]
    ok the_first_boot_sync_ran $? "$(mxctl status | head -n 2 | tr '\n' ' ')"
    out=$(mxctl --json partition apply --config /var/lib/vmbed/layout.yaml --select all-balanced 2>&1)
    has "$out" '"outcome": "done"'
    ok a_layout_is_applied $? "$(echo "$out" | grep -m1 '"outcome"')"
    mxctl partition assert --config /var/lib/vmbed/layout.yaml --select all-balanced >/tmp/assert 2>&1
    ok the_layout_holds_before_the_reboot $? "$(tail -n 1 /tmp/assert)"
    reboot_now 1
    ;;
1)
    starts=$(journalctl -b -q -u mxctl-restore.service -o cat | grep -c '^Starting')
    result=$(show mxctl-restore.service Result)
    code=$(show mxctl-restore.service ExecMainStatus)
    [ "$starts" = 1 ] && [ "$result" = success ] && [ "$code" = 0 ]
    ok the_restore_ran_once_at_boot $? "$starts start(s) in this boot's journal, Result=$result ExecMainStatus=$code"
    restored=$(show mxctl-restore.service ExecMainExitTimestampMonotonic)
    client=$(show vmbed-client.service ExecMainStartTimestampMonotonic)
    [ "${restored:-0}" -gt 0 ] && [ "${client:-0}" -gt "${restored:-0}" ]
    ok the_client_started_after_the_restore_ended $? "restore ended at ${restored}us, the client started at ${client}us"
    drifted=$(journalctl -b -q -u mxctl-sync.service -o cat | grep -m1 'gpu-partitioning-reason')
    has "$drifted" layout_drifted
    ok the_boot_sync_saw_the_layout_drifted $? "$drifted"
    grep -q '^nvmlDeviceSetMigMode 1' /run/vmbed/nvml.log &&
        [ "$(grep -c '^nvmlDeviceCreateGpuInstanceWithPlacement' /run/vmbed/nvml.log)" = 4 ]
    ok the_reboot_lost_the_layout_and_the_restore_made_it_again $? "$(grep -c '^nvmlDevice\(SetMigMode\|CreateGpuInstanceWithPlacement\)' /run/vmbed/nvml.log) writes since boot"
    mxctl partition assert --config /var/lib/vmbed/layout.yaml --select all-balanced >/tmp/assert 2>&1
    ok the_layout_holds_after_the_reboot $? "$(tail -n 1 /tmp/assert)"
    status=$(mxctl --json status)
    has "$status" '"status": "active"' && has "$status" '"reason": "ready"' && has "$status" '"holds": "holds"'
    ok the_status_is_active_ready $? "$(mxctl status | head -n 2 | tr '\n' ' ')"
    grep -qx 'mxctl.feature.node.kubernetes.io/layout-state=holds' "$labels" &&
        grep -qx 'mxctl.feature.node.kubernetes.io/status=active' "$labels"
    ok the_labels_say_the_layout_holds $? "$(grep -v '^#' "$labels" | tr '\n' ' ')"
    sed -i 's/^restore-at-boot = .*/restore-at-boot = disabled/' /etc/mxctl.conf
    grep -qx 'restore-at-boot = disabled' /etc/mxctl.conf || echo 'restore-at-boot = disabled' >>/etc/mxctl.conf
    reboot_now 2
    ;;
2)
    said=$(journalctl -b -q -u mxctl-restore.service -o cat | grep -m1 'restore-at-boot is disabled')
    [ -n "$said" ] && [ "$(show mxctl-restore.service Result)" = success ]
    ok a_restore_turned_off_does_nothing $? "$said"
    status=$(mxctl --json status)
    has "$status" '"status": "entering"' && has "$status" '"reason": "layout_drifted"'
    ok with_restore_off_the_status_is_entering_layout_drifted $? "$(mxctl status | head -n 3 | tr '\n' ' ')"
    grep -qx 'mxctl.feature.node.kubernetes.io/layout-state=drifted' "$labels"
    ok with_restore_off_the_labels_say_drifted $? "$(grep 'layout' "$labels" | tr '\n' ' ')"
    echo "VMTEST-DONE"
    systemctl poweroff --no-block
    ;;
esac
