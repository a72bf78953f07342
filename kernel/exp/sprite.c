/*
 * sprite.c - Hartman & Ousterhout's benchmarks as kernel workloads (issue 11), run with
 * Sprite's locking (the locked scheduler, monitor wait queues under its sched_Mutex as in
 * Figure 9), with the fix Figure 9's caption asks for (each monitor's own interlock) and
 * with the Synthesis lock-free scheduler, at 1..N CPUs, lock statistics on.
 *
 * Paper: "Performance Measurements of a Multiprocessor Sprite Kernel", section 2 (the
 * major locks, Figure 1), section 5 (the benchmarks), section 6 (elapsed-time ratios,
 * incremental throughput, miss ratios). The kernel services the benchmarks call are small
 * models of Sprite's, each behind the lock Sprite used (kernel/exp/sprite.c is the only
 * place they exist):
 *   handleTableLock  monitor, code lock: every file-handle lookup (pipes, pseudo-devices)
 *   vmMonitorLock    monitor, code lock: every virtual-memory change (grow, free, fork's copy)
 *   perPCBLock       monitor, data lock: one per process (transient: created and destroyed
 *                    with it); the pseudo-device copy holds the server's
 *   exitLock         monitor, code lock: process exit
 *   pdevLock         monitor, data lock: one per pseudo-device
 *   pipeLock         monitor, data lock: one per pipe
 *   fsCacheLock      monitor, data lock: the file cache's lists (one for the cache)
 *   fsBlockLock      monitor, data lock: one per cache block, held during the copy
 *   procTableMutex   master lock: process-id allocation
 *   sched_Mutex      master lock: the locked scheduler's (kernel/sched/rq-locked.c)
 * and condition variables procChildCond (a parent waits for its child), pipeCond,
 * pdevCond. A critical section does a fixed amount of work (cs_work: iterations of an
 * integer loop, so under emulation it scales like the rest of the code); the
 * perturbation runs multiply one class's amount by a known factor.
 *
 * The benchmarks (section 5; one instance per CPU unless said, each pinned to its CPU):
 *   fork       create a process (pid, perPCBLock, vm copy) and its thread; the child
 *              exits (exitLock, vm free, wakes the parent); the parent waits and joins
 *   fexec      the same, the child first re-initialises itself (vm freed and grown anew,
 *              its PCB reset) as exec would
 *   mem        grow the heap one page at a time under vmMonitorLock to a limit, then free
 *              it all and start over (exec)
 *   cswitch    a pair of threads per CPU passing a byte through two pipes; every pipe
 *              access looks the pipe up under handleTableLock
 *   pdevtest   one server thread, two clients per CPU writing to it through one
 *              pseudo-device; each client copies its data under the server's perPCBLock
 *   pdevtestInd one server and one client per CPU, each pair its own pseudo-device
 *   pmake      one job graph of CPU-bound "compiles", two running per CPU: each reads its
 *              sources through the file cache, computes, writes its output; the workload
 *              is fixed (ideal elapsed ratio 1/n)
 *   pmakeInd   one independent pmake per CPU, separate files, two jobs each
 *   troff      one CPU-bound job per CPU with a file-cache read now and then
 * The work is scaled with the CPU count (except pmake), so an ideal system keeps the
 * elapsed time of 1 CPU (paper section 6.1).
 *
 * Command line: sprite_scale=P (percent of the default iteration counts; the tool lowers
 * it under TCG), sprite_reps=R (interleaved repetitions, default 3), sprite_cpus=1,2,...
 * (the CPU counts; default 1..N), sprite_bench=a,b and sprite_configs=a,b (subsets),
 * sprite=off (skip: the hosted column's per-scheme runs), sprite_perturb=a,b (the
 * benchmarks with perturbation runs; default cswitch,pdevtest,pmake; 0: none),
 * sprite_overhead=0 and sprite_costs=0 (leave out the statistics-overhead runs and the
 * lock_cost rows), sprite_lockstat=MODE (off, counts, contested, timing: the base and
 * perturbation runs' statistics mode, default timing; refused, naming why, when the build
 * compiled the statistics out), sprite_snap_ms=N and sprite_snap_reset=1 (snapshots in the middle of
 * each run, for `ksync lockstat --every`).
 *
 * Inputs, not results: which locks each benchmark's code takes (benches[].takes), how
 * long each class's critical section is (pad_base, cs_work iterations), a system call's
 * and a compile's own work (SYSCALL_WORK, PM_COMPUTE), the copy's length (PDEV_COPY) are
 * set here by hand; the lock a benchmark saturates follows from them. The kernel prints
 * them (sprite_setup, sprite_bench) and the report puts them beside its findings.
 *
 * Output (every row also carries "env" facts through the boot line):
 *   KSYNC {"kind":"sprite_setup",...,"pad":{"<class>":[iterations,ticks],...},
 *          "syscall_work":..,"pdev_copy":..,"compile_work":..}
 *   KSYNC {"kind":"sprite_bench","bench":..,"targets":..,"takes":..}
 *   KSYNC {"kind":"lock_cost",...}          uncontended acquire+release per algorithm and
 *                                           mask, beside lock cmpxchg and the masking pair
 *   KSYNC {"kind":"sprite_run","bench":..,"config":..,"sched":..,"mon_queue":..,"cpus":k,
 *          "rep":r,"work":W,"elapsed_ticks":E,"perturb":null|{"class":..,"factor":f},
 *          "lockstat":"timing"}
 *     followed by that run's KSYNC {"kind":"lockstat","run":<id>,...} rows
 *   KSYNC {"kind":"sprite_overhead","bench":..,"mode":"off|counts|timing",...}
 *   KSYNC {"kind":"sprite_end","failures":F}
 * Under TCG these are the emulator's figures; the report says so.
 */
#include "kernel.h"
#include "experiment.h"
#include "monitor.h"
#include "mm.h"
#include <ksync/errors.h>
#include <ksync/measure.h>

/* ---- classes ------------------------------------------------------------------------- */

