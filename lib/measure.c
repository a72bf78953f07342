/*
 * measure.c - primitive-cost statistics and the KSYNC "prim" line
 * (include/ksync/measure.h, docs/protocol.md sections 1 and 4).  Freestanding,
 * integer only; no shared state (every function works on its arguments only).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/measure.h>
#include <ksync/platform.h>

/* ---- sorting and order statistics ------------------------------------------------ */

/* Restore the max-heap property below a[root] in the heap a[0..end). */
static void sift_down(uint64_t *a, size_t root, size_t end)
{
	for (;;) {
		size_t child = 2 * root + 1;
		uint64_t t;

		if (child >= end)
			return;
		if (child + 1 < end && a[child + 1] > a[child])
			child++;
		if (a[root] >= a[child])
			return;
		t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

void ksync_sort_u64(uint64_t *a, size_t n)
{
	size_t i;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (i = n - 1; i > 0; i--) {
		uint64_t t = a[0];

		a[0] = a[i];
		a[i] = t;
		sift_down(a, 0, i);
	}
}

struct ksync_stats ksync_stats_compute(uint64_t *samples, size_t n)
{
	struct ksync_stats s = { 0, 0, 0, 0 };

	if (n == 0)
		return s;
	ksync_sort_u64(samples, n);
	s.min = samples[0];
	s.median = samples[(n - 1) / 2];
	s.p99 = samples[(99 * n + 99) / 100 - 1];
	s.max = samples[n - 1];
	return s;
}

/* ---- reduction ------------------------------------------------------------------- */

/* ticks / ops in hundredths, rounded half up; saturates instead of overflowing. */
static uint64_t per_op_x100(uint64_t ticks, uint64_t ops)
{
	if (ticks <= (UINT64_MAX - ops / 2) / 100)
		return (ticks * 100 + ops / 2) / ops;
	return (ticks / ops) * 100;	/* > 1.8e17 ticks: beyond any real batch */
}

struct ksync_prim_result ksync_prim_compute(uint64_t *batch_ticks, size_t nbatches,
					    uint64_t ops_per_batch, uint64_t *empty_ticks,
					    size_t nempty)
{
	struct ksync_prim_result r;
	struct ksync_stats es, bs;
	uint64_t ops = ops_per_batch ? ops_per_batch : 1;
	size_t i;

	es = ksync_stats_compute(empty_ticks, nempty);
	/* Subtracting a constant keeps the order, so clamping each batch and then taking
	 * the order statistics equals taking them of the clamped per-batch nets. */
	for (i = 0; i < nbatches; i++)
		batch_ticks[i] = batch_ticks[i] > es.median ? batch_ticks[i] - es.median : 0;
	bs = ksync_stats_compute(batch_ticks, nbatches);

	r.batches = nbatches;
	r.ops_per_batch = ops_per_batch;
	r.min_x100 = per_op_x100(bs.min, ops);
	r.median_x100 = per_op_x100(bs.median, ops);
	r.p99_x100 = per_op_x100(bs.p99, ops);
	r.max_x100 = per_op_x100(bs.max, ops);
	r.empty_x100 = per_op_x100(es.median, ops);
	return r;
}

/* ---- formatting ------------------------------------------------------------------ */

/* A bounded string builder: never writes past cap - 1, always NUL-terminates. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_putc(struct sbuf *b, char c)
{
	if (b->len + 1 < b->cap) {
		b->p[b->len++] = c;
		b->p[b->len] = '\0';
	}
}

static void sb_puts(struct sbuf *b, const char *s)
{
	while (*s)
		sb_putc(b, *s++);
}

static void sb_put_u64(struct sbuf *b, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		sb_putc(b, tmp[--n]);
}

static void sb_put_fixed2(struct sbuf *b, uint64_t x100)
{
	sb_put_u64(b, x100 / 100);
	sb_putc(b, '.');
	sb_putc(b, (char)('0' + (x100 / 10) % 10));
	sb_putc(b, (char)('0' + x100 % 10));
}

/* A JSON string literal of s, at most `limit` bytes of escaped content: an escape is
 * written whole or not at all. */
static void sb_put_json(struct sbuf *b, const char *s, size_t limit)
{
	static const char hex[] = "0123456789abcdef";
	size_t used = 0;

	sb_putc(b, '"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7];
		size_t n = 0, i;

		if (c == '"' || c == '\\') {
			esc[n++] = '\\';
			esc[n++] = (char)c;
		} else if (c < 0x20) {
			esc[n++] = '\\';
			esc[n++] = 'u';
			esc[n++] = '0';
			esc[n++] = '0';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 15];
		} else {
			esc[n++] = (char)c;
		}
		if (used + n > limit)
			break;
		for (i = 0; i < n; i++)
			sb_putc(b, esc[i]);
		used += n;
	}
	sb_putc(b, '"');
}

size_t ksync_fixed2_format(char *buf, size_t cap, uint64_t x100)
{
	struct sbuf b = { buf, 0, cap };

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	sb_put_fixed2(&b, x100);
	return b.len;
}

#define KSYNC_PRIM_STR_MAX 96

size_t ksync_prim_format(char *buf, size_t cap, const char *name, const char *detail,
			 const struct ksync_prim_result *r)
{
	struct sbuf b = { buf, 0, cap };

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	sb_puts(&b, "KSYNC {\"kind\":\"prim\",\"name\":");
	sb_put_json(&b, name, KSYNC_PRIM_STR_MAX);
	sb_puts(&b, ",\"detail\":");
	sb_put_json(&b, detail, KSYNC_PRIM_STR_MAX);
	sb_puts(&b, ",\"unit\":\"tsc_ticks\",\"batches\":");
	sb_put_u64(&b, r->batches);
	sb_puts(&b, ",\"ops_per_batch\":");
	sb_put_u64(&b, r->ops_per_batch);
	sb_puts(&b, ",\"min\":");
	sb_put_fixed2(&b, r->min_x100);
	sb_puts(&b, ",\"median\":");
	sb_put_fixed2(&b, r->median_x100);
	sb_puts(&b, ",\"p99\":");
	sb_put_fixed2(&b, r->p99_x100);
	sb_puts(&b, ",\"max\":");
	sb_put_fixed2(&b, r->max_x100);
	sb_puts(&b, ",\"empty\":");
	sb_put_fixed2(&b, r->empty_x100);
	sb_putc(&b, '}');
	return b.len;
}

void ksync_prim_emit(const char *name, const char *detail, uint64_t *batch_ticks,
		     size_t nbatches, uint64_t ops_per_batch, uint64_t *empty_ticks,
		     size_t nempty)
{
	char line[KSYNC_PRIM_LINE_MAX];
	struct ksync_prim_result r;

	r = ksync_prim_compute(batch_ticks, nbatches, ops_per_batch, empty_ticks, nempty);
	ksync_prim_format(line, sizeof(line), name, detail, &r);
	ksync_printf("%s\n", line);
}
