# ksync - top-level Makefile.
#
#   make          (the default) the kernel, libksync and .venv, the Python environment the
#                 ./ksync wrapper runs the tool with (./ksync --help)
#   make run      build, boot the kernel under QEMU, run the default experiments, print
#                 the tables and write results/ (README: "What make run prints")
#   make test     every test: hosted C (plain, ASan/UBSan, TSan), kernel tests under TCG
#                 (-smp 1, 4, 8 and the ISO; every interrupt scheme at -smp 1 and 2), tool
#                 tests; prints the ten slowest, ends with pytest's summary
#   make kernel   build/kernel/ksync.elf (+ .elf32 for QEMU -kernel and GRUB); with
#                 SCHEME=name other than spl-optim: build/kernel-<name>/; WINDOWS=1:
#                 the masked-window tracker, build/kernel[-<name>]-windows/
#   make iso      build/ksync.iso (GRUB, BIOS boot)
#   make lib      build/hosted/libksync.a;  make install PREFIX=/usr/local
#   make hosted-kernel  the kernel as a Linux process (arch/hosted):
#                 build/hosted-kernel/<flavour>/<scheme>/ksync (mk/hosted-kernel.mk)
#   make debug    boot under QEMU with its gdb stub; connect with gdb (see README)
#   make shell    an interactive busybox sh on ksync in this terminal (./ksync sh; exit or
#                 ^D powers off, ^] kills QEMU); SMP=n, SCHEME=name
#   make stress   the long stress runs;  make bench   the longer measurement set (ksync run
#                 --set bench: more repeats, longer runs; not part of make test)
#
# Options: SMP=n (CPUs, default 2 for run/debug/shell), ACCEL=tcg|kvm|auto,
# TIMEOUT=seconds, SCHEME=name (interrupt scheme of `make kernel` / `make debug` /
# `make shell`; make run measures all),
# SCHED=lockfree|locked (the default scheduler; both are in every kernel),
# V=1 (show compiler command lines), DEBUG_INFO=-g|-g1 (the kernels' debug information:
# -g1, line tables, by default; -g for make debug).

SHELL := /bin/bash
.DEFAULT_GOAL := all

SMP ?= 2
ACCEL ?= tcg
TIMEOUT ?= 300
# Interrupt-synchronization scheme of the kernel build (kernel/include/spl.h): one per
# build, in its own directory (the default scheme in build/kernel, others in
# build/kernel-<scheme>).
# The one list of schemes: kernel/spl/schemes.txt (name, default, optimistic, ...).
SCHEMES_FILE := kernel/spl/schemes.txt
SCHEMES := $(shell awk '!/^\#/ && NF { print $$1 }' $(SCHEMES_FILE))
DEFAULT_SCHEME := $(shell awk '!/^\#/ && NF && $$2 == 1 { print $$1 }' $(SCHEMES_FILE))
SCHEME ?= $(DEFAULT_SCHEME)
ifeq ($(filter $(SCHEME),$(SCHEMES)),)
$(error unknown SCHEME '$(SCHEME)': choose one of $(SCHEMES))
endif
# The scheme's header (kernel/include/spl/<scheme>.h) and its schemes.txt "optimistic"
# column, which spl.h checks against the header's SPL_OPTIMISTIC.
SCHEME_DEFS := -DKSYNC_SPL_HEADER='"spl/$(SCHEME).h"' \
	-DKSYNC_LIST_OPTIMISTIC=$(shell awk '$$1 == "$(SCHEME)" { print $$3 }' $(SCHEMES_FILE))