LOCK_CLASS(handle_table_class, "handleTableLock", LOCK_MONITOR, LOCK_CODE);
LOCK_CLASS(vm_monitor_class, "vmMonitorLock", LOCK_MONITOR, LOCK_CODE);
LOCK_CLASS(pcb_class, "perPCBLock", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(exit_class, "exitLock", LOCK_MONITOR, LOCK_CODE);
LOCK_CLASS(pdev_class, "pdevLock", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(pipe_class, "pipeLock", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(fscache_class, "fsCacheLock", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(fsblock_class, "fsBlockLock", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(proc_table_class, "procTableMutex", LOCK_MASTER, LOCK_CODE);
LOCK_CLASS(child_cv_class, "procChildCond", LOCK_CONDVAR, LOCK_DATA);
LOCK_CLASS(pipe_cv_class, "pipeCond", LOCK_CONDVAR, LOCK_DATA);
LOCK_CLASS(pdev_cv_class, "pdevCond", LOCK_CONDVAR, LOCK_DATA);
LOCK_CLASS(lockcost_class, "lock_cost", LOCK_MASTER, LOCK_DATA);

/* Work inside each class's critical sections (cs_work iterations) and the factor the
 * perturbation runs set for one of them. */
enum { C_HANDLE, C_VM, C_PCB, C_EXIT, C_PDEV, C_PIPE, C_CACHE, C_BLOCK, C_PROC, C_N };
static const struct lock_class *const pad_class[C_N] = {
	&handle_table_class, &vm_monitor_class, &pcb_class, &exit_class, &pdev_class,
	&pipe_class, &fscache_class, &fsblock_class, &proc_table_class,
};
static const unsigned pad_base[C_N] = { 60, 80, 30, 60, 30, 20, 40, 40, 20 };
static unsigned pad_factor[C_N];	/* 1, or the perturbation's factor: set between runs */

static uint64_t work_sink;	/* keeps the loop; relaxed atomics: every CPU writes it */
static void spin_work(unsigned n)
{
	uint64_t x = __atomic_load_n(&work_sink, __ATOMIC_RELAXED) | 1;
	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	__atomic_store_n(&work_sink, x, __ATOMIC_RELAXED);
}
static void cs_work(unsigned c) { spin_work(pad_base[c] * pad_factor[c]); }
#define SYSCALL_WORK 40		/* a system call's own cost outside any lock */

/* ---- the configurations -------------------------------------------------------------- */

struct sp_config { const char *name, *sched; unsigned mon_flags; const char *queue; };
static const struct sp_config configs[] = {
	{ "sprite", "locked", MON_QSCHED, "sched_Mutex" },	/* Figure 9 */
	{ "sprite-fix", "locked", 0, "own" },			/* Figure 9's caption */
	{ "synthesis", "lockfree", 0, "own" },			/* Massalin & Pu */
};
#define NCONFIGS ARRAY_SIZE(configs)

static unsigned run_cpus;	/* CPUs the running benchmark uses: 0..run_cpus-1 */
static unsigned cpu_list[MAX_CPUS], ncpu_list;	/* the sweep's CPU counts, ascending */
static unsigned run_cpus_max(void) { return cpu_list[ncpu_list - 1]; }
static unsigned mon_flags_now;	/* the configuration's monitor flags */
static unsigned scale_pct = 100;
static unsigned failures;
static struct arch_facts facts;

static unsigned scaled(unsigned n)
{
	unsigned v = (unsigned)((uint64_t)n * scale_pct / 100);
	return v ? v : 1;
}

static const char *yn(bool b) { return b ? "true" : "false"; }

static void xmon_init(struct monitor *m, const struct lock_class *c)
{
	if (mon_init(m, c, mon_flags_now) != KSYNC_OK)
		panic("sprite: mon_init");
}

static struct thread *spawn(thread_fn fn, void *arg, unsigned cpu, const char *name)
{
	struct thread *t;
	int rc = thread_create(&t, fn, arg, 1, 1ull << cpu, name, 0);
	if (rc != KSYNC_OK)
		panic("sprite: thread_create '%s' on cpu %u: %s", name, cpu, ksync_strerror(rc));
	return t;
}

/* ---- the kernel services ------------------------------------------------------------- */

static struct monitor handle_table, vm_monitor, exit_lock, fscache;
static struct mlock proc_table;
static unsigned next_pid;		/* proc_table */
#define NHANDLES 64
static void *handles[NHANDLES];		/* handle_table */

static void *fs_lookup(unsigned fd)
{
	spin_work(SYSCALL_WORK);
	mon_lock(&handle_table);
	cs_work(C_HANDLE);
	void *o = handles[fd % NHANDLES];
	mon_unlock(&handle_table);
	return o;
}

static unsigned handle_add(void *o)	/* setup only */
{
	mon_lock(&handle_table);
	unsigned fd = 0;
	while (handles[fd])
		fd++;
	KASSERT(fd < NHANDLES);
	handles[fd] = o;
	mon_unlock(&handle_table);
	return fd;
}

#define VM_MAX_PAGES 32
struct proc {
	struct monitor pcb;		/* perPCBLock */
	struct condvar child_cv;	/* procChildCond, under pcb */
	struct proc *parent;
	unsigned pid;
	bool dead;			/* pcb of the parent */
	unsigned state;			/* pcb */
	uint64_t pages[VM_MAX_PAGES];	/* vm_monitor */
	unsigned npages;		/* vm_monitor */
	unsigned cpu;
	uint8_t buf[256];		/* a server's receive buffer: pcb */
};

static void proc_init(struct proc *p, struct proc *parent, unsigned cpu)
{
	memset(p, 0, sizeof *p);
	xmon_init(&p->pcb, &pcb_class);
	if (cv_init(&p->child_cv, &child_cv_class, &p->pcb) != KSYNC_OK)
		panic("sprite: cv_init");
	p->parent = parent;
	p->cpu = cpu;
	mlock_lock(&proc_table);
	cs_work(C_PROC);
	p->pid = ++next_pid;
	mlock_unlock(&proc_table);
}

static void vm_grow(struct proc *p)
{
	spin_work(SYSCALL_WORK);
	mon_lock(&vm_monitor);
	cs_work(C_VM);
	if (p->npages < VM_MAX_PAGES) {
		uint64_t pa = pmm_alloc();
		if (!pa)
			panic("sprite: out of pages");
		p->pages[p->npages++] = pa;
	}
	mon_unlock(&vm_monitor);
}

static void vm_free_all(struct proc *p)
{
	mon_lock(&vm_monitor);
	cs_work(C_VM);
	for (unsigned i = 0; i < p->npages; i++)
		pmm_free(p->pages[i]);
	p->npages = 0;
	mon_unlock(&vm_monitor);
}

static void proc_destroy(struct proc *p)
{
	vm_free_all(p);
	cv_destroy(&p->child_cv);
	mon_destroy(&p->pcb);
}

/* exit: under exitLock, free the address space, mark dead and wake the parent */
static void proc_exit(struct proc *p)
{
	spin_work(SYSCALL_WORK);
	mon_lock(&exit_lock);
	cs_work(C_EXIT);
	vm_free_all(p);
	struct proc *par = p->parent;
	mon_lock(&par->pcb);
	cs_work(C_PCB);
	p->dead = true;
	cv_signal(&par->child_cv);
	mon_unlock(&par->pcb);
	mon_unlock(&exit_lock);
}

/* exec: a fresh image - the old address space freed, a new one grown, the PCB reset */
static void proc_exec(struct proc *p, unsigned pages)
{
	vm_free_all(p);
	for (unsigned i = 0; i < pages; i++)
		vm_grow(p);
	mon_lock(&p->pcb);
	cs_work(C_PCB);
	p->state = 1;
	mon_unlock(&p->pcb);
}

/* ---- the file cache ------------------------------------------------------------------------ */

#define BLOCK_BYTES 512
#define NBLOCKS 64
struct block {
	struct monitor lock;		/* fsBlockLock */
	uint8_t data[BLOCK_BYTES];	/* lock */
};
static struct block *blocks;		/* NBLOCKS, set up per run */
static unsigned cache_hits;		/* fscache: the cache's lists, modelled by a counter */

static void cache_read(unsigned b, uint8_t *dst)
{
	spin_work(SYSCALL_WORK);
	mon_lock(&fscache);
	cs_work(C_CACHE);
	struct block *bl = &blocks[b % NBLOCKS];
	cache_hits++;
	mon_lock(&bl->lock);	/* the block before the cache lock is dropped (Sprite's order) */
	mon_unlock(&fscache);
	cs_work(C_BLOCK);
	memcpy(dst, bl->data, BLOCK_BYTES);
	mon_unlock(&bl->lock);
}

static void cache_write(unsigned b, const uint8_t *src)
{
	spin_work(SYSCALL_WORK);
	mon_lock(&fscache);
	cs_work(C_CACHE);
	struct block *bl = &blocks[b % NBLOCKS];
	mon_lock(&bl->lock);
	mon_unlock(&fscache);
	cs_work(C_BLOCK);
	memcpy(bl->data, src, BLOCK_BYTES);
	mon_unlock(&bl->lock);
}

/* ---- a run: instances started together, timed from release to the last join ------------ */

#define MAX_INST 16		/* CPUs a run may use */
#define INST_CAP (2 * MAX_INST)	/* instances: pdevtest has two clients per CPU */
struct inst {
	unsigned idx, cpu, iters;
	struct proc proc;		/* the instance's own process */
	uint64_t work;			/* units of work it did */
};
static struct inst insts[INST_CAP];
static unsigned ninst;
static volatile unsigned gate_ready, gate_open;

static void gate_wait(void)
{
	__atomic_fetch_add(&gate_ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		sched_sleep(SCHED_COND(12));
}

static void gate_release(struct thread **t, unsigned n)
{
	while (__atomic_load_n(&gate_ready, __ATOMIC_ACQUIRE) < n)
		thread_yield();
	__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < n; i++)
		sched_wakeup(t[i], SCHED_COND(12));
}

/* ---- fork, fexec ----------------------------------------------------------------------------- */

static void child_main(void *arg)
{
	struct proc *p = arg;
	mon_lock(&p->pcb);
	cs_work(C_PCB);
	p->state = 1;
	mon_unlock(&p->pcb);
	if (p->state == 1 && p->parent && p->parent->state == 2)	/* fexec's children */
		proc_exec(p, 4);
	proc_exit(p);
}

static void fork_main(void *arg)
{
	struct inst *in = arg;
	struct proc *self = &in->proc;
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++) {
		struct proc *c = kmalloc(sizeof *c);
		if (!c)
			panic("sprite: out of memory");
		proc_init(c, self, in->cpu);
		/* fork copies the address space */
		vm_grow(c);
		struct thread *t = spawn(child_main, c, in->cpu, "sp-child");
		mon_lock(&self->pcb);
		CV_WAIT_UNTIL(&self->child_cv, c->dead);
		mon_unlock(&self->pcb);
		thread_join(t);
		proc_destroy(c);
		kfree(c);
		in->work++;
	}
}

/* ---- mem ------------------------------------------------------------------------------------------ */

static void mem_main(void *arg)
{
	struct inst *in = arg;
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++) {
		vm_grow(&in->proc);
		if (in->proc.npages == VM_MAX_PAGES)
			proc_exec(&in->proc, 0);	/* start over */
		in->work++;
	}
	vm_free_all(&in->proc);
}

/* ---- cswitch: pipes ----------------------------------------------------------------------------- */

struct pipe {
	struct monitor lock;		/* pipeLock */
	struct condvar cv;		/* pipeCond: full changed */
	bool full;			/* lock */
	uint8_t byte;			/* lock */
};
static struct pipe pipes[2 * MAX_INST];
static unsigned pipe_fd[2 * MAX_INST];

static void pipe_write(unsigned fd, uint8_t b)
{
	struct pipe *p = fs_lookup(fd);
	mon_lock(&p->lock);
	CV_WAIT_UNTIL(&p->cv, !p->full);
	cs_work(C_PIPE);
	p->byte = b;
	p->full = true;
	cv_broadcast(&p->cv);
	mon_unlock(&p->lock);
}

static uint8_t pipe_read(unsigned fd)
{
	struct pipe *p = fs_lookup(fd);
	mon_lock(&p->lock);
	CV_WAIT_UNTIL(&p->cv, p->full);
	cs_work(C_PIPE);
	uint8_t b = p->byte;
	p->full = false;
	cv_broadcast(&p->cv);
	mon_unlock(&p->lock);
	return b;
}

static void cswitch_ping(void *arg)
{
	struct inst *in = arg;
	unsigned out = pipe_fd[2 * in->idx], back = pipe_fd[2 * in->idx + 1];
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++) {
		pipe_write(out, (uint8_t)i);
		if (pipe_read(back) != (uint8_t)i)
			panic("sprite cswitch: byte lost");
		in->work++;
	}
}

static void cswitch_pong(void *arg)
{
	struct inst *in = arg;
	unsigned from = pipe_fd[2 * in->idx], to = pipe_fd[2 * in->idx + 1];
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++)
		pipe_write(to, pipe_read(from));
}

/* ---- pdevtest: pseudo-devices ------------------------------------------------------------------- */

#define PDEV_SLOTS 8
#define PDEV_COPY 8
#define PDEV_CLIENTS_PER_CPU 2	/* pdevtest: many clients, one server (paper: > 3 clients) */
struct pdev {
	struct monitor lock;		/* pdevLock */
	struct condvar cv;		/* pdevCond: requests or replies changed */
	struct proc *server;
	uint64_t reserved, served;	/* lock: slots taken by writers, requests served */
	struct inst *ready[PDEV_SLOTS];	/* lock: copied requests, [ready_head, ready_tail) */
	uint64_t ready_head, ready_tail;
	unsigned clients_left;		/* lock */
};
static struct pdev pdevs[MAX_INST];
static unsigned pdev_fd[INST_CAP];
static struct inst servers[MAX_INST];
static bool replied[INST_CAP];		/* the client's pdev lock */

/* A client's write (Sprite's pseudo-device write): take a slot under pdevLock, copy the
 * data into the server's buffer under the server's perPCBLock (pdevLock not held: the
 * copy is where Sprite's clients met, section 6.3), then queue the request and wait for
 * the server's reply. */
static void pdev_write(struct inst *in, unsigned fd, const uint8_t *data, unsigned n)
{
	struct pdev *d = fs_lookup(fd);
	mon_lock(&d->lock);
	cs_work(C_PDEV);
	CV_WAIT_UNTIL(&d->cv, d->reserved - d->served < PDEV_SLOTS);
	d->reserved++;
	mon_unlock(&d->lock);
	struct proc *s = d->server;
	mon_lock(&s->pcb);
	/* a copy between address spaces: Sprite mapped the server's pages for it, the
	 * longest critical section of the benchmark (PDEV_COPY times a PCB update) */
	for (unsigned i = 0; i < PDEV_COPY; i++)
		cs_work(C_PCB);
	memcpy(s->buf, data, n);
	mon_unlock(&s->pcb);
	mon_lock(&d->lock);
	d->ready[d->ready_tail++ % PDEV_SLOTS] = in;
	cv_broadcast(&d->cv);
	CV_WAIT_UNTIL(&d->cv, replied[in->idx]);
	replied[in->idx] = false;
	mon_unlock(&d->lock);
}

static void pdev_client(void *arg)
{
	struct inst *in = arg;
	uint8_t data[64];
	memset(data, (int)in->idx, sizeof data);
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++) {
		pdev_write(in, pdev_fd[in->idx % INST_CAP], data, 1 + (i % sizeof data));
		in->work++;
	}
	struct pdev *d = fs_lookup(pdev_fd[in->idx % INST_CAP]);
	mon_lock(&d->lock);
	d->clients_left--;
	cv_broadcast(&d->cv);
	mon_unlock(&d->lock);
}

