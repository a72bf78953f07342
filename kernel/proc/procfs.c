/*
 * procfs.c - the text of /proc (docs/userspace.md "/proc"): what kernel/fs/procfs.c
 * writes into /proc's entries at each lookup, in Linux's formats as busybox's ps, free,
 * top and friends read them:
 *   /proc/<pid>/stat     Linux's 52 fields (fs/proc/array.c do_task_stat): pid (comm)
 *                        state ppid pgrp session, rss in pages, rsslim, priority 20,
 *                        num_threads, exit_signal 17, the pending signals; every
 *                        field ksync does not track (tty, faults, times, addresses) 0;
 *   /proc/<pid>/status   Name, State, Tgid, Pid, PPid, Uid/Gid (root), FDSize, VmRSS,
 *                        Threads, SigPnd;
 *   /proc/<pid>/cmdline  argv as exec received it, each NUL-terminated (cut at 512 bytes);
 *   /proc/<pid>/exe      the exec'd file's absolute path (a link);
 *   /proc/meminfo        from the page allocator: MemTotal (the pages it manages),
 *                        MemFree = MemAvailable (its free pages), Cached = Shmem (the RAM
 *                        file system's data pages, as tmpfs counts on Linux), the rest 0;
 *   /proc/cpuinfo        one block per online CPU: processor, vendor_id, model name,
 *                        cpu MHz (the TSC's), flags as the port knows them;
 *   /proc/uptime         seconds since boot; the idle time is not tracked (0.00).
 *   /proc/ksync-lockstat ksync's own (no Linux file has it): the kernel's lock statistics
 *                        as one line of JSON, {"mode","tsc_hz","cpus","classes":[...]},
 *                        each class that has counted anything since boot with its
 *                        cumulative hits, misses, spins, sleeps, wakeups, futile
 *                        wakeups and wait/hold TSC ticks (lockstat_read), its live
 *                        instances and the instances created at run time while the
 *                        statistics were on (a class with more than one is a lock per
 *                        object, Sprite's transient locks): a program
 *                        reads it before and after what it measures and takes the
 *                        difference (the Sprite user benchmarks, bench/user/sprite.c,
 *                        Hartman & Ousterhout section 4's per-lock-type statistics
 *                        gathered around real programs). Classes that do not fit the
 *                        buffer are counted in "left_out", never cut mid-object.
 *   /proc/ksync-critsec  ksync's own: the critical-section census (spl.h; KSYNC_WINDOWS
 *                        builds) as one line of JSON, {"census","scheme","tsc_hz","cpus",
 *                        "unit","sections","ticks","interrupted","hist_log2"}: outermost
 *                        crit_enter sections since boot summed over CPUs, their TSC
 *                        ticks, those an interrupt arrived in, and a log2 histogram of
 *                        their durations (Small & Manley's Tables 3-4 and Figure 1 under
 *                        real programs, bench/user/smload.c). Other builds print
 *                        "census":false and no counts.
 *   /proc/ksync-serial   ksync's own: the serial line run as a load (serial_load=BAUD,
 *                        kernel/dev/serial_load.c) as one line of JSON - characters
 *                        arrived, read and lost, interrupts, the longest handler
 *                        latency - cumulative since it started; {"serial":false} when
 *                        none runs (Small & Manley's fourth workload beside the others).
 *
 * Locks: proc_snapshot takes the process table's lock (uproc-table, a master lock) to
 * copy one process's fields and releases it before anything is formatted; the caller
 * (kernel/fs) holds the ramfs monitor, so the order is ramfs -> uproc-table, and no lock
 * is held when the text reaches user memory (the read's copy-out, later).
 *
 * Hartman & Ousterhout (Sprite) section 2: a reader of the process table takes its one
 * lock only for the copy, as every other reader does - the statistics then show what
 * /proc costs the table.
 */
#include "kernel.h"
#include "lockstat.h"
#include "spl.h"
#include "serial_load.h"
#include "mm.h"
#include "proc.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

static int self_pid(void)
{
	struct process *p = proc_current();
	return p ? proc_group(p)->pid : 0;	/* /proc/self: the process, not the thread */
}

static unsigned pids(int *out, unsigned max) { return proc_pids(out, max); }

/* Append to buf[*at..n): like ksnprintf, never past the end. */
__attribute__((format(printf, 4, 5)))
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
	if (*at + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = kvsnprintf(buf + *at, n - *at, fmt, ap);
	va_end(ap);
	if (k > 0)
		*at += (size_t)k < n - *at ? (size_t)k : n - *at - 1;
}

static const char *state_name(char s)
{
	switch (s) {
	case 'R': return "running";
	case 'T': return "stopped";
	case 'Z': return "zombie";
	}
	return "sleeping";
}

