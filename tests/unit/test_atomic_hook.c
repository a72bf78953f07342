/*
 * test_atomic_hook.c - checks the KSYNC_ATOMIC_HOOK(op, addr) test point of
 * include/ksync/atomic.h: a translation unit that defines it before including the
 * header sees one call per wrapper, with the operation's name and the object's address.
 * Single-threaded (the recording below is plain data).
 */
#include <stddef.h>
#include <stdint.h>

static const char *hook_op;
static const void *hook_addr;
static int hook_calls;

#define KSYNC_ATOMIC_HOOK(op, addr)                                                   \
	(hook_op = #op, hook_addr = (const void *)(addr), hook_calls++)

#include <ksync/atomic.h>
#include <ksync/ktest.h>

static int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

#define EXPECT_HOOK(kt, call, op, addr)                                               \
	do {                                                                          \
		int before_ = hook_calls;                                             \
		(void)(call);                                                         \
		KT_EXPECT_EQ(hook_calls - before_, 1);                                \
		KT_EXPECT(str_eq(hook_op, op));                                       \
		KT_EXPECT(hook_addr == (const void *)(addr));                         \
	} while (0)

KTEST(atomic_hook_points)
{
	uint64_t q = 0, e = 0;
	uint32_t w = 0;
	void *ptr = NULL, *ep = NULL;
	struct ksync_u128 v = { 0, 0 }, ev = { 0, 0 };

	EXPECT_HOOK(kt, ksync_load_acquire_u64(&q), "load", &q);
	EXPECT_HOOK(kt, (ksync_store_release_u32(&w, 1), 0), "store", &w);
	EXPECT_HOOK(kt, ksync_exchange_relaxed_u64(&q, 2), "exchange", &q);
	EXPECT_HOOK(kt, ksync_cas_strong_seq_cst_u64(&q, &e, 3), "cas", &q);
	EXPECT_HOOK(kt, ksync_cas_weak_relaxed_ptr(&ptr, &ep, &q), "cas", &ptr);
	EXPECT_HOOK(kt, ksync_fetch_add_relaxed_u32(&w, 1), "fetch_add", &w);
	EXPECT_HOOK(kt, ksync_fetch_sub_relaxed_u32(&w, 1), "fetch_sub", &w);
	EXPECT_HOOK(kt, ksync_fetch_or_relaxed_u32(&w, 1), "fetch_or", &w);
	EXPECT_HOOK(kt, ksync_fetch_and_relaxed_u32(&w, 1), "fetch_and", &w);
	EXPECT_HOOK(kt, (ksync_fence_seq_cst(), 0), "fence", NULL);
	EXPECT_HOOK(kt, ksync_cas128(&v, &ev, ev), "cas128", &v);
	EXPECT_HOOK(kt, ksync_load128(&v), "load128", &v);
}