static void pdev_server(void *arg)
{
	struct inst *in = arg;
	struct pdev *d = &pdevs[in->idx];
	gate_wait();
	mon_lock(&d->lock);
	for (;;) {
		CV_WAIT_UNTIL(&d->cv, d->ready_head != d->ready_tail || d->clients_left == 0);
		if (d->ready_head == d->ready_tail)
			break;
		while (d->ready_head != d->ready_tail) {
			cs_work(C_PDEV);
			struct inst *c = d->ready[d->ready_head++ % PDEV_SLOTS];
			replied[c->idx] = true;
			d->served++;
		}
		cv_broadcast(&d->cv);
	}
	mon_unlock(&d->lock);
}

/* ---- pmake, pmakeInd, troff: compiles through the file cache ------------------------------------ */

struct pm {
	struct proc *master;
	unsigned first_block, nblocks_src;	/* this make's files */
	unsigned jobs, started, running;	/* master's pcb */
	unsigned compute;			/* cs-free work per job */
	unsigned cpu_next, cpu_base, cpu_count;	/* where jobs run (round robin) */
};
struct job { struct pm *pm; struct proc proc; unsigned id; };

static void job_main(void *arg)
{
	struct job *j = arg;
	struct pm *pm = j->pm;
	uint8_t buf[BLOCK_BYTES];
	for (unsigned b = 0; b < 4; b++)	/* the sources and headers */
		cache_read(pm->first_block + (j->id * 3 + b) % pm->nblocks_src, buf);
	spin_work(pm->compute);			/* the compile */
	buf[0] = (uint8_t)j->id;
	cache_write(pm->first_block + (j->id % pm->nblocks_src), buf);
	proc_exit(&j->proc);
}

