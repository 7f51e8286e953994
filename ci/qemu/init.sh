#!/bin/busybox sh
# /init of the test initramfs: mount the kernel filesystems, reserve
# hugepages, load the uio and vfio modules, then for each backend in the
# kernel argument netramp.plan=backend:check,check/backend:... bind the
# 82574L to that backend's kernel driver and run i219check. Powers off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/hugepages
mount -t hugetlbfs hugetlbfs /dev/hugepages
echo 32 >/proc/sys/vm/nr_hugepages
for m in $(cat /etc/modules); do
	insmod /lib/modules/$m.ko || echo "GUEST insmod $m failed"
done

plan=$(sed -n 's/.*netramp\.plan=\([^ ]*\).*/\1/p' /proc/cmdline)
args=$(sed -n 's/.*netramp\.args=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
dev=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat $d/vendor)" = 0x8086 ] && [ "$(cat $d/device)" = 0x10d3 ]; then
		dev=$d
		break
	fi
done
bdf=${dev##*/}
echo "GUEST up: kernel $(uname -r), card ${bdf:-none}, hugepages $(cat /proc/sys/vm/nr_hugepages), iommu groups $(ls /sys/kernel/iommu_groups | wc -l), plan $plan"

# bind BACKEND: leave the card with no driver (sysfs) or bound to
# uio_pci_generic (uio) or vfio-pci (vfio).
bind() {
	[ -e $dev/driver ] && echo $bdf >$dev/driver/unbind
	case $1 in
	sysfs) echo >$dev/driver_override ;;
	uio) echo uio_pci_generic >$dev/driver_override ;;
	vfio) echo vfio-pci >$dev/driver_override ;;
	kernel) echo e1000e >$dev/driver_override ;;
	esac
	if [ $1 = kernel ] && [ ! -d /sys/module/e1000e ]; then
		insmod /lib/modules/e1000e.ko
	elif [ $1 != sysfs ]; then
		echo $bdf >/sys/bus/pci/drivers_probe
	fi
	drv=none
	[ -e $dev/driver ] && drv=$(basename $(readlink $dev/driver))
	echo "GUEST backend $1: driver $drv (uptime $(cut -d' ' -f1 /proc/uptime)s)"
	if [ $1 = kernel ]; then
		# The reference: Linux's own driver and TCP, addressed as slirp expects.
		ip link set lo up
		ip link set eth0 up
		ip addr add 10.0.2.15/24 dev eth0
		ip route add default via 10.0.2.2
	fi
}

if [ -n "$dev" ]; then
	for item in $(echo "$plan" | tr / ' '); do
		backend=${item%%:*}
		checks=${item#*:}
		bind $backend
		/bin/i219check -backend $backend -checks $checks -dev $bdf $args
		echo "GUEST i219check $backend exit $? (uptime $(cut -d' ' -f1 /proc/uptime)s)"
	done
fi
echo "GUEST done"
poweroff -f
