#!/bin/sh
# The install bed's checks, in the booted Debian with the package installed by dpkg -i:
# the boot-time sync, the state, the metrics, the udev rule, remove and purge, and an install
# again on the running system (the sync timer enabled and started at once). Each prints
# `VMTEST <name> pass|fail <detail>`; then the machine powers off.
pass() { echo "VMTEST $1 pass $2"; }
fail() { echo "VMTEST $1 fail $2"; }
ok() { if [ "$2" = 0 ]; then pass "$1" "$3"; else fail "$1" "$3"; fi; }
# Waits up to $2 seconds for the command $3… to succeed.
within() { name=$1; secs=$2; shift 2; n=0; while [ "$n" -lt $((secs * 10)) ]; do "$@" && return 0; sleep 0.1; n=$((n + 1)); done; return 1; }
to_vfio() {
    d=/sys/bus/pci/devices/$1
    echo vfio-pci > "$d/driver_override"
    [ -e "$d/driver" ] && echo "$1" > "$d/driver/unbind"
    echo "$1" > /sys/bus/pci/drivers_probe
}
to_none() {
    d=/sys/bus/pci/devices/$1
    echo > "$d/driver_override"
    [ -e "$d/driver" ] && echo "$1" > "$d/driver/unbind"
    true
}
stored_driver() { # the driver the stored state gives the GPU at $1 ("-": none)
    mxctl status 2>/dev/null | awk -v bdf="$1" '$1 == bdf {print $3}'
}
driver_is() { [ "$(stored_driver "$1")" = "$2" ]; }
displays=$(for d in /sys/bus/pci/devices/*; do grep -q '^0x03' "$d/class" && echo "${d##*/}"; done)
first=$(echo "$displays" | head -n 1)
echo "VMTEST-LISTING displays: $(echo $displays)"

result=$(systemctl show -p Result --value mxctl-sync.service)
code=$(systemctl show -p ExecMainStatus --value mxctl-sync.service)
started=$(systemctl show -p ExecMainStartTimestampMonotonic --value mxctl-sync.service)
[ "$result" = success ] && [ "$code" = 0 ] && [ "${started:-0}" -gt 0 ]
ok the_boot_time_sync_ran_and_succeeded $? "Result=$result ExecMainStatus=$code started at ${started}us"

systemctl -q is-active mxctl-sync.path && systemctl -q is-enabled mxctl-sync.path
ok the_udev_mark_is_watched $? "mxctl-sync.path $(systemctl is-active mxctl-sync.path), $(systemctl is-enabled mxctl-sync.path)"

status=$(mxctl --json status)
echo "$status" | grep -q '"reason": "no_partitionable_gpu"' && [ -s /var/lib/mxctl/state.json ]
ok the_state_is_stored $? "$(echo "$status" | head -n 3 | tr '\n' ' ')"

grep -q '^mxctl_gpu_partitioning_status{status="inactive"} 1' /var/lib/prometheus/node-exporter/mxctl.prom
ok the_metrics_are_written $? "$(grep -c '^mxctl_' /var/lib/prometheus/node-exporter/mxctl.prom) series in mxctl.prom"

modprobe vfio-pci
to_vfio "$first"
within rebind 15 driver_is "$first" vfio-pci
ok a_rebind_to_vfio_pci_is_stored_through_udev $? "$first stored with $(stored_driver "$first")"
to_none "$first"
within back 15 driver_is "$first" -
ok a_rebind_back_is_stored_through_udev $? "$first stored with $(stored_driver "$first")"

# An event while a sync is finishing (its own read of the GPUs done, its ExecStartPost still
# running) must not be lost: a start of a unit whose start job runs is merged into it, so only
# a sync run after this one can see the event. A drop-in holds the sync in ExecStartPost.
mkdir -p /run/systemd/system/mxctl-sync.service.d
printf '[Service]\nExecStartPost=/bin/sleep 4\n' >/run/systemd/system/mxctl-sync.service.d/slow.conf
systemctl daemon-reload
systemctl --no-block start mxctl-sync.service
in_post() { [ "$(systemctl show -p SubState --value mxctl-sync.service)" = start-post ]; }
within post 20 in_post
to_vfio "$first"
within late 30 driver_is "$first" vfio-pci
ok an_event_while_a_sync_finishes_is_synced_after_it $? "$first stored with $(stored_driver "$first") after a rebind in the sync's ExecStartPost"
rm -rf /run/systemd/system/mxctl-sync.service.d
systemctl daemon-reload
to_none "$first"
within back 15 driver_is "$first" -