/* A make: keep two jobs per CPU running until `jobs` are done (Pmake's parallelism). */
static void pmake_run(struct inst *in, struct pm *pm)
{
	struct proc *self = &in->proc;
	struct job *js = kzalloc(sizeof *js * pm->jobs);
	struct thread **ts = kzalloc(sizeof *ts * pm->jobs);
	if (!js || !ts)
		panic("sprite: out of memory");
	unsigned width = 2 * pm->cpu_count, done = 0;
	for (unsigned next = 0; done < pm->jobs;) {
		while (next < pm->jobs && next - done < width) {
			struct job *j = &js[next];
			j->pm = pm;
			j->id = next;
			unsigned cpu = pm->cpu_base + (pm->cpu_next++ % pm->cpu_count);
			proc_init(&j->proc, self, cpu);
			vm_grow(&j->proc);
			ts[next] = spawn(job_main, j, cpu, "sp-job");
			next++;
		}
		/* wait for the oldest running job (jobs are equal: they finish about in order) */
		struct job *j = &js[done];
		mon_lock(&self->pcb);
		CV_WAIT_UNTIL(&self->child_cv, j->proc.dead);
		mon_unlock(&self->pcb);
		thread_join(ts[done]);
		proc_destroy(&j->proc);
		done++;
		in->work++;
	}
	kfree(js);
	kfree(ts);
}

#define PM_COMPUTE 200000	/* spin_work iterations of one compile (troff: an eighth) */
static unsigned pm_jobs, pm_compute;

static void pmake_main(void *arg)	/* one make over all run_cpus CPUs */
{
	struct inst *in = arg;
	struct pm pm = { &in->proc, 0, NBLOCKS, pm_jobs, 0, 0, pm_compute, 0, 0, run_cpus };
	gate_wait();
	pmake_run(in, &pm);
}

static void pmake_ind_main(void *arg)	/* one make per CPU, its own files */
{
	struct inst *in = arg;
	unsigned per = NBLOCKS / MAX_INST;
	struct pm pm = { &in->proc, in->idx * per, per, in->iters, 0, 0, pm_compute, 0,
			 in->cpu, 1 };
	gate_wait();
	pmake_run(in, &pm);
}

static void troff_main(void *arg)
{
	struct inst *in = arg;
	uint8_t buf[BLOCK_BYTES];
	gate_wait();
	for (unsigned i = 0; i < in->iters; i++) {
		spin_work(pm_compute / 8);
		if (i % 4 == 0)
			cache_read(in->idx * 4 + i % 4, buf);
		in->work++;
	}
}

/* ---- the table of benchmarks ------------------------------------------------------------------- */

struct bench {
	const char *name, *kind;	/* kind: micro / macro */
	const char *targets;		/* the locks it is meant to stress (section 5) */
	unsigned iters;			/* per instance at scale 100 */
	bool fixed;			/* workload not scaled with the CPU count (pmake) */
	const char *takes;		/* the locks its code above takes: an input of the
					   model, printed so that the report can say so */
};
static const struct bench benches[] = {
	{ "fork", "micro", "process creation and exit: exitLock, perPCBLock, vmMonitorLock, sched_Mutex", 1500, false,
	  "procTableMutex, vmMonitorLock, perPCBLock, procChildCond, exitLock; a thread created and joined per child" },
	{ "fexec", "micro", "as fork, plus exec: vmMonitorLock", 1000, false,
	  "as fork, and the exec: vmMonitorLock (the image freed, 4 pages grown), perPCBLock" },
	{ "mem", "micro", "vmMonitorLock (the page-table updates of sbrk)", 12000, false,
	  "vmMonitorLock (every page); perPCBLock at each exec" },
	{ "cswitch", "micro", "the context-switch code: sched_Mutex", 1500, false,
	  "handleTableLock (every pipe access), pipeLock, pipeCond; a switch when the peer sleeps" },
	{ "pdevtest", "micro", "the pseudo-device: the server's perPCBLock during the copy, pdevLock", 3000, false,
	  "handleTableLock (every write), pdevLock, pdevCond, the server's perPCBLock (8 sections per copy)" },
	{ "pdevtestInd", "micro", "the pseudo-device implementation with one server per client", 3000, false,
	  "as pdevtest, one pseudo-device and server per client" },
	{ "pmake", "macro", "realistic: the file cache, process creation, vmMonitorLock", 48, true,
	  "procTableMutex, vmMonitorLock, perPCBLock, procChildCond, exitLock (a process per job), fsCacheLock, fsBlockLock (5 file accesses per job)" },
	{ "pmakeInd", "macro", "realistic: independent makes (two jobs each)", 48, false,
	  "as pmake, one make per CPU" },
	{ "troff", "macro", "realistic: CPU-bound, a file read now and then", 400, false,
	  "fsCacheLock, fsBlockLock (every 4th unit)" },
};
#define NBENCH ARRAY_SIZE(benches)

