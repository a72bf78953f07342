# mk/hosted-kernel.mk - the portable kernel (kernel/) built for the hosted port
# (arch/hosted/: a Linux process; issue 9 items 3 and 4, docs/hosted-port.md "The kernel
# on the hosted port"). Included by the top-level Makefile after mk/lib.mk and
# mk/hosted-port.mk (it uses SCHEMES_FILE, DEFAULT_SCHEME, LIBKSYNC_SRCS, KSYNC_CC_*,
# KSYNC_CFLAGS_*, KSYNC_LDFLAGS_* and KSYNC_SAY/KSYNC_Q from them).
#
# Target hosted-kernel: build/hosted-kernel/<flavour>/<scheme>/ksync for
#   plain                every scheme whose `hosted` column in kernel/spl/schemes.txt is 1
#   asan, tsan, hard     the default scheme (asan = ASan+UBSan; hard = -DHOSTED_HARD_MASK=1,
#                        on-chip masking by pthread_sigmask)
# Kernel objects see -Iinclude -Icommon -Ikernel/include -Iarch/hosted/public only (the
# door of arch_if.h), and -Ikernel last (a subsystem's interface by its folder:
# "fs/vfs.h", "syscall/linux_abi.h"); the port's own files (runtime, kport, boot, devices, context) also
# see arch/hosted/ (and kernel/include only after the system headers, see HK_PORTINC). kernel/core/lib.c is left out: its memset/memcpy/strlen/... are libc's
# here (a second definition would collide with libc and with the sanitizers'
# interceptors).
#
# The platform devices (PIT, RTC, ATA over the -disk image): arch/hosted/kdev.c.

HK_DEV_SRC := arch/hosted/kdev.c

