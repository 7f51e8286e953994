#!/bin/busybox sh
# /init of the boot:qemu image (ci/qemu/osbench-image.sh): mount the kernel
# filesystems, reserve hugepages for the driver's DMA, run osbench-guest
# (which reads its row from the kernel command line and dials the bench's
# sink), then power off so QEMU exits.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/hugepages
mount -t hugetlbfs hugetlbfs /dev/hugepages
echo 32 >/proc/sys/vm/nr_hugepages
echo "GUEST up: kernel $(uname -r), hugepages $(cat /proc/sys/vm/nr_hugepages), uptime $(cut -d' ' -f1 /proc/uptime)s"
/bin/osbench-guest
echo "GUEST osbench-guest exit $? (uptime $(cut -d' ' -f1 /proc/uptime)s)"
poweroff -f