static void setup_world(void)
{
	xmon_init(&handle_table, &handle_table_class);
	xmon_init(&vm_monitor, &vm_monitor_class);
	xmon_init(&exit_lock, &exit_class);
	xmon_init(&fscache, &fscache_class);
	if (mlock_init(&proc_table, &proc_table_class, MLOCK_TICKET) != KSYNC_OK)
		panic("sprite: mlock_init");
	memset(handles, 0, sizeof handles);
	blocks = kzalloc(sizeof *blocks * NBLOCKS);
	if (!blocks)
		panic("sprite: out of memory");
	for (unsigned i = 0; i < NBLOCKS; i++)
		xmon_init(&blocks[i].lock, &fsblock_class);
}

static void teardown_world(void)
{
	for (unsigned i = 0; i < NBLOCKS; i++)
		mon_destroy(&blocks[i].lock);
	kfree(blocks);
	mon_destroy(&handle_table);
	mon_destroy(&vm_monitor);
	mon_destroy(&exit_lock);
	mon_destroy(&fscache);
	mlock_destroy(&proc_table);
}

/* Snapshots in the middle of a run (sprite_snap_ms=N, for `ksync lockstat --every`): a
 * thread at the lowest level on CPU 0 prints every class's statistics every N ms, then
 * resets them if sprite_snap_reset=1 (the paper's two calls, made while the benchmark
 * runs). It takes CPU 0 when the priority table gives the lowest level its turn: the
 * snapshots perturb the run they observe, and the report's runs have none. */
static unsigned snap_ms, snap_reset;
static volatile int snap_stop;
static uint64_t snap_t0;
static const char *snap_what;
static void snap_main(void *arg)
{
	(void)arg;
	char stag[160];
	uint64_t period = arch_tsc_hz() / 1000 * snap_ms, next = snap_t0 + period;
	for (unsigned i = 0; !__atomic_load_n(&snap_stop, __ATOMIC_ACQUIRE); i++) {
		while (arch_cycles() < next && !__atomic_load_n(&snap_stop, __ATOMIC_ACQUIRE))
			thread_yield();
		if (__atomic_load_n(&snap_stop, __ATOMIC_ACQUIRE))
			break;
		uint64_t now = arch_cycles();
		ksnprintf(stag, sizeof stag, "\"snapshot\":%u,\"bench\":\"%s\",\"since_start_ticks\":%lu,"
			  "\"reset_after\":%s", i, snap_what, (unsigned long)(now - snap_t0),
			  snap_reset ? "true" : "false");
		lockstat_emit(stag, now - (snap_reset && i ? next - period : snap_t0), false);
		if (snap_reset)
			lockstat_reset();
		next += period;
	}
}

/* Run benchmark b on CPUs 0..k-1 once: `after` sees the elapsed ticks and the work
 * before the world is torn down (the statistics cover the run only). */
static void run_once(const struct bench *b, unsigned k, void (*after)(uint64_t el, uint64_t work))
{
	struct thread *t[3 * INST_CAP];
	unsigned nt = 0;
	gate_ready = gate_open = 0;
	setup_world();
	ninst = b->fixed ? 1 : !strcmp(b->name, "pdevtest") ? PDEV_CLIENTS_PER_CPU * k : k;
	unsigned iters = scaled(b->iters);
	pm_jobs = scaled(b->iters) * (b->fixed ? 2 : 1);
	pm_compute = PM_COMPUTE;	/* a compile's own work: scaled through the job count */
	for (unsigned i = 0; i < ninst; i++) {
		struct inst *in = &insts[i];
		memset(in, 0, sizeof *in);
		in->idx = i;
		in->cpu = i % k;
		in->iters = iters;
		proc_init(&in->proc, NULL, in->cpu);
		in->proc.state = !strcmp(b->name, "fexec") ? 2 : 0;
	}
	const char *n = b->name;
	if (!strcmp(n, "fork") || !strcmp(n, "fexec")) {
		for (unsigned i = 0; i < ninst; i++)
			t[nt++] = spawn(fork_main, &insts[i], insts[i].cpu, "sp-fork");
	} else if (!strcmp(n, "mem")) {
		for (unsigned i = 0; i < ninst; i++)
			t[nt++] = spawn(mem_main, &insts[i], insts[i].cpu, "sp-mem");
	} else if (!strcmp(n, "cswitch")) {
		for (unsigned i = 0; i < 2 * ninst; i++) {
			xmon_init(&pipes[i].lock, &pipe_class);
			cv_init(&pipes[i].cv, &pipe_cv_class, &pipes[i].lock);
			pipes[i].full = false;
			pipe_fd[i] = handle_add(&pipes[i]);
		}
		for (unsigned i = 0; i < ninst; i++) {
			t[nt++] = spawn(cswitch_ping, &insts[i], insts[i].cpu, "sp-ping");
			t[nt++] = spawn(cswitch_pong, &insts[i], insts[i].cpu, "sp-pong");
		}
	} else if (!strcmp(n, "pdevtest") || !strcmp(n, "pdevtestInd")) {
		bool ind = !strcmp(n, "pdevtestInd");
		unsigned ndev = ind ? ninst : 1;
		for (unsigned d = 0; d < ndev; d++) {
			struct pdev *pd = &pdevs[d];
			memset(&servers[d], 0, sizeof servers[d]);
			servers[d].idx = d;
			servers[d].cpu = d % k;
			proc_init(&servers[d].proc, NULL, servers[d].cpu);
			xmon_init(&pd->lock, &pdev_class);
			cv_init(&pd->cv, &pdev_cv_class, &pd->lock);
			pd->server = &servers[d].proc;
			pd->reserved = pd->served = pd->ready_head = pd->ready_tail = 0;
			pd->clients_left = ind ? 1 : ninst;
			pdev_fd[d] = handle_add(pd);
		}
		for (unsigned i = 0; i < ninst; i++) {
			replied[i] = false;
			if (!ind)
				pdev_fd[i] = pdev_fd[0];
		}
		for (unsigned d = 0; d < ndev; d++)
			t[nt++] = spawn(pdev_server, &servers[d], servers[d].cpu, "sp-server");
		for (unsigned i = 0; i < ninst; i++)
			t[nt++] = spawn(pdev_client, &insts[i], insts[i].cpu, "sp-client");
	} else if (!strcmp(n, "pmake")) {
		t[nt++] = spawn(pmake_main, &insts[0], 0, "sp-pmake");
	} else if (!strcmp(n, "pmakeInd")) {
		for (unsigned i = 0; i < ninst; i++)
			t[nt++] = spawn(pmake_ind_main, &insts[i], insts[i].cpu, "sp-pmake");
	} else {
		for (unsigned i = 0; i < ninst; i++)
			t[nt++] = spawn(troff_main, &insts[i], insts[i].cpu, "sp-troff");
	}
	lockstat_reset();
	gate_release(t, nt);
	uint64_t t0 = arch_cycles();
	struct thread *sampler = NULL;
	if (snap_ms) {
		snap_t0 = t0;
		__atomic_store_n(&snap_stop, 0, __ATOMIC_RELEASE);
		if (thread_create(&sampler, snap_main, NULL, SCHED_LEVELS - 1, 1ull, "sp-snap", 0) != KSYNC_OK)
			sampler = NULL;
	}
	for (unsigned i = 0; i < nt; i++)
		thread_join(t[i]);
	uint64_t el = arch_cycles() - t0;
	if (sampler) {
		__atomic_store_n(&snap_stop, 1, __ATOMIC_RELEASE);
		thread_join(sampler);
	}
	uint64_t work = 0;
	for (unsigned i = 0; i < ninst; i++)
		work += insts[i].work;
	after(el, work);
	/* tear down */
	if (!strcmp(n, "cswitch"))
		for (unsigned i = 0; i < 2 * ninst; i++) {
			cv_destroy(&pipes[i].cv);
			mon_destroy(&pipes[i].lock);
		}
	if (!strncmp(n, "pdevtest", 8)) {
		unsigned ndev = !strcmp(n, "pdevtestInd") ? ninst : 1;
		for (unsigned d = 0; d < ndev; d++) {
			cv_destroy(&pdevs[d].cv);
			mon_destroy(&pdevs[d].lock);
			proc_destroy(&servers[d].proc);
		}
	}
	for (unsigned i = 0; i < ninst; i++)
		proc_destroy(&insts[i].proc);
	teardown_world();
}