# The scheduler sched_start(NULL) uses (kernel/include/thread.h; sched_default_name in
# kernel/sched/thread.c reads KSYNC_SCHED_DEFAULT_LOCKED): lockfree (Massalin & Pu's
# Synthesis scheduler) or locked (run queues under one master lock, Sprite/Mach). Both are
# in every kernel, so an experiment can run both in one boot; this picks the default (the
# command line's sched=lockfree|locked overrides it at boot).
SCHED ?= lockfree
ifeq ($(filter $(SCHED),lockfree locked),)
$(error unknown SCHED '$(SCHED)': choose lockfree or locked)
endif
SCHED_DEFS := -DKSYNC_SCHED_DEFAULT_LOCKED=$(if $(filter locked,$(SCHED)),1,0)
# Lock statistics (kernel/include/lockstat.h): LOCKSTAT=0 compiles every statistics path
# out of the locks (make LOCKSTAT=0 kernel / hosted-kernel); every object is rebuilt when
# it changes (LOCKSTAT_STAMP).
LOCKSTAT ?= 1
ifeq ($(filter $(LOCKSTAT),0 1),)
$(error LOCKSTAT must be 0 or 1)
endif
SCHED_DEFS += -DLOCKSTAT=$(LOCKSTAT)
LOCKSTAT_STAMP := build/.lockstat-$(LOCKSTAT)
$(LOCKSTAT_STAMP):
	@mkdir -p build && rm -f build/.lockstat-* && touch $@
# Debug information of the kernels (x86 and hosted): DEBUG_INFO=-g1 by default - line
# tables and function names, all that the panics' symbolized backtraces (addr2line), the
# hosted port's dladdr and the sanitizers' reports use - and full -g for `make debug`
# (gdb's view of variables). -g1 compiles a kernel in ~80 % of -g's time (gcc 12: proc.c
# 0.94 vs 1.13 s, test_fs.c 0.98 vs 1.30 s) and make test builds 15 kernels. Every kernel
# object is rebuilt when it changes (DEBUG_STAMP).
ifneq ($(filter debug,$(MAKECMDGOALS)),)
DEBUG_INFO ?= -g
endif
DEBUG_INFO ?= -g1
ifeq ($(filter $(DEBUG_INFO),-g -g1 -g2 -g3),)
$(error DEBUG_INFO must be -g, -g1, -g2 or -g3)
endif
DEBUG_STAMP := build/.debug$(DEBUG_INFO)
$(DEBUG_STAMP):
	@mkdir -p build && rm -f build/.debug-g* && touch $@
# thread.o is rebuilt when SCHED changes: it depends on this stamp
SCHED_STAMP := build/.sched-$(SCHED)
$(SCHED_STAMP):
	@mkdir -p build && rm -f build/.sched-* && touch $@

Q := $(if $(V),,@)
BUILD := build
# WINDOWS=1: the masked-window tracker compiled in (arch_if.h; the -icount Fiasco runs
# use it to bound the lateness), in its own directory build/kernel[-<scheme>]-windows.
WINDOWS ?= 0
ifeq ($(filter $(WINDOWS),0 1),)
$(error WINDOWS must be 0 or 1)
endif
KBUILD := $(BUILD)/kernel$(if $(filter $(SCHEME),$(DEFAULT_SCHEME)),,-$(SCHEME))$(if $(filter 1,$(WINDOWS)),-windows)
VENV := .venv
PY := $(VENV)/bin/python
KSYNC := $(PY) -m ksync

# ---- the kernel ----------------------------------------------------------------------
# The port the kernel is built for: arch/$(ARCH)/ (public/ is its half of arch_if.h).
ARCH := x86_64
KCC ?= gcc
KLD ?= ld
OBJCOPY ?= objcopy
KCFLAGS := -std=c11 -O2 $(DEBUG_INFO) -ffreestanding -fno-pic -fno-pie -fno-stack-protector \
	-fno-omit-frame-pointer -mno-red-zone -mgeneral-regs-only -mno-sse -mno-sse2 \
	-mno-mmx -mno-80387 -mcmodel=kernel -nostdlib --param=min-pagesize=0 -Wall -Wextra -Werror \
	-DKSYNC_KERNEL $(SCHEME_DEFS) $(SCHED_DEFS) $(if $(filter 1,$(WINDOWS)),-DKSYNC_WINDOWS) -Iinclude -Icommon -Ikernel/include -Iarch/$(ARCH)/public -Ikernel -MMD -MP
# The port's own files (and only they) also see its private headers (x86.h, percpu.h, trap.h).
KCFLAGS_PORT := -Iarch/$(ARCH)/include
KASFLAGS := -g -Iarch/$(ARCH)/include -MMD -MP
KLDFLAGS := -m elf_x86_64 -nostdlib -static -z max-page-size=0x1000 --no-warn-rwx-segments \
	-T arch/x86_64/kernel.ld

