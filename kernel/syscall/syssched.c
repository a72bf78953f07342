/*
 * syssched.c - the scheduling and memory-locking calls rt-tests' cyclictest and
 * hackbench make (issue 25; docs/userspace.md "Scheduling calls"): sched_setscheduler,
 * sched_getscheduler, sched_setparam, sched_getparam, sched_setattr, sched_getattr,
 * sched_get_priority_max/min, sched_rr_get_interval, sched_setaffinity, mlock, munlock,
 * mlock2, mlockall, munlockall; and socketpair (kernel/fs/socket.c).
 *
 * Error paths are Linux's (kernel/sched/syscalls.c, v6.1): EINVAL for a negative pid, a
 * NULL parameter, an unknown policy, a priority outside 1..99 for SCHED_FIFO/SCHED_RR or
 * not 0 for the others; EFAULT for a parameter that faults; ESRCH for no such process.
 * The caller is root: no EPERM.
 *
 * The policy and priority are the task's (struct process sched_policy/sched_prio,
 * proc_table_lock: proc_sched), reported back by the get calls, inherited at fork and
 * clone as Linux's sched_fork does (sched_fork_policy, proc.c: with SCHED_RESET_ON_FORK
 * the child does not keep the flag, and a real-time policy becomes SCHED_OTHER, priority
 * 0; SCHED_BATCH and SCHED_IDLE stay). They map onto ksync's run-queue levels
 * (SCHED_LEVELS = 4, 0 served most often by the priority table): sched_level (proc.c,
 * which creates the task's thread at it) -
 * SCHED_FIFO/SCHED_RR at any priority -> level 0, SCHED_OTHER -> 1, SCHED_BATCH -> 2,
 * SCHED_IDLE -> 3 - and the level is applied: a task's thread is created at its
 * policy's level (proc_start; a new process is SCHED_OTHER, level 1), and a set call
 * moves the live thread to the new policy's level (thread_set_level, under
 * proc_table_lock with the policy: proc_sched) - a queued thread at once, a running one
 * at its CPU's next pick, a sleeping one at its wakeup; a caller that lowered itself lets
 * a ready thread of higher priority run before the call returns. What is not built: the
 * priority within a policy (1..99) is recorded, not applied - every FIFO/RR task shares
 * level 0, served round-robin - and FIFO runs by ksync's quantum, as RR;
 * SCHED_DEADLINE is refused (EINVAL); SCHED_RR's quantum is ksync's
 * (sched_rr_get_interval answers it).
 * sched_setaffinity checks the mask (EINVAL when it names no online CPU) and applies it
 * (proc_affinity): the caller returns on a CPU of it, another task moves at its next
 * return to user mode; fork and clone inherit it, sched_getaffinity reads it back.
 *
 * A pid names a task, as Linux's: a thread's tid (cyclictest's calls name its threads),
 * or a process's pid, its main thread (proc_sched looks it up in the table of tasks).
 *
 * mlock/mlockall: every page a process touches stays resident (no swap, no reclaim), so
 * they succeed after Linux's argument checks.
 */
#include "kernel.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include "syscall/syssched.h"
#include "fs/vfs.h"

#define MAX_RT_PRIO 99

static bool valid_policy(int p)
{
	return p == LX_SCHED_OTHER || p == LX_SCHED_FIFO || p == LX_SCHED_RR ||
	       p == LX_SCHED_BATCH || p == LX_SCHED_IDLE || p == LX_SCHED_DEADLINE;
}

static bool rt_policy(int p) { return p == LX_SCHED_FIFO || p == LX_SCHED_RR; }

/* __sched_setscheduler's checks, then the change (proc_sched moves the thread to the
 * policy's level); policy -1 keeps the policy. */
static long set_sched(int pid, int policy, int prio)
{
	int cur, curp;
	if (policy >= 0) {
		int pol = policy & ~LX_SCHED_RESET_ON_FORK;
		if (!valid_policy(pol))
			return -LX_EINVAL;
		if (prio < 0 || prio > MAX_RT_PRIO || rt_policy(pol) != (prio != 0))
			return -LX_EINVAL;
		if (pol == LX_SCHED_DEADLINE)
			return -LX_EINVAL;	/* not built (see above) */
		return proc_sched(pid, &cur, &curp, true, policy, prio);
	}
	/* sched_setparam: checked against the process's own policy */
	long rc = proc_sched(pid, &cur, &curp, false, 0, 0);
	if (rc)
		return rc;
	if (prio < 0 || prio > MAX_RT_PRIO || rt_policy(cur & ~LX_SCHED_RESET_ON_FORK) != (prio != 0))
		return -LX_EINVAL;
	return proc_sched(pid, &cur, &curp, true, -1, prio);
}

