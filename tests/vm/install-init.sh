#!/bin/sh
# The init of the install bed's initramfs: load the disk's drivers, mount the debootstrapped
# root and hand over to its systemd.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for module in $(cat /etc/modules.order); do
    insmod "/lib/modules/$module" 2>/dev/null || echo "VMTEST modules fail insmod $module"
done
for _ in $(seq 100); do [ -b /dev/vda ] && break; sleep 0.1; done
mount -t ext4 -o rw /dev/vda /newroot || { echo "VMTEST root fail cannot mount /dev/vda"; poweroff -f; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
