#!/usr/bin/env bash
# Puts what the machine-crash tests boot into ~/.cache/wick/vm (WICK_VM_DIR overrides):
# Debian's cloud kernel (virtio and ext4, no firmware) and busybox-static, taken from
# their .deb files with dpkg-deb -x, so that nothing is installed on this machine: no
# initramfs hooks, no bootloader. qemu-system-x86 itself is installed by make setup.
# Idempotent: a kit already there is kept.
set -euo pipefail
dir="${WICK_VM_DIR:-$HOME/.cache/wick/vm}"
if [ -f "$dir/ready" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt-get download fetches as _apt, which must be able to write there
cd "$tmp"
# The metapackage names the kernel of the day (linux-image-6.1.0-N-cloud-amd64).
apt-get download linux-image-cloud-amd64 busybox-static >/dev/null 2>&1 ||
  { apt-get update -qq && apt-get download linux-image-cloud-amd64 busybox-static >/dev/null; }
kpkg=$(dpkg-deb -f linux-image-cloud-amd64_*.deb Depends | grep -o 'linux-image-[0-9][^ ,]*')
apt-get download "$kpkg" >/dev/null
dpkg-deb -x "$kpkg"_*.deb root
dpkg-deb -x busybox-static_*.deb root
mkdir -p "$dir.new"
cp root/boot/vmlinuz-* "$dir.new/vmlinuz"
cp root/bin/busybox "$dir.new/busybox"
# The modules the guest loads, in the order insmod needs them (no depmod in a guest
# this small): the virtio bus, its PCI transport, the block device; each comes after
# those its "depends=" names (virtio needs virtio_ring). ext4 is built in.
mods=$(ls -d root/lib/modules/*)/kernel/drivers
: >"$dir.new/modules"
for m in virtio/virtio_ring virtio/virtio virtio/virtio_pci_legacy_dev virtio/virtio_pci_modern_dev virtio/virtio_pci block/virtio_blk; do
  cp "$mods/$m.ko" "$dir.new/"
  echo "$(basename "$m").ko" >>"$dir.new/modules"
done
echo "$kpkg" >"$dir.new/ready"
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "vm kit: $kpkg and busybox in $dir"
