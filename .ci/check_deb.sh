#!/usr/bin/env bash
# Checks the Debian package: its files, /etc/mxctl.conf as a conffile, the unit files against
# the unpacked package (systemd-analyze verify --root), a man page that renders, and the bash
# completion of `mxctl re<TAB>`.
set -euo pipefail
deb=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

dpkg-deb -I "$deb"
listing=$(dpkg-deb -c "$deb")
printf '%s\n' "$listing"
for file in \
    ./usr/bin/mxctl \
    ./usr/libexec/mxctl/gpu-partition-helper \
    ./lib/udev/rules.d/60-mxctl.rules \
    ./usr/share/doc/mxctl/changelog.Debian.gz \
    ./etc/mxctl.conf \
    ./usr/lib/systemd/system/mxctl-sync.service \
    ./usr/lib/systemd/system/mxctl-sync.timer \
    ./usr/lib/systemd/system/mxctl-sync.path \
    ./usr/lib/systemd/system/mxctl-restore.service \
    ./usr/lib/systemd/system/mxctl-layout.target \
    ./usr/lib/systemd/system-generators/mxctl-generator \
    ./usr/share/man/man1/mxctl-partition-restore.1.gz \
    ./usr/share/man/man1/mxctl.1.gz \
    ./usr/share/man/man1/mxctl-sync.1.gz \
    ./usr/share/man/man1/mxctl-metrics.1.gz \
    ./usr/share/man/man1/mxctl-reset.1.gz \
    ./usr/share/man/man1/mxctl-partition-apply.1.gz \
    ./usr/share/man/man1/mxctl-vgpu-apply.1.gz \
    ./usr/share/bash-completion/completions/mxctl \
    ./usr/share/zsh/vendor-completions/_mxctl \
    ./usr/share/fish/vendor_completions.d/mxctl.fish; do
    grep -q " $file\$" <<<"$listing" || { echo "missing from the package: $file" >&2; exit 1; }
done
# systemd runs only the generators it may execute.
grep -Eq '^-rwxr-xr-x .* \./usr/lib/systemd/system-generators/mxctl-generator$' <<<"$listing" ||
    { echo "mxctl-generator is not mode 755 in the package" >&2; exit 1; }
conffiles=$(dpkg-deb -I "$deb" conffiles)
[ "$conffiles" = /etc/mxctl.conf ] || { echo "conffiles: $conffiles" >&2; exit 1; }
for script in postinst prerm postrm; do
    dpkg-deb -I "$deb" "$script" | sh -n
done

dpkg-deb -x "$deb" "$root"
# The units name targets of systemd itself and programs of the base system: verify them beside
# the host's own unit files and programs.
cp -rn /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
mkdir -p "$root/bin"
cp /bin/rm /bin/sh "$root/bin/"
systemd-analyze verify --man=no --root="$root" \
    "$root/usr/lib/systemd/system/mxctl-sync.service" \
    "$root/usr/lib/systemd/system/mxctl-sync.timer" \
    "$root/usr/lib/systemd/system/mxctl-sync.path" \
    "$root/usr/lib/systemd/system/mxctl-restore.service" \
    "$root/usr/lib/systemd/system/mxctl-layout.target"
grep -qx 'ExecStart=/usr/bin/mxctl partition restore --at-boot --lock-wait 900' "$root/usr/lib/systemd/system/mxctl-restore.service"
grep -qx 'After=nvidia-vgpud.service nvidia-vgpu-mgr.service' "$root/usr/lib/systemd/system/mxctl-restore.service"
grep -qx 'ExecStart=/usr/bin/mxctl sync --after-boot auto --lock-wait 900' "$root/usr/lib/systemd/system/mxctl-sync.service"
"$root/usr/bin/mxctl" --version
# What the package installs passes the rule mxctl applies to its config and its programs.
"$root/usr/bin/mxctl" check-trust \
    "$root/usr/bin/mxctl" \
    "$root/usr/libexec/mxctl/gpu-partition-helper" \
    "$root/etc/mxctl.conf"
# Read whole, then matched: `| grep -q` stops reading at the match, and under pipefail the
# writer's SIGPIPE would fail the check by chance.
postinst=$(dpkg-deb -I "$deb" postinst)
grep -q 'install -d -m 0700 -o root -g root /var/lib/mxctl' <<<"$postinst"

# The generator hands systemd's directories to the package's mxctl, which writes the timer's
# interval from the config's sync-interval as a drop-in in the first one.
sh -n "$root/usr/lib/systemd/system-generators/mxctl-generator"
grep -qx 'exec /usr/bin/mxctl systemd-generator "$@"' "$root/usr/lib/systemd/system-generators/mxctl-generator"
generated=$(mktemp -d)
trap 'rm -rf "$root" "$generated"' EXIT
printf 'sync-interval = 20\n' >"$generated/mxctl.conf"
"$root/usr/bin/mxctl" --config "$generated/mxctl.conf" systemd-generator \
    "$generated/normal" "$generated/early" "$generated/late"
drop_in="$generated/normal/mxctl-sync.timer.d/50-sync-interval.conf"
grep -qx 'OnUnitActiveSec=20000ms' "$drop_in" && grep -qx 'OnBootSec=20000ms' "$drop_in" ||
    { echo "the generator's drop-in does not say 20 s:" >&2; cat "$drop_in" >&2; exit 1; }
# The timer with the drop-in is still a unit systemd takes.
mkdir -p "$root/etc/systemd/system/mxctl-sync.timer.d"
cp "$drop_in" "$root/etc/systemd/system/mxctl-sync.timer.d/"
systemd-analyze verify --man=no --root="$root" "$root/usr/lib/systemd/system/mxctl-sync.timer"

"$root/usr/libexec/mxctl/gpu-partition-helper" --version
# The conffile names the helper where the package puts it.
grep -qx 'gpu-partition-helper = /usr/libexec/mxctl/gpu-partition-helper' "$root/etc/mxctl.conf"

echo "-- man -l mxctl-metrics.1.gz"
MANWIDTH=80 man -l "$root/usr/share/man/man1/mxctl-metrics.1.gz" | cat

echo "-- bash: mxctl re<TAB>"
completions=$(bash -c '
    source "$1"
    COMP_WORDS=(mxctl re); COMP_CWORD=1; COMP_LINE="mxctl re"; COMP_POINT=${#COMP_LINE}
    _mxctl mxctl re mxctl
    printf "%s\n" "${COMPREPLY[@]}"' bash "$root/usr/share/bash-completion/completions/mxctl")
printf '%s\n' "$completions"
[ "$(printf '%s\n' "$completions" | sort | tr '\n' ' ')" = "reply reset " ] || {
    echo "bash completion of 'mxctl re': $completions" >&2
    exit 1
}
echo "-- lintian (no error, no warning)"
# Lintian refuses to run as root without this; it reads the package only.
lintian_out=$(lintian --allow-root --fail-on error,warning --display-level '>=warning' "$deb" 2>&1) || {
    printf '%s\n' "$lintian_out" >&2
    echo "lintian found errors or warnings" >&2
    exit 1
}
printf '%s\n' "${lintian_out:-lintian: nothing at error or warning level}"
echo "package: ok"