# A rebind while a reset holds the host lock for longer than a sync's default wait (10 s): the
# sync waits for the lock (--lock-wait in the unit) instead of failing, and then stores it.
flock /var/lib/mxctl/host-gpu.lock sleep 15 &
holder=$!
sleep 1
to_vfio "$first"
sleep 12
held=$(stored_driver "$first")
within after_lock 30 driver_is "$first" vfio-pci
ok a_rebind_while_the_lock_is_held_is_synced_once_it_is_let_go $? "$first stored with $held while the lock was held 13 s, then with $(stored_driver "$first")"
wait "$holder"
to_none "$first"
within back 15 driver_is "$first" -

before=$(journalctl -q -u mxctl-sync.service -o cat | grep -c 'Finished')
# Eight GPUs rebound at once, back and forth, as a pool moving them to pass-through does:
# syncs start many times in a few seconds (more than a default start limit allows), and the
# state after the last event is the one stored.
for round in 1 2 3 4 5 6 7 8; do
    for bdf in $displays; do to_vfio "$bdf"; done
    sleep 0.4
    for bdf in $displays; do to_none "$bdf"; done
    sleep 0.4
done
for bdf in $displays; do to_vfio "$bdf"; done
all_vfio() { for bdf in $displays; do driver_is "$bdf" vfio-pci || return 1; done; }
within eight 30 all_vfio
ok eight_rebinds_at_once_end_with_the_last_state $? "$(for bdf in $displays; do printf '%s=%s ' "$bdf" "$(stored_driver "$bdf")"; done)"
sleep 2
after=$(journalctl -q -u mxctl-sync.service -o cat | grep -c 'Finished')
result=$(systemctl show -p Result --value mxctl-sync.service)
limit=$(systemctl show -p StartLimitIntervalUSec --value mxctl-sync.service)
[ "$result" != start-limit-hit ] && ! systemctl -q is-failed mxctl-sync.service && [ "$limit" = 0 ]
ok eight_rebinds_do_not_trip_the_start_limit $? "Result=$result, StartLimitIntervalUSec=$limit, $((after - before)) syncs for 16 rounds of $(echo $displays | wc -w) rebinds"

dpkg -r mxctl >/tmp/dpkg-r.log 2>&1
[ -f /etc/mxctl.conf ] && [ ! -e /usr/bin/mxctl ] && [ ! -e /lib/udev/rules.d/60-mxctl.rules ]
ok remove_keeps_the_conffile $? "$(ls -l /etc/mxctl.conf 2>&1)"
timer=$(systemctl is-active mxctl-sync.timer)
generated=$(ls -d /run/systemd/generator*/mxctl-sync.timer.d 2>/dev/null)
[ "$timer" != active ] && [ -z "$generated" ]
ok remove_stops_the_timer_and_drops_its_interval $? "mxctl-sync.timer $timer, generated drop-ins: ${generated:-none}"
dpkg -P mxctl >/tmp/dpkg-p.log 2>&1
[ ! -e /etc/mxctl.conf ]
ok purge_removes_the_conffile $? "$(ls /etc/mxctl.conf 2>&1)"
[ ! -e /var/lib/mxctl ] && [ ! -e /var/lib/prometheus/node-exporter/mxctl.prom ]
ok purge_removes_the_state $? "$(ls -d /var/lib/mxctl /var/lib/prometheus/node-exporter/mxctl.prom 2>&1 | tr '\n' ' ')"

# On a running systemd the package's postinst enables the timer and starts it, its interval
# written by the generator at the daemon-reload.
dpkg -i /root/mxctl.deb >/tmp/dpkg-i.log 2>&1
enabled=$(systemctl is-enabled mxctl-sync.timer)
timer=$(systemctl is-active mxctl-sync.timer)
drop_in=$(ls /run/systemd/generator*/mxctl-sync.timer.d/50-sync-interval.conf 2>/dev/null | head -n 1)
[ "$enabled" = enabled ] && [ "$timer" = active ] && [ -n "$drop_in" ] &&
    grep -qx 'OnUnitActiveSec=300000ms' "$drop_in"
ok an_install_on_a_running_systemd_enables_and_starts_the_timer $? "mxctl-sync.timer $enabled, $timer, drop-in ${drop_in:-none}"

echo "VMTEST-DONE"
systemctl poweroff --no-block