static long gen_pid(int pid, const char *name, char *buf, size_t n)
{
	struct proc_snap *s = kmalloc(sizeof *s);
	if (!s)
		return -LX_ENOMEM;
	long rc = -LX_ENOENT;
	size_t at = 0;
	if (!proc_snapshot(pid, s))
		goto out;
	if (!strcmp(name, "exe")) {
		if (s->state != 'Z')
			put(buf, n, &at, "%s", s->exe);
	} else if (!strcmp(name, "cmdline")) {
		at = s->state == 'Z' ? 0 : s->cmdline_len < n ? s->cmdline_len : n;
		memcpy(buf, s->cmdline, at);
	} else if (!strcmp(name, "stat")) {
		/* fields 4..52 */
		uint64_t f[53] = { 0 };
		f[4] = (uint64_t)s->ppid;
		f[5] = (uint64_t)s->pgid;
		f[6] = (uint64_t)s->sid;
		f[18] = 20;				/* priority */
		f[20] = s->nthreads;			/* num_threads */
		f[24] = s->rss_pages;
		f[25] = ~0ull;				/* rsslim: RLIM_INFINITY */
		f[31] = s->sig_pending;
		f[38] = 17;				/* exit_signal: SIGCHLD */
		put(buf, n, &at, "%d (%s) %c", s->pid, s->comm, s->state);
		for (int k = 4; k <= 52; k++)
			put(buf, n, &at, " %lu", (unsigned long)f[k]);
		put(buf, n, &at, "\n");
	} else if (!strcmp(name, "status")) {
		put(buf, n, &at, "Name:\t%s\nState:\t%c (%s)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
		    "PPid:\t%d\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t%d\n"
		    "Groups:\t\nVmRSS:\t%8lu kB\nThreads:\t%u\nSigPnd:\t%016lx\n",
		    s->comm, s->state, state_name(s->state), s->pid, s->pid, s->ppid, FS_NOFILE,
		    (unsigned long)s->rss_pages * (PAGE_SIZE / 1024), s->nthreads,
		    (unsigned long)s->sig_pending);
	} else {
		goto out;
	}
	rc = (long)at;
out:
	kfree(s);
	return rc;
}

static void kb(char *buf, size_t n, size_t *at, const char *name, uint64_t pages)
{
	put(buf, n, at, "%-16s%8lu kB\n", name, (unsigned long)(pages * (PAGE_SIZE / 1024)));
}

/* /proc/ksync-lockstat (top comment). lockstat_read takes each class's raw instance-list
 * lock (innermost) only; the snapshot is on the heap (about 1 KiB). */
static long gen_lockstat(char *buf, size_t n)
{
	struct lockstat_snap *sn = kmalloc(sizeof *sn);
	if (!sn)
		return -LX_ENOMEM;
	size_t at = 0;
	unsigned left_out = 0;
	put(buf, n, &at, "{\"mode\":\"%s\",\"tsc_hz\":%lu,\"cpus\":%u,\"classes\":[",
	    lockstat_mode_name(lockstat_mode()), (unsigned long)arch_tsc_hz(), arch_ncpus());
	bool first = true;
	for (unsigned i = 0; i < lockstat_nclasses(); i++) {
		const struct lock_class *c = lockstat_class(i);
		lockstat_read(c, sn);
		if (!sn->hits && !sn->misses && !sn->sleeps && !sn->wakeups && !sn->futile)
			continue;
		char one[512];
		size_t k = 0;
		put(one, sizeof one, &k, "%s{\"class\":\"%s\",\"kind\":\"%s\",\"use\":\"%s\","
		    "\"hits\":%lu,\"misses\":%lu,\"spins\":%lu,\"sleeps\":%lu,\"wakeups\":%lu,"
		    "\"futile\":%lu,\"wait_ticks\":%lu,\"hold_ticks\":%lu,\"live\":%lu,"
		    "\"created\":%lu}",
		    first ? "" : ",", c->name, lock_kind_name(c->kind), lock_use_name(c->use),
		    (unsigned long)sn->hits, (unsigned long)sn->misses, (unsigned long)sn->spins,
		    (unsigned long)sn->sleeps, (unsigned long)sn->wakeups, (unsigned long)sn->futile,
		    (unsigned long)sn->wait.total, (unsigned long)sn->hold.total,
		    (unsigned long)sn->live, (unsigned long)sn->created);
		if (at + k + 64 >= n) {		/* room kept for the closing part */
			left_out++;
			continue;
		}
		put(buf, n, &at, "%s", one);
		first = false;
	}
	put(buf, n, &at, "],\"left_out\":%u}\n", left_out);
	kfree(sn);
	return (long)at;
}

/* /proc/ksync-critsec (top comment): the critical-section census of a KSYNC_WINDOWS build
 * (spl.h), summed over CPUs - cumulative since boot; a program reads it before and after
 * what it measures. Other builds: "census":false and nothing else counted. A snapshot of
 * counters other CPUs go on writing: each one read once, relaxed (a figure may lag by
 * the sections in progress). */