include mk/lib.mk
include mk/hosted-port.mk
include mk/hosted-kdev.mk
include mk/hosted-kernel.mk

# kernel/<subsystem>/*.c, the interrupt layer and this build's one scheme file
# (kernel/spl/<scheme>.c), the kernel tests, the port; then libksync's sources.
KSUBSYS := core mm dev exp sched lock fs proc syscall
KSRCS_C := $(sort $(wildcard $(KSUBSYS:%=kernel/%/*.c)) kernel/spl/intr.c kernel/spl/intr_hw.c \
	kernel/spl/$(SCHEME).c $(wildcard kernel/tests/*.c arch/$(ARCH)/*.c arch/$(ARCH)/tests/*.c)) $(LIBKSYNC_SRCS)
KSRCS_S := $(sort $(wildcard arch/x86_64/*.S))
KOBJS := $(patsubst %.c,$(KBUILD)/%.o,$(KSRCS_C)) $(patsubst %.S,$(KBUILD)/%.o,$(KSRCS_S))
KELF := $(KBUILD)/ksync.elf
KELF32 := $(KBUILD)/ksync.elf32
ISO := $(BUILD)/ksync.iso

.PHONY: all kernel iso test run debug shell stress bench deps venv clean help print-schemes
all: $(VENV)/.stamp kernel lib hosted-kernel

kernel: $(KELF32)

# The cost tables (hundreds of unrolled timed rows): line tables only (-g1). With -g the
# compiler's variable tracking gave up on them anyway ("variable tracking size limit
# exceeded"); they took 3.2 + 4.3 s of a kernel's ~21 CPU-s, 1.6 + 3.1 s with -g1 (gcc
# 12, one run each), and make test builds 15 kernels.
COST_TABLE_SRCS := kernel/exp/lf_cost.c kernel/exp/lf_fifo_cost.c

$(KBUILD)/%.o: %.c Makefile $(LOCKSTAT_STAMP) $(DEBUG_STAMP)
	@mkdir -p $(dir $@)
	$(call KSYNC_SAY,CC,$<)
	$(KSYNC_Q)$(KCC) $(KCFLAGS) $(if $(filter arch/$(ARCH)/%,$<),$(KCFLAGS_PORT)) $(if $(filter $(COST_TABLE_SRCS),$<),-g1) -c $< -o $@

$(KBUILD)/%.o: %.S Makefile
	@mkdir -p $(dir $@)
	$(call KSYNC_SAY,AS,$<)
	$(KSYNC_Q)$(KCC) $(KASFLAGS) -c $< -o $@

$(KELF): $(KOBJS) arch/x86_64/kernel.ld
	$(call KSYNC_SAY,LD,$@)
	$(KSYNC_Q)$(KLD) $(KLDFLAGS) -o $@ $(KOBJS)

# QEMU's multiboot loader takes ELF32 only; the code stays 64-bit (DESIGN.md).
$(KELF32): $(KELF)
	$(call KSYNC_SAY,OBJCOPY,$@)
	$(KSYNC_Q)$(OBJCOPY) -O elf32-i386 $< $@

-include $(KOBJS:.o=.d)
$(KBUILD)/kernel/sched/thread.o: $(SCHED_STAMP)

iso: $(ISO)
$(ISO): $(KELF32) arch/x86_64/grub.cfg
	@command -v grub-mkrescue >/dev/null || { echo "make iso: grub-mkrescue missing: apt-get install grub-pc-bin grub-common xorriso mtools"; exit 1; }
	@rm -rf $(BUILD)/isodir && mkdir -p $(BUILD)/isodir/boot/grub
	$(Q)cp $(KELF32) $(BUILD)/isodir/boot/ksync.elf
	$(Q)cp arch/x86_64/grub.cfg $(BUILD)/isodir/boot/grub/grub.cfg
	$(call KSYNC_SAY,GRUB,$@)
	$(KSYNC_Q)grub-mkrescue -o $@ $(BUILD)/isodir >$(BUILD)/grub-mkrescue.log 2>&1 || { cat $(BUILD)/grub-mkrescue.log; exit 1; }

# ---- environment: system packages and the Python virtual environment ----------------
deps:
	@scripts/deps.sh

$(VENV)/.stamp: pyproject.toml scripts/venv.sh
	@scripts/venv.sh $(VENV)
	@touch $@

venv: deps $(VENV)/.stamp

# ---- the two commands ----------------------------------------------------------------
# the builds in parallel, one job per host CPU (the tests' own builds do the same)
NPROC := $(shell nproc 2>/dev/null || echo 1)
# make test: first everything the suites boot or run, in one parallel make (the suites'
# own build steps then find nothing to do) together with the Python environment
# (venv.sh, ~20 s of pip), after the system packages (deps: the compilers and tools the
# builds need); then the suites on every host CPU (pytest-xdist, --dist load: each test
# goes to the next free worker; tests/conftest.py starts the longest modules first).
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) test-build $(VENV)/.stamp
	$(PY) -m pytest -q -ra --durations=10 -n $(NPROC) --dist load tests/

# The kernels of the other schemes and the masked-window kernel, each by a make of its
# own (SCHEME and WINDOWS select the build directory); the stamps first, so that the
# sub-makes never race to create them.
OTHER_SCHEME_KERNELS := $(filter-out $(DEFAULT_SCHEME),$(SCHEMES))
scheme-kernel-%: $(LOCKSTAT_STAMP) $(SCHED_STAMP) $(DEBUG_STAMP)
	@$(MAKE) --no-print-directory SCHEME=$* kernel
windows-kernel: $(LOCKSTAT_STAMP) $(SCHED_STAMP) $(DEBUG_STAMP)
	@$(MAKE) --no-print-directory WINDOWS=1 kernel
test-build: hosted-kernel kernel iso $(OTHER_SCHEME_KERNELS:%=scheme-kernel-%) windows-kernel \
	hosted-tests hosted-kdev hosted-port bench-hosted
.PHONY: test-build windows-kernel

run: venv
	$(KSYNC) run --smp $(SMP) --accel $(ACCEL) --timeout $(TIMEOUT)

stress: venv
	$(PY) -m pytest -q -ra tests/test_stress.py tests/test_user.py::test_user_stress tests/test_user.py::test_sig_storm_stress \
		tests/test_user.py::test_thread_stress "tests/test_kernel.py::test_kernel_tests_pass[8]" \
		tests/test_user_bad.py::test_fuzz_stress "tests/test_busybox.py::test_busybox_matches_linux[smp2-locked-full]" \
		tests/test_user_dyn.py::test_hackbench_long tests/test_schemes.py::test_scheme_spl_stress \
		--run-stress

# the longer set: ksync run --set bench (--repeat 7, --irq-seconds 5, --loss-repeats 7,
# the kernel's `all` experiments, 1800 s per boot unless TIMEOUT is given)
bench: venv
	$(KSYNC) run --smp $(SMP) --accel $(ACCEL) $(if $(filter command line environment,$(origin TIMEOUT)),--timeout $(TIMEOUT)) --set bench

# QEMU waits for gdb on a per-user port (1234 + uid % 1000); .gdbinit connects to it.
GDBPORT ?= $(shell echo $$((1234 + $$(id -u) % 1000)))
debug: venv kernel
	@sed 's/@GDBPORT@/$(GDBPORT)/; s|@KELF@|$(KELF)|' scripts/gdbinit.in > .gdbinit.local
	@echo "QEMU is waiting for gdb on port $(GDBPORT). In another terminal: gdb -x .gdbinit.local"
	$(KSYNC) boot --mode $(or $(MODE),idle) --smp $(SMP) --accel $(ACCEL) --timeout 86400 --no-build \
		--scheme $(SCHEME) --gdb $(GDBPORT)

# busybox sh -i on the serial console (tools/ksync/shell.py, kernel/proc/ushell.c)
shell: venv
	$(KSYNC) sh --smp $(SMP) --accel $(ACCEL) --scheme $(SCHEME)

# The scheme list as make reads it (tests/test_layout.py compares it with the tool's).
print-schemes:
	@echo "$(SCHEMES) / $(DEFAULT_SCHEME)"

clean:
	rm -rf $(BUILD)

help:
	@sed -n '2,28p' Makefile
