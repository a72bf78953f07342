#!/usr/bin/env bash
# deps.sh - make sure the tools ksync needs are installed (Debian 12).
# As root, installs what is missing with apt-get; otherwise prints one line naming the
# packages to install and fails.
set -u
declare -A pkg_of=(
	[qemu-system-x86_64]=qemu-system-x86
	[gcc]=gcc
	[clang]=clang
	[make]=make
	[ld]=binutils
	[objcopy]=binutils
	[addr2line]=binutils
	[grub-mkrescue]=grub-common
	[xorriso]=xorriso
	[mformat]=mtools
	[python3]=python3
	[spin]=spin
	[gdb]=gdb
	[chromium]=chromium
	[cyclictest]=rt-tests
	[hackbench]=rt-tests	# Debian's dynamic hackbench/cyclictest run unmodified on ksync (issue 25)
	[ldd]=libc-bin	# dynlibs.py resolves their libraries with it
	[cpio]=cpio
	[musl-gcc]=musl-tools	# the user programs of tests/user (issue 24): musl's static libc
)
missing=()
for tool in "${!pkg_of[@]}"; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("${pkg_of[$tool]}")
done
[ -d /usr/lib/grub/i386-pc ] || missing+=(grub-pc-bin)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
[ -e /usr/include/ck_ring.h ] || missing+=(libck-dev)
[ -e /usr/include/x86_64-linux-gnu/urcu/wfcqueue.h ] || [ -e /usr/include/urcu/wfcqueue.h ] || missing+=(liburcu-dev)
# Debian's statically linked busybox: /bin/busybox runs on the host and in ksync's
# initramfs (tests/test_busybox.py; the dynamic `busybox` package's file would not load)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
# TSan/ASan runtimes for gcc
ls /usr/lib/gcc/x86_64-linux-gnu/*/libtsan.so >/dev/null 2>&1 || missing+=(libtsan2)
ls /usr/lib/gcc/x86_64-linux-gnu/*/libasan.so >/dev/null 2>&1 || missing+=(libasan8)

[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
	echo "ksync: missing packages; install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "ksync: installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/ksync-apt.log 2>&1; then
	echo "ksync: apt-get install ${missing[*]} failed; see /tmp/ksync-apt.log" >&2
	exit 1
fi