static long gen_critsec(char *buf, size_t n)
{
	size_t at = 0;
	put(buf, n, &at, "{\"census\":%s,\"scheme\":\"%s\",\"tsc_hz\":%lu,\"cpus\":%u",
	    SPL_CENSUS ? "true" : "false", spl_scheme_name(), (unsigned long)arch_tsc_hz(),
	    arch_ncpus());
#if SPL_CENSUS
	uint64_t sec = 0, ticks = 0, intr = 0, hist[SPL_CENSUS_BUCKETS] = { 0 };
	for (unsigned c = 0; c < arch_ncpus(); c++) {
		const struct spl_census *z = &spl_census_cpu[c];
		sec += __atomic_load_n(&z->sections, __ATOMIC_RELAXED);
		ticks += __atomic_load_n(&z->ticks, __ATOMIC_RELAXED);
		intr += __atomic_load_n(&z->interrupted, __ATOMIC_RELAXED);
		for (unsigned b = 0; b < SPL_CENSUS_BUCKETS; b++)
			hist[b] += __atomic_load_n(&z->hist[b], __ATOMIC_RELAXED);
	}
	put(buf, n, &at, ",\"unit\":\"tsc_ticks\",\"sections\":%lu,\"ticks\":%lu,"
	    "\"interrupted\":%lu,\"hist_log2\":[", (unsigned long)sec, (unsigned long)ticks,
	    (unsigned long)intr);
	for (unsigned b = 0; b < SPL_CENSUS_BUCKETS; b++)
		put(buf, n, &at, "%s%lu", b ? "," : "", (unsigned long)hist[b]);
	put(buf, n, &at, "]");
#endif
	put(buf, n, &at, "}\n");
	return (long)at;
}

static long gen_root(const char *name, char *buf, size_t n)
{
	size_t at = 0;
	if (!strcmp(name, "meminfo")) {
		uint64_t total = pmm_total_pages(), free = pmm_free_pages(), cached = fs_data_pages();
		kb(buf, n, &at, "MemTotal:", total);
		kb(buf, n, &at, "MemFree:", free);
		kb(buf, n, &at, "MemAvailable:", free);
		kb(buf, n, &at, "Buffers:", 0);
		kb(buf, n, &at, "Cached:", cached);
		kb(buf, n, &at, "SwapCached:", 0);
		kb(buf, n, &at, "Active:", 0);
		kb(buf, n, &at, "Inactive:", 0);
		kb(buf, n, &at, "SwapTotal:", 0);
		kb(buf, n, &at, "SwapFree:", 0);
		kb(buf, n, &at, "Dirty:", 0);
		kb(buf, n, &at, "Shmem:", cached);
		kb(buf, n, &at, "Slab:", 0);
		kb(buf, n, &at, "SReclaimable:", 0);
		kb(buf, n, &at, "SUnreclaim:", 0);
	} else if (!strcmp(name, "cpuinfo")) {
		struct arch_facts f;
		arch_get_facts(&f);
		for (unsigned c = 0; c < f.cpus_online; c++) {
			put(buf, n, &at, "processor\t: %u\n", c);
			if (f.cpu_vendor[0])
				put(buf, n, &at, "vendor_id\t: %s\n", f.cpu_vendor);
			put(buf, n, &at, "model name\t: %s\n", f.cpu_model[0] ? f.cpu_model : "unknown");
			put(buf, n, &at, "cpu MHz\t\t: %lu.%03lu\n", (unsigned long)(f.tsc_hz / 1000000),
			    (unsigned long)(f.tsc_hz / 1000 % 1000));
			put(buf, n, &at, "flags\t\t:%s%s%s\n\n", f.rdtscp ? " rdtscp" : "",
			    f.apic_mode && !strcmp(f.apic_mode, "x2apic") ? " x2apic" : "",
			    f.hypervisor[0] ? " hypervisor" : "");
		}
	} else if (!strcmp(name, "ksync-lockstat")) {
		return gen_lockstat(buf, n);
	} else if (!strcmp(name, "ksync-critsec")) {
		return gen_critsec(buf, n);
	} else if (!strcmp(name, "ksync-serial")) {
		return serial_load_proc(buf, n);
	} else if (!strcmp(name, "uptime")) {
		uint64_t cs = ktime_ns() / 10000000;	/* hundredths */
		put(buf, n, &at, "%lu.%02lu 0.00\n", (unsigned long)(cs / 100), (unsigned long)(cs % 100));
	} else {
		return -LX_ENOENT;
	}
	return (long)at;
}

static long gen(int pid, const char *name, char *buf, size_t n)
{
	return pid > 0 ? gen_pid(pid, name, buf, n) : gen_root(name, buf, n);
}

static const struct procfs_source source = { .self = self_pid, .pids = pids, .gen = gen };

void procfs_init(void)
{
	fs_procfs_set(&source);		/* before any process runs (urun.c) */
}
