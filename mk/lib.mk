# mk/lib.mk - build rules for libksync's hosted (Linux) side, included by the top-level
# Makefile (`include mk/lib.mk`).  Every output goes under build/hosted/.
#
# Targets
#   lib            build/hosted/libksync.a       lib/*.c + lib/hosted/platform.c, -O2 -g -fPIC
#   hosted-tests   build/hosted/tests/{plain,asan,tsan}/<name> for each tests/unit/test_<...>.c
#                  and build/hosted/stress/{plain,asan,tsan}/<name> for tests/stress/stress_*.c
#   bench-hosted   build/hosted/bench/<name> for each bench/<name>.c (bench/prims.c -> prims)
#   install        $(DESTDIR)$(PREFIX)/include/ksync/*.h (the library's API),
#                  .../include/ksync/testing/{ktest,measure}.h (the test and measurement
#                  harness the project's own tests use; not the API; installed with their
#                  own include paths rewritten to <ksync/testing/...>), .../lib/libksync.a,
#                  .../lib/pkgconfig/ksync.pc (PREFIX default /usr/local)
#   clean-hosted   rm -rf build/hosted
#
# Variables the includer may set (all have defaults)
#   TOP            repository root relative to make's working directory (default .)
#   HOSTED_CC      compiler for the plain build (default: $(CC), or gcc if CC is make's
#                  built-in default)
#   HOSTED_SAN_CC  compiler for the asan and tsan builds (default $(HOSTED_CC))
#   HOSTED_OPT     optimisation/debug flags of the plain build (default -O2 -g)
#   HOSTED_EXTRA_CFLAGS / HOSTED_EXTRA_LDFLAGS   appended to every hosted compile / link
#   PREFIX, DESTDIR, KSYNC_VERSION               for install
#   V=1            show the command lines (as the top-level Makefile)
#
# Variables defined for the includer
#   LIBKSYNC_SRCS      the platform-neutral, freestanding library sources (lib/*.c) that
#                      the kernel compiles with its own flags and -DKSYNC_KERNEL
#   LIBKSYNC_HEADERS   include/ksync/*.h but the harness headers (the installed API)
#   LIBKSYNC_TESTING_HEADERS   include/ksync/{ktest,measure}.h (installed under testing/)
#   HOSTED_OUT         build/hosted (with the TOP prefix)
#   HOSTED_LIB         build/hosted/libksync.a
#   HOSTED_TEST_NAMES  the test_* names; HOSTED_TEST_BINS the binaries of all flavours
#                      (the tsan flavour without the explorer's test_explore_*)
#   HOSTED_BENCH_BINS  the bench binaries
#
# Nothing here touches CC, CFLAGS, LDFLAGS or the default goal of the includer.

KSYNC_LIB_SAVED_GOAL := $(.DEFAULT_GOAL)

TOP ?= .
# Path prefix for files under TOP, without a leading "./" (make strips "./" from target
# names, which would stop static pattern rules from matching).
KSYNC_T := $(if $(filter .,$(TOP)),,$(patsubst %/,%,$(TOP))/)

HOSTED_CC ?= $(if $(filter default,$(origin CC)),gcc,$(CC))
HOSTED_SAN_CC ?= $(HOSTED_CC)
HOSTED_OPT ?= -O2 -g
HOSTED_EXTRA_CFLAGS ?=
HOSTED_EXTRA_LDFLAGS ?=
PREFIX ?= /usr/local
DESTDIR ?=
KSYNC_VERSION ?= 0.1.0

KSYNC_Q := $(if $(V),,@)
# $(call KSYNC_SAY,TAG,file): the short progress line, unless V=1 or make -s.
KSYNC_SILENT := $(findstring s,$(firstword -$(MAKEFLAGS)))
KSYNC_SAY = $(if $(KSYNC_Q),$(if $(KSYNC_SILENT),,@echo "  $(1) $(2)"))

HOSTED_OUT := $(KSYNC_T)build/hosted
HOSTED_LIB := $(HOSTED_OUT)/libksync.a