/* ---- the benchmarks as load (Hohmuth & Haertig's Table 1: "a Linux system running various
 * multi-user benchmarks ran concurrently"; kernel/exp/lateness.c's helping-sprite) -----------
 * A driver thread (level 1, CPU 0) runs a mix of the benchmarks - cswitch, pdevtestInd, mem,
 * fork, pmakeInd - one after the other on CPUs 0..cpus-1 until sprite_load_stop, at
 * sprite_scale's fraction of their work (each run short, so the stop is prompt), with the
 * monitors' own queues and the scheduler already running. Their threads run at level 1.
 * The Sprite experiment and this load never run at once (one experiment at a time). */
static volatile int load_stop;		/* set by sprite_load_stop (release), read by the driver */
static struct thread *load_driver;	/* the caller's (start/stop) */
static unsigned load_cpus;		/* written before the driver starts */
static uint64_t load_runs;		/* the driver's; read after its join */

static void load_after(uint64_t el, uint64_t work) { (void)el; (void)work; }

static void load_main(void *arg)
{
	(void)arg;
	static const char *const mix[] = { "cswitch", "pdevtestInd", "mem", "fork", "pmakeInd" };
	for (unsigned i = 0; !__atomic_load_n(&load_stop, __ATOMIC_ACQUIRE); i++) {
		const char *want = mix[i % ARRAY_SIZE(mix)];
		for (unsigned b = 0; b < NBENCH; b++)
			if (!strcmp(benches[b].name, want))
				run_once(&benches[b], load_cpus, load_after);
		load_runs++;
	}
}

int sprite_load_start(unsigned cpus, unsigned scale)
{
	if (cpus == 0 || cpus > MAX_INST || cpus > arch_ncpus() || scale == 0 || scale > 100)
		return KSYNC_EINVAL;
	if (load_driver)
		return KSYNC_EBUSY;
	for (unsigned c = 0; c < C_N; c++)
		pad_factor[c] = 1;
	scale_pct = scale;
	mon_flags_now = 0;		/* each monitor its own queue (sprite-fix / synthesis) */
	snap_ms = 0;
	run_cpus = load_cpus = cpus;
	load_runs = 0;
	__atomic_store_n(&load_stop, 0, __ATOMIC_RELAXED);
	return thread_create(&load_driver, load_main, NULL, 1, 1ull, "sprite-load", 0);
}

uint64_t sprite_load_stop(void)
{
	if (!load_driver)
		return 0;
	__atomic_store_n(&load_stop, 1, __ATOMIC_RELEASE);
	(void)thread_join(load_driver);	/* the run in progress finishes first */
	load_driver = NULL;
	return load_runs;
}

/* ---- one measured run: rows out ---------------------------------------------------------------- */

struct run_desc {
	const struct bench *b;
	const struct sp_config *cfg;
	unsigned k, rep;
	int perturb;		/* C_* class whose critical sections are lengthened, or -1 */
	unsigned factor;
	unsigned mode;		/* lockstat mode during the run */
	bool overhead;		/* a sprite_overhead row, no lockstat rows */
};
static const struct run_desc *cur;
static unsigned run_seq;
static uint64_t pad_ticks[C_N];		/* TSC ticks of one cs_work(c) at factor 1 */
static uint64_t hot_hold[NBENCH][NCONFIGS][C_N];	/* hold ticks at the top CPU count */
static char tag[256];

static void after_run(uint64_t el, uint64_t work)
{
	const struct run_desc *d = cur;
	const char *kind = d->overhead ? "sprite_overhead" : "sprite_run";
	char pert[160] = "null";
	if (d->perturb >= 0)
		ksnprintf(pert, sizeof pert, "{\"class\":\"%s\",\"factor\":%u,\"pad_ticks\":%lu}",
			  pad_class[d->perturb]->name, d->factor, (unsigned long)pad_ticks[d->perturb]);
	kprintf("KSYNC {\"kind\":\"%s\",\"run\":%u,\"bench\":\"%s\",\"bench_kind\":\"%s\","
		"\"config\":\"%s\",\"sched\":\"%s\",\"mon_queue\":\"%s\",\"cpus\":%u,"
		"\"cpus_online\":%u,\"rep\":%u,\"work\":%lu,\"elapsed_ticks\":%lu,\"fixed\":%s,"
		"\"instances\":%u,\"perturb\":%s,\"lockstat\":\"%s\",\"scale\":%u,"
		"\"oversubscribed\":%s}\n",
		kind, run_seq, d->b->name, d->b->kind, d->cfg->name, d->cfg->sched, d->cfg->queue,
		d->k, arch_ncpus(), d->rep, (unsigned long)work, (unsigned long)el,
		yn(d->b->fixed), ninst, pert, lockstat_mode_name(d->mode), scale_pct,
		yn(facts.oversubscribed));
	if (d->overhead)
		return;
	ksnprintf(tag, sizeof tag, "\"run\":%u,\"bench\":\"%s\",\"config\":\"%s\",\"run_cpus\":%u",
		  run_seq, d->b->name, d->cfg->name, d->k);
	lockstat_emit(tag, el, false);
	if (d->perturb < 0 && d->k == run_cpus_max())
		for (unsigned c = 0; c < C_N; c++) {
			struct lockstat_snap sn;
			lockstat_read(pad_class[c], &sn);
			hot_hold[d->b - benches][d->cfg - configs][c] += sn.hold.total;
		}
}

