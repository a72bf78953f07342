/*
 * mwcas_cost.c - uncontended cost of one k-word MWCAS, k = 1..8, for the soft variant
 * (Harris-Fraser-Pratt with RDCSS: 3k + 1 CAS, words clean afterwards) and the gkmz
 * variant (Guerraoui-Kogan-Marathe-Zablotchi: k + 1 CAS, words keep a reference to the
 * finished operation) of include/ksync/mwcas.h, in the same run.  Method of
 * include/ksync/measure.h (bench/prims.c): 200 batches x 256 operations, lfence;rdtsc;
 * lfence .. rdtscp;lfence, empty loop of the same shape subtracted, TSC ticks per
 * operation, median reported with min and p99.  Pinned to one CPU, one thread.
 *
 * Each operation increments k words of one cache-line-aligned array by one unit; the
 * caller tracks the values, so the row is the MWCAS alone (no reads).  gkmz retires a
 * pool descriptor at the start of every operation (its words have moved on in this
 * loop, so the retire costs loads only, no CAS).  Rows "mwcas_read_<impl>_k<k>" give
 * the cost of reading the k words back through ksync_mwcas_read_<impl>: plain loads for
 * soft, a resolution through the descriptor for gkmz (its words hold references).
 *
 * Output (stdout):
 *   KSYNC {"kind":"hosted_boot",...}
 *   ktap: KTAP version 1 / 1..1
 *   KSYNC {"kind":"prim","name":"mwcas_<soft|gkmz>_k<k>",...}     16 lines
 *   KSYNC {"kind":"prim","name":"mwcas_read_<soft|gkmz>_k<k>",...} 16 lines
 *   ktap: # gkmz/soft median ratio per k
 *   ktap: ok 1 mwcas_cost
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <ksync/measure.h>
#include <ksync/mwcas.h>

#include "hosted_env.h"

#define BATCHES KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH

typedef int (*mwcas_fn)(struct ksync_mwcas_op *, unsigned);
typedef uint64_t (*read_fn)(const uint64_t *);

static uint64_t empty_ticks[BATCHES], ticks[BATCHES];
static uint64_t wsoft[KSYNC_MWCAS_MAX] __attribute__((aligned(64)));
static uint64_t wgkmz[KSYNC_MWCAS_MAX] __attribute__((aligned(64)));

static struct ksync_prim_result row(const char *name, const char *detail, uint64_t *w,
				    unsigned k, mwcas_fn fn, read_fn rd, int *bad)
{
	struct ksync_mwcas_op ops[KSYNC_MWCAS_MAX];
	uint64_t cur[KSYNC_MWCAS_MAX], e2[BATCHES];
	struct ksync_prim_result r;
	char line[KSYNC_PRIM_LINE_MAX];

	for (unsigned i = 0; i < k; i++)
		cur[i] = rd(&w[i]);
	/* warm-up: every pool descriptor used on these words, caches and predictors hot */
	for (unsigned i = 0; i < 4096; i++) {
		for (unsigned j = 0; j < k; j++) {
			ops[j] = (struct ksync_mwcas_op){ &w[j], cur[j], cur[j] + 2 };
			cur[j] += 2;
		}
		*bad |= fn(ops, k) != KSYNC_OK;
	}
	KSYNC_MEASURE(ticks, BATCHES, OPS, {
		for (unsigned j = 0; j < k; j++) {
			ops[j] = (struct ksync_mwcas_op){ &w[j], cur[j], cur[j] + 2 };
			cur[j] += 2;
		}
		*bad |= fn(ops, k) != KSYNC_OK;
	});
	for (unsigned i = 0; i < BATCHES; i++)
		e2[i] = empty_ticks[i];
	r = ksync_prim_compute(ticks, BATCHES, OPS, e2, BATCHES);
	ksync_prim_format(line, sizeof(line), name, detail, &r);
	ksync_printf("%s\n", line);
	for (unsigned j = 0; j < k; j++)
		*bad |= rd(&w[j]) != cur[j];
	return r;
}

static void read_row(const char *name, const char *detail, uint64_t *w, unsigned k,
		     read_fn rd)
{
	uint64_t e2[BATCHES], sink = 0;

	KSYNC_MEASURE(ticks, BATCHES, OPS, {
		for (unsigned j = 0; j < k; j++)
			sink += rd(&w[j]);
	});
	for (unsigned i = 0; i < BATCHES; i++)
		e2[i] = empty_ticks[i];
	ksync_prim_emit(name, detail, ticks, BATCHES, OPS, e2, BATCHES);
	__asm__ __volatile__("" : : "r"(sink));
}

int main(void)
{
	char name[64], detail[96];
	uint64_t med[2][KSYNC_MWCAS_MAX + 1];
	int bad = 0;

	(void)bench_start(NULL);
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);
	KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);

	for (unsigned k = 1; k <= KSYNC_MWCAS_MAX; k++) {
		struct ksync_prim_result rs, rg;

		snprintf(name, sizeof(name), "mwcas_soft_k%u", k);
		snprintf(detail, sizeof(detail), "HFP+RDCSS, %u CAS, uncontended success", 3 * k + 1);
		rs = row(name, detail, wsoft, k, ksync_mwcas_soft, ksync_mwcas_read_soft, &bad);
		snprintf(name, sizeof(name), "mwcas_gkmz_k%u", k);
		snprintf(detail, sizeof(detail), "GKMZ, %u CAS, uncontended success", k + 1);
		rg = row(name, detail, wgkmz, k, ksync_mwcas_gkmz, ksync_mwcas_read_gkmz, &bad);
		med[0][k] = rs.median_x100;
		med[1][k] = rg.median_x100;
	}
	for (unsigned k = 1; k <= KSYNC_MWCAS_MAX; k++) {
		snprintf(name, sizeof(name), "mwcas_read_soft_k%u", k);
		snprintf(detail, sizeof(detail), "%u ksync_mwcas_read_soft, clean words", k);
		read_row(name, detail, wsoft, k, ksync_mwcas_read_soft);
		snprintf(name, sizeof(name), "mwcas_read_gkmz_k%u", k);
		snprintf(detail, sizeof(detail), "%u ksync_mwcas_read_gkmz, words hold refs", k);
		read_row(name, detail, wgkmz, k, ksync_mwcas_read_gkmz);
	}
	for (unsigned k = 1; k <= KSYNC_MWCAS_MAX; k++)
		ksync_printf("ktap: # k=%u: gkmz/soft median %llu.%02llu / %llu.%02llu ticks = %llu%%\n",
			     k, (unsigned long long)(med[1][k] / 100),
			     (unsigned long long)(med[1][k] % 100),
			     (unsigned long long)(med[0][k] / 100),
			     (unsigned long long)(med[0][k] % 100),
			     (unsigned long long)(med[0][k] ? med[1][k] * 100 / med[0][k] : 0));
	ksync_printf("ktap: %s 1 mwcas_cost\n", bad ? "not ok" : "ok");
	return bad;
}