HK_OUT := $(BUILD)/hosted-kernel
HK_SCHEMES := $(shell awk '!/^\#/ && NF && $$6 == 1 { print $$1 }' $(SCHEMES_FILE))
HK_SAN_FLAVOURS := asan tsan hard
# kernel/proc and most of kernel/syscall (the user space, issue 24) are left out: the
# hosted port has no ring 3 and no address spaces; main.c's mode=user sees urun_main
# absent (weak) and says so. kernel/fs (the VFS, RAM file system, pipes, tty) is portable
# and runs here under the sanitizers, and so do the file calls' handlers
# (kernel/syscall/sysfile.c) over the port's user copies (arch/hosted/ucopy.c: the
# process's own memory), called by kernel/tests/test_sysfile.c.
HK_KSUBSYS := core mm dev exp sched lock fs
HK_KERNEL_SRCS := $(filter-out kernel/core/lib.c,$(sort $(wildcard $(HK_KSUBSYS:%=kernel/%/*.c)))) \
	kernel/syscall/sysfile.c \
	kernel/spl/intr.c kernel/spl/intr_hw.c $(sort $(wildcard kernel/tests/*.c)) $(LIBKSYNC_SRCS)
HK_PORT_SRCS := arch/hosted/runtime.c arch/hosted/kport.c arch/hosted/boot.c $(HK_DEV_SRC) \
	arch/hosted/ucopy.c \
	arch/hosted/context.c arch/hosted/switch.S arch/hosted/ktest_context.c \
	arch/hosted/ktest_storm.c

HK_CC_plain := $(HOSTED_CC)
HK_CFLAGS_plain := $(HOSTED_OPT)
HK_LDFLAGS_plain :=
HK_CC_asan := $(KSYNC_CC_asan)
HK_CFLAGS_asan := $(KSYNC_CFLAGS_asan)
HK_LDFLAGS_asan := $(KSYNC_LDFLAGS_asan)
HK_CC_tsan := $(KSYNC_CC_tsan)
HK_CFLAGS_tsan := $(KSYNC_CFLAGS_tsan)
HK_LDFLAGS_tsan := $(KSYNC_LDFLAGS_tsan)
HK_CC_hard := $(HOSTED_CC)
HK_CFLAGS_hard := $(HOSTED_OPT) -DHOSTED_HARD_MASK=1
HK_LDFLAGS_hard :=

# Dependencies: -MMD for the kernel's files; -MD for the port's, whose kernel headers come
# through -idirafter (a system directory to the compiler, which -MMD leaves out: a port
# file would then not be rebuilt when a kernel header it includes changes - a changed
# struct lock_class left arch/hosted/ktest_storm.o with the old layout)
HK_COMMON := -std=c11 -Wall -Wextra -Werror -fno-omit-frame-pointer -pthread -DKSYNC_KERNEL -MP
HK_KINC := -Iinclude -Icommon -Ikernel/include -Iarch/hosted/public -Ikernel
# The port's files reach kernel/include after the system directories (-idirafter): a
# kernel header named like a C library one must never shadow it (<pthread.h> includes
# <sched.h>, <signal.h>, ...). They include no kernel header that has a libc namesake.
HK_PORTINC := -Iinclude -Icommon -idirafter kernel/include -Iarch/hosted/public -Iarch/hosted
# -rdynamic: the panic's backtrace names functions through dladdr
HK_LDFLAGS := -rdynamic -pthread

HK_BINS := $(HK_SCHEMES:%=$(HK_OUT)/plain/%/ksync) \
	$(HK_SAN_FLAVOURS:%=$(HK_OUT)/%/$(DEFAULT_SCHEME)/ksync)

.PHONY: hosted-kernel clean-hosted-kernel print-hosted-schemes
hosted-kernel: $(HK_BINS)

print-hosted-schemes:
	@echo "$(HK_SCHEMES)"

# $(1) flavour, $(2) scheme
define HK_RULES
HK_OBJS_$(1)_$(2) := $$(patsubst %.S,$(HK_OUT)/$(1)/$(2)/obj/%.o,$$(patsubst %.c,$(HK_OUT)/$(1)/$(2)/obj/%.o,$(HK_KERNEL_SRCS) kernel/spl/$(2).c $(HK_PORT_SRCS)))
HK_DEFS_$(1)_$(2) := -DKSYNC_SPL_HEADER='"spl/$(2).h"' \
	-DKSYNC_LIST_OPTIMISTIC=$$(shell awk '$$$$1 == "$(2)" { print $$$$3 }' $(SCHEMES_FILE)) \
	$(SCHED_DEFS)
$(HK_OUT)/$(1)/$(2)/obj/kernel/sched/thread.o: $(SCHED_STAMP)

$(HK_OUT)/$(1)/$(2)/obj/%.o: %.c mk/hosted-kernel.mk $(LOCKSTAT_STAMP) $(DEBUG_STAMP)
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,CC-hk-$(1)-$(2),$$<)
	$(KSYNC_Q)$$(HK_CC_$(1)) $(HK_COMMON) $$(HK_CFLAGS_$(1)) $(DEBUG_INFO) $$(HK_DEFS_$(1)_$(2)) \
		$$(if $$(filter arch/hosted/%,$$<),$(HK_PORTINC) -MD,$(HK_KINC) -MMD) $$(if $$(filter $(COST_TABLE_SRCS),$$<),-g1) -c $$< -o $$@

$(HK_OUT)/$(1)/$(2)/obj/%.o: %.S mk/hosted-kernel.mk
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,AS-hk-$(1)-$(2),$$<)
	$(KSYNC_Q)$$(HK_CC_$(1)) -MMD -MP -c $$< -o $$@

$(HK_OUT)/$(1)/$(2)/ksync: $$(HK_OBJS_$(1)_$(2))
	$$(call KSYNC_SAY,LD-hk-$(1),$$@)
	$(KSYNC_Q)$$(HK_CC_$(1)) $$(HK_LDFLAGS_$(1)) $(HK_LDFLAGS) -o $$@ $$^ -ldl

-include $$(HK_OBJS_$(1)_$(2):.o=.d)
endef
$(foreach s,$(HK_SCHEMES),$(eval $(call HK_RULES,plain,$(s))))
$(foreach f,$(HK_SAN_FLAVOURS),$(eval $(call HK_RULES,$(f),$(DEFAULT_SCHEME))))

clean-hosted-kernel:
	rm -rf $(HK_OUT)