long sys_sched_setscheduler(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], policy = (int)a[1];
	if (policy < 0 || !a[2] || pid < 0)
		return -LX_EINVAL;
	int32_t prio;
	if (copy_from_user(&prio, (const void *)a[2], sizeof prio))
		return -LX_EFAULT;
	int cur, curp;
	long rc = proc_sched(pid, &cur, &curp, false, 0, 0);	/* ESRCH before EINVAL */
	return rc ? rc : set_sched(pid, policy, prio);
}

long sys_sched_setparam(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0];
	if (!a[1] || pid < 0)
		return -LX_EINVAL;
	int32_t prio;
	if (copy_from_user(&prio, (const void *)a[1], sizeof prio))
		return -LX_EFAULT;
	return set_sched(pid, -1, prio);
}

long sys_sched_getscheduler(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], pol, prio;
	if (pid < 0)
		return -LX_EINVAL;
	long rc = proc_sched(pid, &pol, &prio, false, 0, 0);
	return rc ? rc : pol;
}

long sys_sched_getparam(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], pol, prio;
	if (!a[1] || pid < 0)
		return -LX_EINVAL;
	long rc = proc_sched(pid, &pol, &prio, false, 0, 0);
	if (rc)
		return rc;
	int32_t v = rt_policy(pol & ~LX_SCHED_RESET_ON_FORK) ? prio : 0;
	return copy_to_user((void *)a[1], &v, sizeof v) ? -LX_EFAULT : 0;
}

long sys_sched_get_priority_max(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int p = (int)a[0];
	return rt_policy(p) ? MAX_RT_PRIO : valid_policy(p) ? 0 : -LX_EINVAL;
}

long sys_sched_get_priority_min(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int p = (int)a[0];
	return rt_policy(p) ? 1 : valid_policy(p) ? 0 : -LX_EINVAL;
}

long sys_sched_rr_get_interval(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], pol, prio;
	if (pid < 0)
		return -LX_EINVAL;
	long rc = proc_sched(pid, &pol, &prio, false, 0, 0);
	if (rc)
		return rc;
	/* SCHED_RR: ksync's base quantum; SCHED_FIFO: 0 (no time slice), as Linux; the
	 * others: the quantum too (Linux answers the fair scheduler's slice) */
	struct lx_timespec ts = { 0, 0 };
	if ((pol & ~LX_SCHED_RESET_ON_FORK) != LX_SCHED_FIFO)
		ts.tv_nsec = (int64_t)SCHED_QUANTUM_TICKS * (1000000000 / SCHED_HZ);
	return copy_to_user((void *)a[1], &ts, sizeof ts) ? -LX_EFAULT : 0;
}

/* struct sched_attr (include/uapi/linux/sched/types.h) */
struct lx_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};
_Static_assert(sizeof(struct lx_sched_attr) == 56, "struct sched_attr (VER1)");
#define SCHED_ATTR_SIZE_VER0 48
#define SCHED_FLAG_KEEP_POLICY 0x08
#define SCHED_FLAG_ALL 0x7f

long sys_sched_setattr(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0];
	if (!a[1] || pid < 0 || a[2])
		return -LX_EINVAL;
	uint32_t size;
	if (copy_from_user(&size, (const void *)a[1], sizeof size))
		return -LX_EFAULT;
	if (!size)
		size = SCHED_ATTR_SIZE_VER0;
	if (size < SCHED_ATTR_SIZE_VER0 || size > PAGE_SIZE) {
		uint32_t want = sizeof(struct lx_sched_attr);
		if (copy_to_user((void *)a[1], &want, sizeof want))
			return -LX_EFAULT;
		return -LX_E2BIG;
	}
	struct lx_sched_attr at;
	memset(&at, 0, sizeof at);
	if (copy_from_user(&at, (const void *)a[1], size < sizeof at ? size : sizeof at))
		return -LX_EFAULT;
	for (uint32_t off = sizeof at; off < size; off++) {	/* the rest must be zero */
		uint8_t b;
		if (copy_from_user(&b, (const void *)(a[1] + off), 1))
			return -LX_EFAULT;
		if (b)
			return -LX_E2BIG;
	}
	if ((int32_t)at.sched_policy < 0)
		return -LX_EINVAL;
	int cur, curp;
	long rc = proc_sched(pid, &cur, &curp, false, 0, 0);
	if (rc)
		return rc;
	if (at.sched_flags & ~(uint64_t)SCHED_FLAG_ALL)
		return -LX_EINVAL;
	int policy = at.sched_flags & SCHED_FLAG_KEEP_POLICY ? -1 : (int)at.sched_policy;
	if (policy >= 0 && (at.sched_flags & 0x01 /* SCHED_FLAG_RESET_ON_FORK */))
		policy |= LX_SCHED_RESET_ON_FORK;
	return set_sched(pid, policy, (int)at.sched_priority);
}

