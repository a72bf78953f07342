/*
 * cmp_peers.h - what bench/cmp_peers.c shares with the translation units that hold its
 * libksync implementations (bench/cmp_peers_ksync.h, compiled once as shipped in
 * cmp_peers.c and once with KSYNC_BACKOFF_MAX 0 in bench/cmp_peers/ksync_nobackoff.c).
 * Hosted only.
 */
#ifndef KSYNC_BENCH_CMP_PEERS_H
#define KSYNC_BENCH_CMP_PEERS_H

#define CMP_MAXT 64
#define CMP_QCAP 1024		/* queue capacity (power of two for every implementation) */
#define CMP_PREFILL_PER_THREAD 64
#define CMP_LINE 64		/* every shared object starts a cache line of its own */

/* Every function the drivers call per operation (a pair, a put, a get) is declared
 * CMP_FN: out of line, so each implementation is reached by the same indirect call, and
 * starting a 64-byte block of its own, so that where the linker happens to place one
 * implementation's code (a fetch block split, a shared op-cache line) cannot favour it
 * over another.  Why: in scratch builds of the spsc latency loop (hosted, AMD EPYC) the
 * same queue functions moved by up to a TSC tick per pair with their placement alone. */
#define CMP_FN __attribute__((noinline, aligned(64)))

/* One implementation of a multi-threaded structure: init, per-thread pair, fini. */
struct cmp_impl {
	const char *structure, *name;
	int backoff_max;	/* libksync: its unit's KSYNC_BACKOFF_MAX; peers: -1 */
	void (*init)(unsigned nthreads);
	void (*pair)(unsigned tid);	/* one push+pop / enqueue+dequeue by thread tid */
	void (*fini)(void);
};

/* Empty/full retries per thread: slot t is written only by the thread running as
 * tid t (one cache line each, so counting does not add sharing); summed after joins. */
struct cmp_retry {
	_Alignas(CMP_LINE) unsigned long n;
};
extern struct cmp_retry cmp_retries[CMP_MAXT];

/* stack and mpmc, libksync as shipped (cmp_peers.c) and without backoff */
extern const struct cmp_impl cmp_ksync[2];
extern const struct cmp_impl cmp_ksync_nobackoff[2];

#endif /* KSYNC_BENCH_CMP_PEERS_H */
