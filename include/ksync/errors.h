/*
 * errors.h - the error codes every libksync object returns for bad input or a state
 * that refuses the operation, and the debug-build message that accompanies bad input.
 *
 * Functions that can fail return `int`: 0 (KSYNC_OK) or one of the negative codes below;
 * they never corrupt memory on bad input. In hosted builds compiled with -DKSYNC_DEBUG,
 * bad input also prints one line "ksync: <function>: <reason>" through ksync_printf.
 */
#ifndef KSYNC_ERRORS_H
#define KSYNC_ERRORS_H

#include <ksync/platform.h>

enum {
	KSYNC_OK = 0,
	KSYNC_EINVAL = -1,	/* bad argument: NULL object, size 0, not a power of two, ... */
	KSYNC_EEMPTY = -2,	/* nothing to take (queue/stack empty) */
	KSYNC_EFULL = -3,	/* no room (bounded queue full) */
	KSYNC_ENOMEM = -4,	/* allocation failed */
	KSYNC_EBUSY = -5,	/* a conflicting state: entry taken, element in use */
	KSYNC_ENOENT = -6,	/* no such element */
	KSYNC_ENOTSUP = -7,	/* not supported on this platform (a port without the device) */
	KSYNC_EDEADLK = -8,	/* the call would wait for itself (a thread joining itself) */
	KSYNC_ESRCH = -9,	/* no such live thread (dead, or never created) */
};

static inline const char *ksync_strerror(int e)
{
	switch (e) {
	case KSYNC_OK: return "ok";
	case KSYNC_EINVAL: return "invalid argument";
	case KSYNC_EEMPTY: return "empty";
	case KSYNC_EFULL: return "full";
	case KSYNC_ENOMEM: return "out of memory";
	case KSYNC_EBUSY: return "busy";
	case KSYNC_ENOENT: return "no such element";
	case KSYNC_ENOTSUP: return "not supported on this platform";
	case KSYNC_EDEADLK: return "would wait for itself";
	case KSYNC_ESRCH: return "no such live thread";
	default: return "unknown error";
	}
}

/* Return `code` from the calling function after saying why (debug builds). */
#if defined(KSYNC_DEBUG) && !defined(KSYNC_KERNEL)
#define KSYNC_BAD_INPUT(code, reason)                                                 \
	do {                                                                          \
		ksync_printf("ksync: %s: %s\n", __func__, (reason));                  \
		return (code);                                                        \
	} while (0)
#else
#define KSYNC_BAD_INPUT(code, reason) return (code)
#endif

#endif /* KSYNC_ERRORS_H */