long sys_sched_getattr(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], pol, prio;
	uint32_t usize = (uint32_t)a[2];
	if (!a[1] || pid < 0 || usize > PAGE_SIZE || usize < SCHED_ATTR_SIZE_VER0 || a[3])
		return -LX_EINVAL;
	long rc = proc_sched(pid, &pol, &prio, false, 0, 0);
	if (rc)
		return rc;
	struct lx_sched_attr at;
	memset(&at, 0, sizeof at);
	at.size = usize < sizeof at ? usize : sizeof at;
	at.sched_policy = (uint32_t)(pol & ~LX_SCHED_RESET_ON_FORK);
	at.sched_flags = pol & LX_SCHED_RESET_ON_FORK ? 1 : 0;
	at.sched_priority = rt_policy(pol & ~LX_SCHED_RESET_ON_FORK) ? (uint32_t)prio : 0;
	at.sched_util_max = 1024;	/* SCHED_CAPACITY_SCALE: no clamp */
	return copy_to_user((void *)a[1], &at, at.size) ? -LX_EFAULT : 0;
}

/* sched_setaffinity: checked, then ignored (a user thread runs on any CPU). */
long sys_sched_setaffinity(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int pid = (int)a[0], pol, prio;
	uint64_t mask = 0;
	size_t n = a[1] < sizeof mask ? (size_t)a[1] : sizeof mask;
	if (n && copy_from_user(&mask, (const void *)a[2], n))
		return -LX_EFAULT;
	if (pid < 0)
		return -LX_ESRCH;	/* find_process_by_pid of a negative pid finds none */
	long rc = proc_sched(pid, &pol, &prio, false, 0, 0);
	if (rc)
		return rc;
	if (!(mask & sched_online_mask()))
		return -LX_EINVAL;
	uint64_t old;
	/* the caller returns on a CPU of the mask; another task moves at its next return
	 * to user mode (proc_affinity) */
	return proc_affinity(pid, &old, &mask);
}

/* mlock, munlock, mlock2: Linux's checks (page-rounded range inside user space, flags),
 * then nothing to do; ENOMEM for a range with unmapped pages is not checked. */
long sys_mlock(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	uint64_t start = ALIGN_DOWN(a[0], PAGE_SIZE), end = ALIGN_UP(a[0] + a[1], PAGE_SIZE);
	if (a[0] + a[1] < a[0])
		return -LX_EINVAL;
	if (end > USER_VA_END || (a[1] && start < USER_VA_MIN))
		return -LX_ENOMEM;
	return 0;
}

long sys_mlock2(struct trapframe *tf, const uint64_t a[6])
{
	if (a[2] & ~(uint64_t)1 /* MLOCK_ONFAULT */)
		return -LX_EINVAL;
	return sys_mlock(tf, a);
}

long sys_mlockall(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	uint64_t f = a[0];
	/* Linux: some flag, only the three, and MCL_ONFAULT not alone */
	if (!f || (f & ~(uint64_t)(LX_MCL_CURRENT | LX_MCL_FUTURE | LX_MCL_ONFAULT)) ||
	    f == LX_MCL_ONFAULT)
		return -LX_EINVAL;
	return 0;
}

long sys_munlockall(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return 0;
}

/* socketpair(AF_UNIX, SOCK_STREAM[|SOCK_NONBLOCK|SOCK_CLOEXEC], 0, sv) */
long sys_socketpair(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	int fds[2];
	long rc = vfs_socketpair(p->fdt, (int)a[0], (int)a[1], (int)a[2], fds);
	if (rc)
		return rc;
	if (copy_to_user((void *)a[3], fds, sizeof fds)) {
		vfs_close(p->fdt, fds[0]);
		vfs_close(p->fdt, fds[1]);
		return -LX_EFAULT;
	}
	return 0;
}
