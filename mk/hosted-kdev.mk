# mk/hosted-kdev.mk - the hosted port's platform devices (arch/hosted/kdev.c) tested
# standalone, included by the top-level Makefile after mk/lib.mk.
#
# Targets
#   hosted-kdev        build/hosted-kdev/{plain,asan,tsan}/kdev_test
#   hosted-kdev-late   build and run the plain test's PIT lateness measurement (5 s)
#   clean-hosted-kdev  rm -rf build/hosted-kdev
# Uses mk/lib.mk's KSYNC_CC_<flavour>, KSYNC_CFLAGS_<flavour>, KSYNC_LDFLAGS_<flavour>.

HK_OUT := $(KSYNC_T)build/hosted-kdev
HK_SRC := $(KSYNC_T)arch/hosted
HK_DEPS := $(HK_SRC)/kdev.c $(HK_SRC)/kdev.h $(HK_SRC)/tests/kdev_test.c \
	$(KSYNC_T)kernel/include/arch_dev.h $(KSYNC_T)mk/hosted-kdev.mk
# kdev.c sees arch_dev.h (kernel/include) and <ksync/errors.h> (include) only
HK_COMMON := -std=c11 -Wall -Wextra -Werror -I$(KSYNC_T)include -I$(KSYNC_T)kernel/include -pthread
HK_FLAVOURS := plain asan tsan
HK_BINS := $(foreach f,$(HK_FLAVOURS),$(HK_OUT)/$(f)/kdev_test)

.PHONY: hosted-kdev hosted-kdev-late clean-hosted-kdev
hosted-kdev: $(HK_BINS)

define HK_FLAVOUR_RULES
$(HK_OUT)/$(1)/kdev_test: $(HK_DEPS)
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,CCLD-$(1),$$@)
	$(KSYNC_Q)$$(KSYNC_CC_$(1)) $(HK_COMMON) $$(KSYNC_CFLAGS_$(1)) $$(HOSTED_EXTRA_CFLAGS) \
		$(HK_SRC)/kdev.c $(HK_SRC)/tests/kdev_test.c -o $$@ \
		$$(KSYNC_LDFLAGS_$(1)) -pthread $$(HOSTED_EXTRA_LDFLAGS)
endef
$(foreach f,$(HK_FLAVOURS),$(eval $(call HK_FLAVOUR_RULES,$(f))))

hosted-kdev-late: $(HK_OUT)/plain/kdev_test
	$(HK_OUT)/plain/kdev_test late 5

clean-hosted-kdev:
	rm -rf $(HK_OUT)
