# mk/hosted-port.mk - the hosted port's runtime (arch/hosted/), included by the top-level
# Makefile after mk/lib.mk. Everything goes under build/hosted-port/.
#
# Targets
#   hosted-port        build/hosted-port/{plain,asan,tsan,hard}/hosted_port_test (the
#                      behaviour tests; hard = -DHOSTED_HARD_MASK=1, real pthread_sigmask)
#                      and build/hosted-port/costs, costs-hard (the measurements)
#   hosted-port-costs  build and run build/hosted-port/costs and costs-hard
#   clean-hosted-port  rm -rf build/hosted-port
# Uses mk/lib.mk's HOSTED_CC, HOSTED_SAN_CC, KSYNC_CFLAGS_<flavour>, KSYNC_LDFLAGS_<flavour>
# and HOSTED_LIB (the costs program reuses the measurement code of libksync).

HP_OUT := $(KSYNC_T)build/hosted-port
HP_SRC := $(KSYNC_T)arch/hosted
HP_RUNTIME := $(HP_SRC)/runtime.c $(HP_SRC)/hosted.h
HP_COMMON := -std=c11 -Wall -Wextra -Werror -I$(KSYNC_T)include -I$(KSYNC_T)common -pthread
# -rdynamic: the panic's backtrace names non-static functions through dladdr
HP_LDFLAGS := -rdynamic -pthread

KSYNC_CC_hard := $(HOSTED_CC)
KSYNC_CFLAGS_hard := $(HOSTED_OPT) -DHOSTED_HARD_MASK=1
KSYNC_LDFLAGS_hard :=

HP_FLAVOURS := plain asan tsan hard
HP_TEST_BINS := $(foreach f,$(HP_FLAVOURS),$(HP_OUT)/$(f)/hosted_port_test)
HP_COST_BINS := $(HP_OUT)/costs $(HP_OUT)/costs-hard

.PHONY: hosted-port hosted-port-costs clean-hosted-port
hosted-port: $(HP_TEST_BINS) $(HP_COST_BINS)

define HP_FLAVOUR_RULES
$(HP_OUT)/$(1)/hosted_port_test: $(HP_SRC)/tests/hosted_port_test.c $(HP_RUNTIME) $(KSYNC_T)mk/hosted-port.mk
	@mkdir -p $$(@D)
	$$(call KSYNC_SAY,CCLD-$(1),$$@)
	$(KSYNC_Q)$$(KSYNC_CC_$(1)) $(HP_COMMON) $$(KSYNC_CFLAGS_$(1)) $$(HOSTED_EXTRA_CFLAGS) \
		$(HP_SRC)/runtime.c $(HP_SRC)/tests/hosted_port_test.c -o $$@ \
		$$(KSYNC_LDFLAGS_$(1)) $(HP_LDFLAGS) $$(HOSTED_EXTRA_LDFLAGS)
endef
$(foreach f,$(HP_FLAVOURS),$(eval $(call HP_FLAVOUR_RULES,$(f))))

$(HP_OUT)/costs: $(HP_SRC)/costs.c $(HP_RUNTIME) $(HOSTED_LIB) $(KSYNC_T)common/hosted_env.h $(KSYNC_T)mk/hosted-port.mk
	@mkdir -p $(@D)
	$(call KSYNC_SAY,CCLD,$@)
	$(KSYNC_Q)$(HOSTED_CC) $(HP_COMMON) $(HOSTED_OPT) $(HOSTED_EXTRA_CFLAGS) \
		$(HP_SRC)/runtime.c $(HP_SRC)/costs.c $(HOSTED_LIB) -o $@ $(HP_LDFLAGS) $(HOSTED_EXTRA_LDFLAGS)

$(HP_OUT)/costs-hard: $(HP_SRC)/costs.c $(HP_RUNTIME) $(HOSTED_LIB) $(KSYNC_T)common/hosted_env.h $(KSYNC_T)mk/hosted-port.mk
	@mkdir -p $(@D)
	$(call KSYNC_SAY,CCLD,$@)
	$(KSYNC_Q)$(HOSTED_CC) $(HP_COMMON) $(HOSTED_OPT) -DHOSTED_HARD_MASK=1 $(HOSTED_EXTRA_CFLAGS) \
		$(HP_SRC)/runtime.c $(HP_SRC)/costs.c $(HOSTED_LIB) -o $@ $(HP_LDFLAGS) $(HOSTED_EXTRA_LDFLAGS)

hosted-port-costs: $(HP_COST_BINS)
	$(HP_OUT)/costs
	$(HP_OUT)/costs-hard

clean-hosted-port:
	rm -rf $(HP_OUT)
