#!/bin/sh
# The reboot bed's checks, one phase per boot (the phase is kept on the disk): 0, a vGPU config
# applied (its MIG layout all-balanced, a type on four VFs), then a real reboot; 1, after it,
# with no command from here: the restore ran once at boot, before a unit ordered after
# mxctl-layout.target, and the layout holds, VFs and types too; then the sync
# timer set to a short interval, one GPU instance destroyed through the fake NVML, and, with no
# command from here, the timer's sync says the layout drifted within one interval; then the
# interval back to its default, the restore turned off in the config and another reboot; 2, the
# host says the layout drifted, and the timer is back to five minutes. Each check prints
# `VMTEST <name> pass|fail <detail>`.
pass() { echo "VMTEST $1 pass $2"; }
fail() { echo "VMTEST $1 fail $2"; }
ok() { if [ "$2" = 0 ]; then pass "$1" "$3"; else fail "$1" "$3"; fi; }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }
show() { systemctl show -p "$2" --value "$1"; }
phase=$(cat /var/lib/vmbed/phase 2>/dev/null || echo 0)
labels=/etc/kubernetes/node-feature-discovery/features.d/mxctl
# CLOCK_BOOTTIME in microseconds, which is systemd's monotonic clock on a machine that never
# suspended (the journal's and the timer's ...Monotonic times).
now_us() { awk '{ printf "%.0f\n", $1 * 1000000 }' /proc/uptime; }
seconds() { awk -v us="$1" 'BEGIN { printf "%.2f\n", us / 1000000 }'; }
timer_drop_in() { ls /run/systemd/generator*/mxctl-sync.timer.d/50-sync-interval.conf 2>/dev/null | head -n 1; }
# systemctl show writes every ...USec... property as a time span ("1min 7.968123s"): in
# microseconds.
span_us() {
    awk '{
        us = 0
        for (i = 1; i <= NF; i++) {
            n = $i + 0; u = $i; sub(/^[0-9.]+/, "", u)
            if (u == "us" || u == "μs") m = 1; else if (u == "ms") m = 1e3; else if (u == "s") m = 1e6
            else if (u == "min") m = 60e6; else if (u == "h") m = 3600e6; else if (u == "d") m = 86400e6
            else if (u == "" && n == 0) m = 0; else { bad = 1; exit }
            us += n * m
        }
    } END { if (!bad && NR) printf "%.0f\n", us }'
}
label() { sed -n "s|^mxctl.feature.node.kubernetes.io/$1=||p" "$labels"; }
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
    # A vGPU config: MIG on, sriov-manage -e (the fake's, at NVIDIA's path), all-balanced's GPU
    # instances, a vGPU type on four VFs.
    out=$(mxctl --json vgpu apply --vgpu-config /var/lib/vmbed/vgpu.yaml --select balanced-vgpu 2>&1)
    has "$out" '"outcome": "done"'
    ok a_layout_is_applied $? "$(echo "$out" | grep -m1 '"outcome"')"
    mxctl vgpu assert --vgpu-config /var/lib/vmbed/vgpu.yaml --select balanced-vgpu >/tmp/vassert 2>&1
    ok the_vgpu_config_holds_before_the_reboot $? "$(tail -n 1 /tmp/vassert)"
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
    journalctl -b -q -u mxctl-sync.service -o cat | grep -q 'vfs_gone'
    ok the_reboot_lost_the_vfs $? "$(journalctl -b -q -u mxctl-sync.service -o cat | grep -o '[^;]*vfs_gone[^;]*' | head -n 1)"
    gpu=/sys/bus/pci/devices/0000:3b:00.0
    types=$(cat /sys/bus/pci/devices/*/nvidia/current_vgpu_type 2>/dev/null | sort | tr '\n' ' ')
    grep -q '^sriov-manage -e 0000:3b:00.0' /run/vmbed/nvml.log && [ "$(cat "$gpu/sriov_numvfs")" = 4 ] &&
        [ "$types" = "900001 900001 900004 900005 " ]
    ok the_restore_made_every_vf_and_type_again $? "sriov_numvfs $(cat "$gpu/sriov_numvfs"), types $types"
    mxctl vgpu assert --vgpu-config /var/lib/vmbed/vgpu.yaml --select balanced-vgpu >/tmp/vassert 2>&1
    ok the_vgpu_config_holds_after_the_reboot $? "$(tail -n 1 /tmp/vassert)"
    status=$(mxctl --json status)
    has "$status" '"status": "active"' && has "$status" '"reason": "ready"' && has "$status" '"holds": "holds"'
    ok the_status_is_active_ready $? "$(mxctl status | head -n 2 | tr '\n' ' ')"
    grep -qx 'mxctl.feature.node.kubernetes.io/layout-state=holds' "$labels" &&
        grep -qx 'mxctl.feature.node.kubernetes.io/status=active' "$labels"
    ok the_labels_say_the_layout_holds $? "$(grep -v '^#' "$labels" | tr '\n' ' ')"

    # The package's timer, as installed: enabled, running, its interval the default
    # sync-interval through the generator's drop-in of this boot.
    enabled=$(systemctl is-enabled mxctl-sync.timer)
    active=$(systemctl is-active mxctl-sync.timer)
    drop_in=$(timer_drop_in)
    timers=$(show mxctl-sync.timer TimersMonotonic)
    [ "$enabled" = enabled ] && [ "$active" = active ] && [ -n "$drop_in" ] &&
        grep -qx 'OnUnitActiveSec=300000ms' "$drop_in" && has "$timers" 'OnUnitActiveUSec=5min '
    ok the_sync_timer_is_enabled_and_runs_every_five_minutes_by_default $? "$enabled, $active, drop-in ${drop_in:-none}, $timers"

    # A short interval in the config, taken at the next daemon-reload as at a boot.
    interval=20
    sed -i '/^sync-interval *=/d' /etc/mxctl.conf
    echo "sync-interval = $interval" >>/etc/mxctl.conf
    restarted_at=$(date +%s)
    restarted_us=$(now_us)
    systemctl daemon-reload
    systemctl restart mxctl-sync.timer
    drop_in=$(timer_drop_in)
    timers=$(show mxctl-sync.timer TimersMonotonic)
    accuracy=$(show mxctl-sync.timer AccuracyUSec)
    # (An OnBootSec= long past is spent: systemd lists it no more, so only the file says it.)
    [ -n "$drop_in" ] && grep -qx "OnUnitActiveSec=${interval}000ms" "$drop_in" &&
        grep -qx "OnBootSec=${interval}000ms" "$drop_in" &&
        has "$timers" "OnUnitActiveUSec=${interval}s " && [ "$accuracy" = 1s ]
    ok the_generator_sets_the_timer_to_the_configs_sync_interval $? "drop-in ${drop_in:-none}, $timers, AccuracyUSec=$accuracy"

    # The first sync of the timer since (a boot timer long past elapses at once): the cards
    # read again, still holding the layout.
    until [ "$(show mxctl-sync.service InactiveExitTimestampMonotonic)" -gt "$restarted_us" ] &&
        [ "$(show mxctl-sync.service ActiveState)" = inactive ]; do
        [ $(($(now_us) - restarted_us)) -gt $((interval * 5 * 1000000)) ] && break
        sleep 0.5
    done
    checked=$(label layout-checked)
    [ "$(label layout-state)" = holds ] && [ "${checked:-0}" -ge "$restarted_at" ]
    ok the_timers_sync_says_the_layout_holds $? "layout-state=$(label layout-state) layout-checked=$checked (the timer restarted at $restarted_at)"

    # One GPU instance and its compute instances destroyed by hand: NVML's own calls, through
    # the helper over the fake, not a command of mxctl.
    nvml_lines=$(wc -l </run/vmbed/nvml.log)
    reply=$(/usr/local/libexec/vmbed/helper read --device 0000:3b:00.0 --format 1)
    first=$(printf '%s\n' "$reply" | sed -n 's/.*"gpu_instances":\[{"id":\([0-9]*\),[^][]*"compute_instances":\[\([^]]*\)\].*/\1 \2/p')
    gi=${first%% *}
    steps=""
    for ci in $(printf '%s\n' "${first#* }" | grep -o '{"id":[0-9]*' | cut -d: -f2); do
        steps="$steps{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": $gi, \"compute_instance_id\": $ci}, "
    done
    steps="$steps{\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": $gi}"
    before_us=$(now_us)
    answer=$(echo "{\"steps\": [$steps]}" | /usr/local/libexec/vmbed/helper apply --device 0000:3b:00.0 --format 1)
    destroyed_us=$(now_us)
    destroyed_at=$(date +%s.%N)
    done_steps=$(printf '%s\n' "$answer" | grep -o '"result":"[a-z_]*"' | grep -c '"result":"done"')
    all_steps=$(printf '%s\n' "$steps" | grep -o '"op"' | grep -c .)
    [ -n "$gi" ] && [ "$done_steps" = "$all_steps" ] &&
        [ "$(printf '%s\n' "$answer" | grep -o '"result":"[a-z_]*"' | grep -c .)" = "$all_steps" ]
    ok a_gpu_instance_is_destroyed_through_the_fake $? "GPU instance ${gi:-none} and its compute instance(s) ${first#* }: $done_steps of $all_steps step(s) done, ended at $(seconds "$destroyed_us") s monotonic ($destroyed_at)"

    # No command from here: the labels file, as the timer's sync rewrites it, says drifted
    # (bounded by ten intervals, so a slow machine cannot fail it by chance).
    while [ "$(label layout-state)" != drifted ] &&
        [ $(($(now_us) - destroyed_us)) -le $((interval * 10 * 1000000)) ]; do
        sleep 0.5
    done
    seen_us=$(now_us)
    trigger=$(show mxctl-sync.timer LastTriggerUSecMonotonic)
    trigger_us=$(echo "$trigger" | span_us)
    state=$(label layout-state)
    # The bound from systemd's records: the start of the first sync whose output names the
    # drift, in the journal, and the timer's last trigger, which must be that start.
    start=$(journalctl -b -q -u mxctl-sync.service -o short-monotonic | awk -v since="$before_us" '
        { line = $0; sub(/^\[ */, "", line); t = line * 1000000 }
        /systemd\[1\]: Starting / { start = t }
        t >= since && /layout_drifted|differs from the declared layout/ && !found { found = 1; printf "%.0f\n", start }')
    trigger_us=${trigger_us:-0}
    bound_us=$(((interval + 2) * 1000000))
    [ "$state" = drifted ] && [ -n "$start" ] && [ "$start" -ge "$trigger_us" ] &&
        [ $((start - trigger_us)) -le 3000000 ] && [ $((trigger_us - destroyed_us)) -le "$bound_us" ]
    ok the_timer_shows_a_destroyed_instance_as_drift_within_one_interval $? "interval ${interval} s; destroyed at $(seconds "$destroyed_us") s (from $(seconds "$before_us") s); the timer triggered at $(seconds "$trigger_us") s (LastTriggerUSecMonotonic=$trigger, $(seconds $((trigger_us - destroyed_us))) s after, bound $(seconds "$bound_us") s), the sync that read the drift started at $(seconds "${start:-0}") s; labels layout-state=$state seen at $(seconds "$seen_us") s"

    # The timer's syncs wrote nothing to the card: the only writes since are the destroy's.
    writes=$(tail -n +"$((nvml_lines + 1))" /run/vmbed/nvml.log | grep -c 'Create\|Destroy\|SetMigMode')
    [ "$writes" = "$all_steps" ] && [ "$(label layout-state)" = drifted ]
    ok the_timers_syncs_only_read_the_cards $? "$writes NVML write(s) since the destroy (its own: $all_steps), layout-state=$(label layout-state)"

    # The interval back to the default: the next boot's checks race no sync every few seconds.
    sed -i '/^sync-interval *=/d' /etc/mxctl.conf
    systemctl daemon-reload
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
    timers=$(show mxctl-sync.timer TimersMonotonic)
    drop_in=$(timer_drop_in)
    has "$timers" 'OnUnitActiveUSec=5min ' && ! grep -q '^sync-interval' /etc/mxctl.conf &&
        [ -n "$drop_in" ] && grep -qx 'OnUnitActiveSec=300000ms' "$drop_in"
    ok with_the_interval_unset_the_timer_is_back_to_five_minutes $? "drop-in ${drop_in:-none}, $timers"
    echo "VMTEST-DONE"
    systemctl poweroff --no-block
    ;;
esac