LIBKSYNC_SRCS := $(sort $(wildcard $(KSYNC_T)lib/*.c))
# The test harness (KTAP registry, primitive-cost method) is not the library's API: it is
# installed apart, under include/ksync/testing/.
LIBKSYNC_TESTING_HEADERS := $(addprefix $(KSYNC_T)include/ksync/,ktest.h measure.h)
LIBKSYNC_HEADERS := $(filter-out $(LIBKSYNC_TESTING_HEADERS),\
	$(sort $(wildcard $(KSYNC_T)include/ksync/*.h)))
KSYNC_HOSTED_LIB_SRCS := $(LIBKSYNC_SRCS) $(filter-out %/ktest_main.c,$(sort $(wildcard $(KSYNC_T)lib/hosted/*.c)))
KSYNC_TEST_MAIN := $(KSYNC_T)lib/hosted/ktest_main.c
KSYNC_TEST_SRCS := $(sort $(wildcard $(KSYNC_T)tests/unit/test_*.c))
HOSTED_TEST_NAMES := $(patsubst $(KSYNC_T)tests/unit/%.c,%,$(KSYNC_TEST_SRCS))
# Stress programs: KTAP tests like the unit tests, sized by KSYNC_STRESS_OPS at run time.
KSYNC_STRESS_SRCS := $(sort $(wildcard $(KSYNC_T)tests/stress/stress_*.c))
HOSTED_STRESS_NAMES := $(patsubst $(KSYNC_T)tests/stress/%.c,%,$(KSYNC_STRESS_SRCS))
# The optimistic schemes of the one list (kernel/spl/schemes.txt), for bench/spl_fast.c.
KSYNC_SCHEMES_FILE := $(KSYNC_T)kernel/spl/schemes.txt
KSYNC_OPTIM_IDS := $(subst -,_,$(shell awk '!/^\#/ && NF && $$3 == 1 { print $$1 }' $(KSYNC_SCHEMES_FILE)))
KSYNC_BENCH_SRCS := $(filter-out %/spl_fast.c,$(sort $(wildcard $(KSYNC_T)bench/*.c)))
HOSTED_BENCH_BINS := $(patsubst $(KSYNC_T)bench/%.c,$(HOSTED_OUT)/bench/%,$(KSYNC_BENCH_SRCS)) \
	$(KSYNC_OPTIM_IDS:%=$(HOSTED_OUT)/bench/spl_fast_%)

KSYNC_HOSTED_COMMON := -std=c11 -Wall -Wextra -Werror -I$(KSYNC_T)include -I$(KSYNC_T)common -MMD -MP

# Per flavour: compiler, compile flags, link flags.
KSYNC_CC_plain := $(HOSTED_CC)
KSYNC_CFLAGS_plain := $(HOSTED_OPT) -fPIC
KSYNC_LDFLAGS_plain :=
# The sanitizer builds (tests only, never installed) carry line tables only (-g1): their
# reports name function, file and line from them, and -g1 compiles in ~80 % of -g's time.
KSYNC_CC_asan := $(HOSTED_SAN_CC)
KSYNC_CFLAGS_asan := -O1 -g1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all
KSYNC_LDFLAGS_asan := -fsanitize=address,undefined -fno-sanitize-recover=all
KSYNC_CC_tsan := $(HOSTED_SAN_CC)
KSYNC_CFLAGS_tsan := -O1 -g1 -fsanitize=thread
KSYNC_LDFLAGS_tsan := -fsanitize=thread

# The archive each flavour's tests link: plain uses the installed one.
KSYNC_ARCHIVE_plain := $(HOSTED_LIB)
KSYNC_ARCHIVE_asan := $(HOSTED_OUT)/obj/asan/libksync.a
KSYNC_ARCHIVE_tsan := $(HOSTED_OUT)/obj/tsan/libksync.a

# Extra compile flags for single bench sources (by name).  prims pushes onto the stack
# from inline asm (pushfq/popfq), which would clobber the red zone.
KSYNC_BENCH_CFLAGS_prims := -mno-red-zone
# The spl fast-path benchmarks: one source, bench/spl_fast.c, built once per optimistic
# scheme of kernel/spl/schemes.txt (the one list) as build/hosted/bench/spl_fast_<id>, with
# -DKSYNC_SPL_HEADER="spl/<name>.h". They compile the kernel's spl.h against a user-mode arch shim
# (bench/spl_shim/arch_impl.h is found before any port's arch_impl.h).
KSYNC_SPL_FAST_CFLAGS := -I$(KSYNC_T)bench -I$(KSYNC_T)bench/spl_shim -idirafter $(KSYNC_T)kernel/include

KSYNC_ALL_OBJS :=

# The tests each flavour builds. The explorer's tests (test_explore_*: tests/explore/) run
# their threads as coroutines on one OS thread, switched with TSan's synchronizing fiber
# switch: ThreadSanitizer sees every step ordered and can report nothing there, so they
# are built plain and with ASan+UBSan only (they were 9 of the TSan build's binaries and
# ~25 CPU-s of its test time, for no check).
KSYNC_TEST_NAMES_plain := $(HOSTED_TEST_NAMES)
KSYNC_TEST_NAMES_asan := $(HOSTED_TEST_NAMES)
KSYNC_TEST_NAMES_tsan := $(filter-out test_explore_%,$(HOSTED_TEST_NAMES))

# $(1) = flavour: objects, archive, test binaries.
define KSYNC_FLAVOUR_RULES
KSYNC_LIBOBJS_$(1) := $$(patsubst $(KSYNC_T)%.c,$(HOSTED_OUT)/obj/$(1)/%.o,$(KSYNC_HOSTED_LIB_SRCS))
KSYNC_MAINOBJ_$(1) := $$(patsubst $(KSYNC_T)%.c,$(HOSTED_OUT)/obj/$(1)/%.o,$(KSYNC_TEST_MAIN))
KSYNC_TESTOBJS_$(1) := $$(patsubst $(KSYNC_T)%.c,$(HOSTED_OUT)/obj/$(1)/%.o,$(KSYNC_TEST_SRCS) $(KSYNC_STRESS_SRCS))
KSYNC_TESTBINS_$(1) := $$(patsubst %,$(HOSTED_OUT)/tests/$(1)/%,$$(KSYNC_TEST_NAMES_$(1))) \
	$$(patsubst %,$(HOSTED_OUT)/stress/$(1)/%,$(HOSTED_STRESS_NAMES))
KSYNC_ALL_OBJS += $$(KSYNC_LIBOBJS_$(1)) $$(KSYNC_MAINOBJ_$(1)) $$(KSYNC_TESTOBJS_$(1))

$(HOSTED_OUT)/obj/$(1)/%.o: $(KSYNC_T)%.c
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,CC-$(1),$$<)
	$(KSYNC_Q)$$(KSYNC_CC_$(1)) $$(KSYNC_HOSTED_COMMON) $$(KSYNC_CFLAGS_$(1)) $$(KSYNC_EXTRA_CFLAGS) \
		$$(HOSTED_EXTRA_CFLAGS) -c $$< -o $$@

# The archive also depends on this file, so a source added to the list above (whose
# object may be older than the archive) still gets in.
$$(KSYNC_ARCHIVE_$(1)): $$(KSYNC_LIBOBJS_$(1)) $(KSYNC_T)mk/lib.mk
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,AR,$$@)
	$(KSYNC_Q)rm -f $$@ && ar rcs $$@ $$(filter %.o,$$^)

$(HOSTED_OUT)/tests/$(1)/%: $(HOSTED_OUT)/obj/$(1)/tests/unit/%.o $$(KSYNC_MAINOBJ_$(1)) $$(KSYNC_ARCHIVE_$(1))
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,LD,$$@)
	$(KSYNC_Q)$$(KSYNC_CC_$(1)) $$(KSYNC_LDFLAGS_$(1)) $$(HOSTED_EXTRA_LDFLAGS) -o $$@ \
		$$< $$(KSYNC_MAINOBJ_$(1)) $$(KSYNC_ARCHIVE_$(1)) -pthread

$(HOSTED_OUT)/stress/$(1)/%: $(HOSTED_OUT)/obj/$(1)/tests/stress/%.o $$(KSYNC_MAINOBJ_$(1)) $$(KSYNC_ARCHIVE_$(1))
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,LD,$$@)
	$(KSYNC_Q)$$(KSYNC_CC_$(1)) $$(KSYNC_LDFLAGS_$(1)) $$(HOSTED_EXTRA_LDFLAGS) -o $$@ \
		$$< $$(KSYNC_MAINOBJ_$(1)) $$(KSYNC_ARCHIVE_$(1)) -pthread
endef

$(foreach f,plain asan tsan,$(eval $(call KSYNC_FLAVOUR_RULES,$(f))))

HOSTED_TEST_BINS := $(KSYNC_TESTBINS_plain) $(KSYNC_TESTBINS_asan) $(KSYNC_TESTBINS_tsan)

# Bench programs: plain flags, linked against libksync.a.
KSYNC_BENCH_OBJS := $(patsubst $(KSYNC_T)%.c,$(HOSTED_OUT)/obj/plain/%.o,$(KSYNC_BENCH_SRCS))
KSYNC_ALL_OBJS += $(KSYNC_BENCH_OBJS)
$(foreach b,$(patsubst $(KSYNC_T)bench/%.c,%,$(KSYNC_BENCH_SRCS)),\
	$(eval $(HOSTED_OUT)/obj/plain/bench/$(b).o: KSYNC_EXTRA_CFLAGS := $(KSYNC_BENCH_CFLAGS_$(b))))

# tests/unit/test_explore_sched.c compiles kernel/sched/rq-lockfree.c into the test: the
# kernel's headers (searched after the system's, so none can shadow a libc header),
# bench/spl_shim/arch_impl.h as the port's public header (as tests/test_layout.py
# compiles kernel/ against it) and the default scheme for spl.h (the scheduler uses none
# of it).
KSYNC_DEFAULT_SCHEME := $(shell awk '!/^\#/ && NF && $$2 == 1 { print $$1 }' $(KSYNC_SCHEMES_FILE))
KSYNC_TEST_CFLAGS_test_explore_sched := -I$(KSYNC_T)bench/spl_shim -idirafter $(KSYNC_T)kernel/include \
	-DKSYNC_SPL_HEADER='"spl/$(KSYNC_DEFAULT_SCHEME).h"'
$(foreach f,plain asan tsan,$(eval $(HOSTED_OUT)/obj/$(f)/tests/unit/test_explore_sched.o: \
	KSYNC_EXTRA_CFLAGS := $(KSYNC_TEST_CFLAGS_test_explore_sched)))

# bench/spl_fast.c once per optimistic scheme.
KSYNC_SPL_FAST_OBJS := $(KSYNC_OPTIM_IDS:%=$(HOSTED_OUT)/obj/plain/bench/spl_fast-%.o)
KSYNC_ALL_OBJS += $(KSYNC_SPL_FAST_OBJS)
$(KSYNC_SPL_FAST_OBJS): $(HOSTED_OUT)/obj/plain/bench/spl_fast-%.o: $(KSYNC_T)bench/spl_fast.c $(KSYNC_SCHEMES_FILE)
	@mkdir -p $(@D)
	$(call KSYNC_SAY,CC-plain,$< [$*])
	$(KSYNC_Q)$(KSYNC_CC_plain) $(KSYNC_HOSTED_COMMON) $(KSYNC_CFLAGS_plain) $(KSYNC_SPL_FAST_CFLAGS) \
		-DKSYNC_SPL_HEADER='"spl/$(subst _,-,$*).h"' $(HOSTED_EXTRA_CFLAGS) -c $< -o $@

$(KSYNC_OPTIM_IDS:%=$(HOSTED_OUT)/bench/spl_fast_%): $(HOSTED_OUT)/bench/spl_fast_%: $(HOSTED_OUT)/obj/plain/bench/spl_fast-%.o $(HOSTED_LIB)
	@mkdir -p $(@D)
	$(call KSYNC_SAY,LD,$@)
	$(KSYNC_Q)$(HOSTED_CC) $(HOSTED_EXTRA_LDFLAGS) -o $@ $< $(HOSTED_LIB) -pthread

# Extra libraries for single bench programs (by name): the peers we compare against.
KSYNC_BENCH_LDLIBS_cmp_peers := -lck
# Extra objects for single bench programs (by name): cmp_peers also links libksync's
# stack and mpmc queue compiled without backoff (the file sets KSYNC_BACKOFF_MAX 0).
KSYNC_BENCH_EXTRA_OBJS_cmp_peers := $(HOSTED_OUT)/obj/plain/bench/cmp_peers/ksync_nobackoff.o
KSYNC_ALL_OBJS += $(KSYNC_BENCH_EXTRA_OBJS_cmp_peers)
$(HOSTED_OUT)/bench/cmp_peers: $(KSYNC_BENCH_EXTRA_OBJS_cmp_peers)

$(HOSTED_OUT)/bench/%: $(HOSTED_OUT)/obj/plain/bench/%.o $(HOSTED_LIB)
	@mkdir -p $(@D)
	$(call KSYNC_SAY,LD,$@)
	$(KSYNC_Q)$(HOSTED_CC) $(HOSTED_EXTRA_LDFLAGS) -o $@ $< $(KSYNC_BENCH_EXTRA_OBJS_$*) \
		$(HOSTED_LIB) $(KSYNC_BENCH_LDLIBS_$*) -pthread

$(HOSTED_OUT)/ksync.pc: $(KSYNC_T)lib/ksync.pc.in FORCE
	@mkdir -p $(@D)
	$(KSYNC_Q)sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' -e 's|@VERSION@|$(KSYNC_VERSION)|g' $< > $@

.PHONY: lib hosted-tests bench-hosted install clean-hosted FORCE
FORCE:

lib: $(HOSTED_LIB)

hosted-tests: $(HOSTED_TEST_BINS)

bench-hosted: $(HOSTED_BENCH_BINS)

# A relative PREFIX is taken relative to make's working directory.
KSYNC_DEST = $(DESTDIR)$(abspath $(PREFIX))

install: $(HOSTED_LIB) $(HOSTED_OUT)/ksync.pc
	install -d $(KSYNC_DEST)/include/ksync/testing $(KSYNC_DEST)/lib/pkgconfig
	install -m 644 $(LIBKSYNC_HEADERS) $(KSYNC_DEST)/include/ksync/
	for h in $(LIBKSYNC_TESTING_HEADERS); do \
		d=$(KSYNC_DEST)/include/ksync/testing/$${h##*/}; \
		sed -e 's|<ksync/ktest\.h>|<ksync/testing/ktest.h>|g' \
		    -e 's|<ksync/measure\.h>|<ksync/testing/measure.h>|g' $$h > $$d && \
		chmod 644 $$d || exit 1; \
	done
	install -m 644 $(HOSTED_LIB) $(KSYNC_DEST)/lib/libksync.a
	install -m 644 $(HOSTED_OUT)/ksync.pc $(KSYNC_DEST)/lib/pkgconfig/ksync.pc

clean-hosted:
	rm -rf $(HOSTED_OUT)

# Objects reached only through pattern rules would otherwise count as intermediate and
# be deleted after each build.
.SECONDARY: $(KSYNC_ALL_OBJS)

-include $(KSYNC_ALL_OBJS:.o=.d)

# Leave the includer's default goal as it was (if it was unset, the next target it
# defines becomes the default, as if this file were not there).
.DEFAULT_GOAL := $(KSYNC_LIB_SAVED_GOAL)