static void measured_run(const struct run_desc *d)
{
	for (unsigned c = 0; c < C_N; c++)
		pad_factor[c] = 1;
	if (d->perturb >= 0)
		pad_factor[d->perturb] = d->factor;
	int rc = sched_start(d->cfg->sched);
	if (rc != KSYNC_OK) {
		kprintf("ksync: sprite: sched_start(%s): %s\n", d->cfg->sched, ksync_strerror(rc));
		failures++;
		return;
	}
	mon_flags_now = d->cfg->mon_flags;
	run_cpus = d->k;
	lockstat_set_mode(d->mode);
	cur = d;
	run_seq++;
	run_once(d->b, d->k, after_run);
	lockstat_set_mode(LOCKSTAT_COUNTS);
	rc = sched_stop();
	if (rc != KSYNC_OK) {
		kprintf("ksync: sprite: sched_stop: %s\n", ksync_strerror(rc));
		failures++;
	}
}

/* ---- uncontended acquire + release, beside a lock cmpxchg and the masking pair ---------------- */

#define LC_BATCHES 200
#define LC_OPS 64
static uint64_t lc_t[LC_BATCHES], lc_e[LC_BATCHES];

static void lc_emit(const char *name, const char *algo, const char *mask, const char *mode)
{
	char mn[24], md[24], p9[24], mx[24];
	KSYNC_MEASURE(lc_e, LC_BATCHES, LC_OPS, (void)0);
	struct ksync_prim_result r = ksync_prim_compute(lc_t, LC_BATCHES, LC_OPS, lc_e, LC_BATCHES);
	ksync_fixed2_format(mn, sizeof mn, r.min_x100);
	ksync_fixed2_format(md, sizeof md, r.median_x100);
	ksync_fixed2_format(p9, sizeof p9, r.p99_x100);
	ksync_fixed2_format(mx, sizeof mx, r.max_x100);
	kprintf("KSYNC {\"kind\":\"lock_cost\",\"name\":\"%s\",\"algo\":\"%s\",\"mask\":\"%s\","
		"\"lockstat\":\"%s\",\"scheme\":\"%s\",\"cpus\":%u,\"unit\":\"tsc_ticks\","
		"\"batches\":%u,\"ops_per_batch\":%u,\"min\":%s,\"median\":%s,\"p99\":%s,\"max\":%s}\n",
		name, algo, mask, mode, spl_scheme_name(), arch_ncpus(), LC_BATCHES, LC_OPS, mn, md,
		p9, mx);
}

static void lock_costs(void)
{
	static uint64_t word;
	static struct mlock l;
	KSYNC_MEASURE(lc_t, LC_BATCHES, LC_OPS, {
		uint64_t e = __atomic_load_n(&word, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&word, &e, e + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	});
	lc_emit("lock cmpxchg (a successful CAS, its load included)", "cas", "-", "-");
	KSYNC_MEASURE(lc_t, LC_BATCHES, LC_OPS, { crit_enter(); crit_leave(); });
	lc_emit("crit_enter + crit_leave (the scheme's masking pair)", "none", "crit", "-");
	KSYNC_MEASURE(lc_t, LC_BATCHES, LC_OPS, { irqkey_t k = arch_irq_save(); arch_irq_restore(k); });
	lc_emit("arch_irq_save + arch_irq_restore (the CPU's mask)", "none", "irqsave", "-");
	for (unsigned a = 0; a < MLOCK_NALGOS; a++) {
		mlock_init(&l, &lockcost_class, a);
		for (unsigned m = 0; m <= LOCKSTAT_TIMING; m++) {
			if (lockstat_set_mode(m) != KSYNC_OK)
				continue;
			KSYNC_MEASURE(lc_t, LC_BATCHES, LC_OPS, { mlock_lock(&l); mlock_unlock(&l); });
			lc_emit("mlock_lock + mlock_unlock, uncontended", mlock_algo_name(a), "crit",
				lockstat_mode_name(m));
			KSYNC_MEASURE(lc_t, LC_BATCHES, LC_OPS, {
				irqkey_t k = mlock_lock_irqsave(&l);
				mlock_unlock_irqrestore(&l, k);
			});
			lc_emit("mlock_lock_irqsave + mlock_unlock_irqrestore, uncontended",
				mlock_algo_name(a), "irqsave", lockstat_mode_name(m));
		}
		mlock_destroy(&l);
	}
	lockstat_set_mode(LOCKSTAT_COUNTS);
}

static uint64_t pad_cost(unsigned c)
{
	uint64_t best = ~0ull;
	for (unsigned i = 0; i < 50; i++) {
		uint64_t t0 = arch_cycles_begin();
		cs_work(c);
		uint64_t d = arch_cycles_end() - t0;
		if (d < best)
			best = d;
	}
	return best;
}

/* ---- the experiment ------------------------------------------------------------------------- */

static bool parse_cpus(const char *list)
{
	unsigned n = arch_ncpus();
	ncpu_list = 0;
	if (!list) {
		for (unsigned k = 1; k <= n && k <= MAX_INST; k++)
			cpu_list[ncpu_list++] = k;
		return true;
	}
	for (const char *p = list; *p;) {
		char num[8] = { 0 };
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0 || len >= sizeof num)
			return false;
		memcpy(num, p, len);
		unsigned k = cmdline_uint(num, 0);
		if (k == 0 || k > n || k > MAX_INST || (ncpu_list && k <= cpu_list[ncpu_list - 1]))
			return false;
		cpu_list[ncpu_list++] = k;
		if (!e)
			break;
		p = e + 1;
	}
	return ncpu_list > 0;
}

