#!/bin/sh
# docker-torch-image.sh [IMAGE]: make a Docker image with Debian's PyTorch (python3-torch,
# for /usr/bin/python3 and torchrun) without pulling anything: debootstrap a minimal
# bookworm, apt-get install python3-torch in it, and docker import the tree. 2 to 7
# minutes (on a busy machine) and 1.3 GB. Needs root (debootstrap, chroot) and a Debian mirror
# (MIRROR, default deb.debian.org). Does nothing when IMAGE (default wick-torch:bookworm)
# exists already.
set -eu

IMAGE=${1:-wick-torch:bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	echo "docker-torch-image: $IMAGE exists"
	exit 0
fi
for tool in debootstrap chroot docker; do
	command -v "$tool" >/dev/null 2>&1 || { echo "docker-torch-image: $tool is missing (apt-get install debootstrap)" >&2; exit 1; }
done
if [ "$(id -u)" != 0 ]; then
	echo "docker-torch-image: debootstrap needs root" >&2
	exit 1
fi

root=$(mktemp -d "${TMPDIR:-/var/tmp}/wick-torch.XXXXXX")
trap 'rm -rf "$root"' EXIT INT TERM

echo "docker-torch-image: debootstrap $SUITE into $root"
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

echo "docker-torch-image: apt-get install python3-torch"
# No daemon may start in the chroot; apt needs /proc for some maintainer scripts.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
# (|| true: under set -e a failing command in the trap would end it there, leaving
# the 1.3 GB tree, and the script's status would be umount's.)
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT INT TERM
# (APT's download sandbox user cannot write in a fresh chroot: download as root.)
if ! chroot "$root" sh -c 'apt="apt-get -qq -o APT::Sandbox::User=root"; $apt update && DEBIAN_FRONTEND=noninteractive $apt install -y --no-install-recommends python3-torch && $apt clean' >"$root.log" 2>&1; then
	tail -20 "$root.log" >&2
	rm -f "$root.log"
	exit 1
fi
rm -f "$root.log"
umount "$root/proc"
trap 'rm -rf "$root"' EXIT INT TERM
rm -rf "$root/var/lib/apt/lists"/* "$root/usr/sbin/policy-rc.d"

echo "docker-torch-image: docker import as $IMAGE"
tar -C "$root" -c . | docker import \
	-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	-c 'ENV LANG=C.UTF-8' \
	-c 'WORKDIR /' \
	-c 'CMD ["/usr/bin/python3"]' \
	- "$IMAGE" >/dev/null
docker run --rm "$IMAGE" /usr/bin/python3 -c 'import torch; print("docker-torch-image: torch", torch.__version__)'
