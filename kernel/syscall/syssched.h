/* syssched.h - the scheduling, memory-locking and socketpair calls (syssched.c), in the
 * table's form (syscall.c): the call's six arguments as the user passed them. */
#ifndef KSYNC_SYSCALL_SYSSCHED_H
#define KSYNC_SYSCALL_SYSSCHED_H

#include <stdint.h>

struct trapframe;
#define SYSSCHED(name) long sys_##name(struct trapframe *tf, const uint64_t a[6])
SYSSCHED(sched_setscheduler);
SYSSCHED(sched_setparam);
SYSSCHED(sched_getscheduler);
SYSSCHED(sched_getparam);
SYSSCHED(sched_get_priority_max);
SYSSCHED(sched_get_priority_min);
SYSSCHED(sched_rr_get_interval);
SYSSCHED(sched_setattr);
SYSSCHED(sched_getattr);
SYSSCHED(sched_setaffinity);
SYSSCHED(mlock);
SYSSCHED(mlock2);
SYSSCHED(mlockall);
SYSSCHED(munlockall);
SYSSCHED(socketpair);
#undef SYSSCHED

#endif