static void sprite_experiment(struct ktest_ctx *kt)
{
	char buf[128], cpus[64], bench_sel[128];
	arch_get_facts(&facts);
	failures = 0;
	if (cmdline_get("sprite", buf, sizeof buf) && !strcmp(buf, "off")) {
		kprintf("KSYNC {\"kind\":\"sprite_skipped\",\"reason\":\"sprite=off\"}\n");
		return;
	}
	scale_pct = cmdline_uint(cmdline_get("sprite_scale", buf, sizeof buf), 100);
	unsigned reps = cmdline_uint(cmdline_get("sprite_reps", buf, sizeof buf), 3);
	char pert_sel[128], cfg_sel[64];
	/* the benchmarks with perturbation runs: a list, 0 for none (default: the three the
	 * report's projection figure shows) */
	const char *pert = cmdline_get("sprite_perturb", pert_sel, sizeof pert_sel);
	if (!pert)
		pert = "cswitch,pdevtest,pmake";
	bool perturb = strcmp(pert, "0") != 0;
	bool overhead = cmdline_uint(cmdline_get("sprite_overhead", buf, sizeof buf), 1) != 0;
	bool costs = cmdline_uint(cmdline_get("sprite_costs", buf, sizeof buf), 1) != 0;
	const char *csel = cmdline_get("sprite_configs", cfg_sel, sizeof cfg_sel);
	snap_ms = cmdline_uint(cmdline_get("sprite_snap_ms", buf, sizeof buf), 0);
	snap_reset = cmdline_uint(cmdline_get("sprite_snap_reset", buf, sizeof buf), 0);
	/* the base and perturbation runs' statistics mode (default timing: the report's
	 * hold times need it); a mode the build compiled out is refused with the reason */
	unsigned base_mode = LOCKSTAT_TIMING;
	if (cmdline_get("sprite_lockstat", buf, sizeof buf)) {
		char why[200];
		int rc = lockstat_set_mode_name(buf, why, sizeof why);
		if (rc < 0) {
			kprintf("ksync: sprite: sprite_lockstat=%s: %s\n", buf, why);
			KT_EXPECT(false);
			return;
		}
		base_mode = (unsigned)lockstat_mode_parse(buf);
		lockstat_set_mode(LOCKSTAT_COUNTS);
	}
	const char *sel = cmdline_get("sprite_bench", bench_sel, sizeof bench_sel);
	unsigned ncsel = 0;
	for (unsigned c = 0; c < NCONFIGS; c++)
		ncsel += cmdline_listed(csel, configs[c].name);
	if (scale_pct == 0 || scale_pct > 10000 || reps == 0 || reps > 50 || ncsel == 0 ||
	    !parse_cpus(cmdline_get("sprite_cpus", cpus, sizeof cpus))) {
		kprintf("ksync: sprite: bad sprite_scale (1..10000), sprite_reps (1..50), "
			"sprite_configs (sprite, sprite-fix, synthesis) or sprite_cpus (ascending, "
			"1..%u)\n", arch_ncpus() < MAX_INST ? arch_ncpus() : MAX_INST);
		KT_EXPECT(false);
		return;
	}
	unsigned nsel = 0;
	for (unsigned i = 0; i < NBENCH; i++)
		nsel += cmdline_listed(sel, benches[i].name);
	if (nsel == 0) {
		kprintf("ksync: sprite: sprite_bench=%s names none of fork, fexec, mem, cswitch, "
			"pdevtest, pdevtestInd, pmake, pmakeInd, troff\n", sel);
		KT_EXPECT(false);
		return;
	}
	for (unsigned c = 0; c < C_N; c++) {
		pad_factor[c] = 1;
		pad_ticks[c] = pad_cost(c);
	}
	memset(hot_hold, 0, sizeof hot_hold);
	run_seq = 0;
	/* the model's inputs: each class's critical-section work (cs_work iterations, and
	 * TSC ticks of one section), a system call's own work, a compile's */
	char pads[C_N * 64], *pp = pads;
	for (unsigned c = 0; c < C_N; c++)
		pp += ksnprintf(pp, sizeof pads - (size_t)(pp - pads), "%s\"%s\":[%u,%lu]",
				c ? "," : "", pad_class[c]->name, pad_base[c],
				(unsigned long)pad_ticks[c]);
	kprintf("KSYNC {\"kind\":\"sprite_setup\",\"scale\":%u,\"reps\":%u,\"cpus\":%u,"
		"\"scheme\":\"%s\",\"oversubscribed\":%s,\"host_cores\":%u,\"benches\":%u,"
		"\"pad\":{%s},\"syscall_work\":%u,\"pdev_copy\":%u,\"compile_work\":%u}\n",
		scale_pct, reps, arch_ncpus(), spl_scheme_name(), yn(facts.oversubscribed),
		facts.host_cores, nsel, pads, SYSCALL_WORK, PDEV_COPY, PM_COMPUTE);
	for (unsigned i = 0; i < NBENCH; i++)
		if (cmdline_listed(sel, benches[i].name))
			kprintf("KSYNC {\"kind\":\"sprite_bench\",\"bench\":\"%s\",\"bench_kind\":\"%s\","
				"\"targets\":\"%s\",\"fixed\":%s,\"takes\":\"%s\"}\n", benches[i].name,
				benches[i].kind, benches[i].targets, yn(benches[i].fixed), benches[i].takes);
	if (costs)
		lock_costs();
	/* base runs: repetitions outermost, so every configuration and CPU count is
	 * interleaved with the others */
	for (unsigned r = 0; r < reps; r++)
		for (unsigned i = 0; i < NBENCH; i++) {
			if (!cmdline_listed(sel, benches[i].name))
				continue;
			for (unsigned ki = 0; ki < ncpu_list; ki++)
				for (unsigned c = 0; c < NCONFIGS; c++) {
					if (!cmdline_listed(csel, configs[c].name))
						continue;
					snap_what = benches[i].name;
					struct run_desc d = { &benches[i], &configs[c], cpu_list[ki], r, -1,
							      1, base_mode, false };
					measured_run(&d);
				}
		}
	/* perturbation: the hottest of the benchmark's own locks (most hold time at the top
	 * CPU count in the base runs), its critical sections 4x as long */
	if (perturb)
		for (unsigned r = 0; r < reps; r++)
			for (unsigned i = 0; i < NBENCH; i++) {
				if (!cmdline_listed(sel, benches[i].name) || !cmdline_listed(pert, benches[i].name))
					continue;
				for (unsigned c = 0; c < NCONFIGS; c++) {
					if (!cmdline_listed(csel, configs[c].name))
						continue;
					int hot = 0;
					for (unsigned x = 1; x < C_N; x++)
						if (hot_hold[i][c][x] > hot_hold[i][c][hot])
							hot = (int)x;
					for (unsigned ki = 0; ki < ncpu_list; ki++) {
						struct run_desc d = { &benches[i], &configs[c], cpu_list[ki], r,
								      hot, 4, base_mode, false };
						measured_run(&d);
					}
				}
			}
	/* the statistics' own cost: the same runs with the mode off, counts, timing */
	static const char *const oh_bench[] = { "cswitch", "pdevtest", "pmake" };
	snap_ms = 0;
	for (unsigned r = 0; r < reps && overhead; r++)
		for (unsigned i = 0; i < NBENCH; i++) {
			bool pick = false;
			for (unsigned j = 0; j < ARRAY_SIZE(oh_bench); j++)
				pick |= !strcmp(benches[i].name, oh_bench[j]);
			if (!pick || !cmdline_listed(sel, benches[i].name))
				continue;
			unsigned c0 = 0;
			while (!cmdline_listed(csel, configs[c0].name))
				c0++;
			for (unsigned m = 0; m <= LOCKSTAT_TIMING; m++) {
				struct run_desc d = { &benches[i], &configs[c0], run_cpus_max(), r, -1, 1,
						      m, true };
				measured_run(&d);
			}
		}
	kprintf("KSYNC {\"kind\":\"sprite_end\",\"runs\":%u,\"failures\":%u}\n", run_seq, failures);
	KT_EXPECT_EQ(failures, 0u);
}

/* Sprite's benchmarks; the body is a named function (experiment.h says why) */
KEXPERIMENT(sprite, "default")
{
	sprite_experiment(kt);
}
