// Package i219linux runs the i219 driver from Linux user space. It supplies
// the driver's Platform three ways:
//
//   - OpenSysfs: BAR0 through sysfs resource0, DMA from hugepages or locked
//     pages translated with /proc/self/pagemap, polling only;
//   - OpenUIO: the same, with INTx interrupts through uio_pci_generic;
//   - OpenVFIO: BAR0, config space and INTx through VFIO, DMA mapped into
//     the IOMMU with VFIO_IOMMU_MAP_DMA (type 1).
//
// Each refuses with an error naming the fix when the kernel driver still
// holds the device, when kernel lockdown forbids BAR mmap, or, for the
// pagemap backends, when an IOMMU translates DMA (boot with iommu=pt or use
// VFIO).
package i219linux
