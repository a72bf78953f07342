/*
 * bench/spl_fast.h - the body of the hosted spl fast-path benchmarks
 * (bench/spl_fast.c, built once per optimistic scheme): the kernel's own
 * kernel/include/spl.h, compiled for user mode through bench/spl_shim/arch_impl.h, runs
 * crit_enter()+crit_leave() with nothing pending - the path a critical section takes
 * when no interrupt arrives - next to the per-thread flag set+clear in the same process,
 * and splx(splraise(IPL_BIO)), nothing pending. crit_enter/crit_leave is one block of
 * spl.h shared by the optimistic schemes (spl-optim and tpr-optim compile it to the same
 * instructions: tests/test_spl_fast_code.py), so their crit_enter_leave rows measure the
 * same code; splraise/splx is where the schemes differ (spl-optim: an xor and an unlocked
 * cmpxchg on the level-and-pending word; tpr-optim, cli-optim: a store, then a check).
 * Small & Manley 1997 Table 5 / section 5.3 (the flag cost); issue 4's bar: the
 * optimistic schemes' crit_enter+crit_leave within 2 TSC ticks of the flag cost.
 *
 * Output: KSYNC {"kind":"hosted_boot",...}, then KSYNC {"kind":"irq_prim","scheme":S,
 * "name":"crit_enter_leave"|"splraise_splx"|"flag"|"flag_incdec",...} rows (protocol.md sections 4-5), in KTAP.
 * Method: include/ksync/measure.h (200 batches x 256 ops, empty loop subtracted).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <ksync/measure.h>
#include "hosted_env.h"
#include "spl.h"

_Thread_local unsigned shim_cpu_index __attribute__((tls_model("local-exec")));
struct kcpu kcpus[MAX_CPUS];	/* the kernel's per-CPU structure (spl at offset 0) */
static _Thread_local uint8_t flag __attribute__((used, tls_model("local-exec")));

void shim_unreachable(const char *what)
{
	fprintf(stderr, "spl_fast: %s reached: something was pending, the benchmark is wrong\n", what);
	abort();
}
void spl_lower_slow(struct spl_cpu *c, spl_t s) { (void)c; (void)s; shim_unreachable("spl_lower_slow"); }
void spl_crit_slow(struct spl_cpu *c) { (void)c; shim_unreachable("spl_crit_slow"); }
void spl_bad_level(unsigned level) { (void)level; shim_unreachable("spl_bad_level"); }
void spl_bad_splx(spl_t s, unsigned cur) { (void)s; (void)cur; shim_unreachable("spl_bad_splx"); }
void panic(const char *fmt, ...) { fprintf(stderr, "spl_fast: panic: %s\n", fmt); abort(); }

static uint64_t t[KSYNC_PRIM_BATCHES], e[KSYNC_PRIM_BATCHES];

#define ROW(name, detail, ...)                                                        \
	do {                                                                          \
		KSYNC_MEASURE(e, 16, KSYNC_PRIM_OPS_PER_BATCH, __VA_ARGS__);          \
		KSYNC_MEASURE(e, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, (void)0); \
		KSYNC_MEASURE(t, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, __VA_ARGS__); \
		struct ksync_prim_result r = ksync_prim_compute(t, KSYNC_PRIM_BATCHES,  \
			KSYNC_PRIM_OPS_PER_BATCH, e, KSYNC_PRIM_BATCHES);              \
		char a[24], b[24], c[24], d[24], f[24];                               \
		ksync_fixed2_format(a, sizeof a, r.min_x100);                         \
		ksync_fixed2_format(b, sizeof b, r.median_x100);                      \
		ksync_fixed2_format(c, sizeof c, r.p99_x100);                         \
		ksync_fixed2_format(d, sizeof d, r.max_x100);                         \
		ksync_fixed2_format(f, sizeof f, r.empty_x100);                       \
		printf("KSYNC {\"kind\":\"irq_prim\",\"scheme\":\"%s\",\"name\":\"%s\","   \
		       "\"detail\":\"%s\",\"unit\":\"tsc_ticks\",\"batches\":%d,"       \
		       "\"ops_per_batch\":%d,\"min\":%s,\"median\":%s,\"p99\":%s,"     \
		       "\"max\":%s,\"empty\":%s}\n", KSYNC_SCHEME, name, detail,       \
		       KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, a, b, c, d, f);    \
	} while (0)

int main(void)
{
	const char *source;
	char model[64];
	pin_to_current_cpu();
	uint64_t hz = tsc_hz(&source);
	cpu_model(model, sizeof model);
	printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
	       "\"cpu_model\":\"%s\",\"cpus\":%ld}\n", (unsigned long long)hz, source, model,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("ktap: KTAP version 1\nktap: 1..1\n");
	for (int round = 0; round < 2; round++) {	/* the first round warms up */
		if (round == 1) {
			ROW("crit_enter_leave", KSYNC_SCHEME " crit_enter(); crit_leave() (kernel spl.h, user mode)",
			    ({ crit_enter(); crit_leave(); }));
			ROW("splraise_splx", KSYNC_SCHEME " splx(splraise(IPL_BIO)) (kernel spl.h, user mode)",
			    ({ spl_t s = splraise(IPL_BIO); splx(s); }));
			ROW("flag", "movb $1,%fs:flag; movb $0,%fs:flag (thread-local)",
			    ({ __asm__ volatile("movb $1, %%fs:flag@tpoff; movb $0, %%fs:flag@tpoff" ::: "memory"); }));
			/* a nestable flag done the obvious way: one byte incremented and
			 * decremented, each read-modify-write waiting for the other's store */
			ROW("flag_incdec", "incb %fs:flag; decb %fs:flag (thread-local)",
			    ({ __asm__ volatile("incb %%fs:flag@tpoff; decb %%fs:flag@tpoff" ::: "memory", "cc"); }));
		} else {
			KSYNC_MEASURE(t, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, ({ crit_enter(); crit_leave(); }));
		}
	}
	int ok = kcpus[0].spl.ipl == IPL_NONE && kcpus[0].spl.pending == 0 && kcpus[0].spl.crit_flag == 0;
	printf("ktap: %s 1 spl_fast_%s\n", ok ? "ok" : "not ok", KSYNC_SCHEME);
	return ok ? 0 : 1;
}
