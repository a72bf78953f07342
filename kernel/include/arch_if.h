/*
 * arch_if.h - the contract a port implements for the portable kernel.
 *
 * kernel/ calls only what is declared here (and libksync); arch/<port>/ implements it.
 * Hooks marked "inline" are static inline functions in the port's arch_impl.h, because
 * they sit on measured fast paths and must not cost a call. Every hook states its
 * preconditions. "IRQs off" means the CPU does not take maskable interrupts (IF=0 on x86).
 *
 * Present now (foundation): masking, controllers, task priority, cycle counter, CPU
 * identity, IPIs and cross-CPU calls, timers, measurement hooks, platform devices
 * (arch_dev.h), crash triggers, idle, console, exit, and the boot hand-over
 * (kernel_entry), and the threads' contexts, stacks and preemption (issue 10).
 *
 * The build enforces the door: kernel objects are compiled with -Iinclude -Icommon
 * -Ikernel/include -Iarch/<port>/public only (tests/test_layout.py checks the sources).
 */
#ifndef KSYNC_ARCH_IF_H
#define KSYNC_ARCH_IF_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* ---- inline hooks ----------------------------------------------------------------
 * Declared here as static inline prototypes; the port defines them in its public
 * arch_impl.h (arch/<port>/public/, included below), and the compiler checks each
 * definition against these declarations (a missing one is "used but never defined"). */

/* ---- on-chip interrupt masking (inline) */
typedef uint64_t irqkey_t;
static inline irqkey_t arch_irq_save(void);	/* disable IRQs, return the previous state. Any context. */
static inline void arch_irq_restore(irqkey_t k);	/* restore the state saved by arch_irq_save. Nestable. */
static inline void arch_irq_enable(void);	/* IF=1. Not from inside a handler that must stay masked. */
static inline void arch_irq_disable(void);	/* IF=0. */
static inline bool arch_irq_enabled(void);
static inline bool arch_irqkey_on(irqkey_t k);	/* whether the state saved in k had IRQs on. */
/* Enable IRQs and wait for one, atomically (x86 sti; hlt): the idle step. Returns with
 * IRQs on after a handler ran. */
static inline void arch_wait_for_irq(void);
/* IF on until nothing deliverable is pending (bounded), then off: lets the interrupts the
 * CPU holds in, by priority. Not inline (arch/x86_64/lapic.c). */
void arch_irq_window(void);
/* The masked-window tracker (x86_64 built with KSYNC_WINDOWS, make kernel WINDOWS=1; see
 * arch_impl.h): the longest union of this CPU's windows that held its clock back (IF=0,
 * and the soft windows a scheme reports with the two hooks, ARCH_WIN_LEVEL / _CRIT), in
 * TSC ticks with the code addresses that opened and closed it. In other builds and ports
 * the hooks are empty and arch_win_read returns false. */
#define ARCH_WIN_IF 1u		/* IF=0 */
#define ARCH_WIN_LEVEL 2u	/* a soft level at or above the clock's */
#define ARCH_WIN_CRIT 4u	/* an optimistic crit_enter section */
struct arch_win {
	uint64_t since;		/* TSC when the open window began */
	uint64_t max;		/* the longest closed window, TSC ticks */
	uint64_t open_site, max_open, max_close;	/* code addresses */
	uint64_t windows;	/* windows closed since the reset */
	uint32_t held;		/* ARCH_WIN_* bits open now */
} __attribute__((aligned(64)));
static inline void arch_win_soft_open(unsigned bit);	/* any context; the scheme's holds */
static inline void arch_win_soft_close(unsigned bit);
void arch_win_reset(void);			/* the calling CPU's record */
bool arch_win_read(struct arch_win *out);	/* the calling CPU's; false: no tracker */

/* ---- task priority (inline)
 * A 4-bit priority class (x86 CR8): interrupts whose vector>>4 <= class are held in the
 * local APIC until the class drops. */
static inline unsigned arch_tpr_get(void);
static inline void arch_tpr_set(unsigned cls);

/* ---- cycle counter, CPU identity (inline) */
static inline uint64_t arch_cycles(void);	/* TSC, unserialized. */
static inline uint64_t arch_cycles_begin(void);	/* serialized read opening an interval */
static inline uint64_t arch_cycles_end(void);	/* serialized read closing an interval */
static inline unsigned arch_cpu_id(void);	/* dense index 0..ncpus-1 of the calling CPU. */
/* Spin-wait hint: one step of every spinning wait in the kernel. A port whose CPUs may
 * outnumber the host's cores gives the host core back every fixed count of steps
 * (arch/hosted: 256; x86_64 under QEMU/KVM: the hypervisor's pause-loop exiting). */
static inline void arch_cpu_relax(void);

/* A CPU that spins on another CPU's progress (a helping lock whose owner runs
 * elsewhere) gives its host core back for a moment - the paravirtual "spin, then yield
 * the vCPU": the hosted port, when its vCPUs outnumber the host's cores, yields the vCPU
 * thread to the host scheduler (the owner's vCPU may be the one waiting for that core);
 * otherwise, and on x86_64 (a guest of QEMU or KVM, whose pause-loop exiting sees the
 * spin), nothing. Returns whether it yielded. Not inline (arch/<port>/). */
bool arch_spin_yield_host(void);

/* How long (TSC ticks) an idle CPU should poll for work before it waits for an
 * interrupt: a wakeup that arrives in that window costs a shared-memory handoff instead
 * of an interrupt that must wake a halted CPU. 0: wait at once (x86_64 under QEMU, where
 * a polling vCPU takes host time from the others; a hosted run with more vCPUs than
 * cores). Not inline (arch/<port>/). */
uint64_t arch_idle_poll_ticks(void);

/* ---- CPU-local read-modify-write (inline)
 * One instruction each, atomic against the calling CPU's interrupts (not against other
 * CPUs: no lock prefix). For per-CPU words only its own CPU writes (spl-optim's istate).
 * cas returns the value seen (== old when the store happened). */
static inline void arch_cpu_local_xor64(volatile uint64_t *p, uint64_t x);
static inline uint64_t arch_cpu_local_cas64(volatile uint64_t *p, uint64_t old, uint64_t want);

/* ---- measurement hooks (inline; Small & Manley 1997 section 5.3, Table 5)
 * Each is one set+restore pair of a masking mechanism, named for what it measures, with
 * an ARCH_MEAS_*_DETAIL string naming the port's instructions. IRQs off on the caller.
 *   offchip: write the off-chip controller's mask all-masked, then back to `saved`
 *            (arch_meas_offchip_read's value);
 *   onchip:  the on-chip disable/enable pair;
 *   flag / flag_incdec: a store pair / an increment-decrement pair on a per-CPU byte;
 *   prio:    the task priority (arch_tpr_set) raised to 15 and restored (ARCH_MEAS_PRIO_DETAIL). */
static inline uint32_t arch_meas_offchip_read(void);
static inline void arch_meas_offchip_pair(uint32_t saved);
static inline void arch_meas_onchip_pair(void);
static inline void arch_meas_flag_pair(void);
static inline void arch_meas_flag_incdec(void);
/* A device register read, the per-character I/O cost of the serial model. */
static inline uint32_t arch_dev_status_read(void);

#include "arch_impl.h"

/* ---- off-chip interrupt controller ------------------------------------------------
 * Source numbers are ISA IRQs 0..15 (the 8259A's lines, or their IOAPIC pins after
 * MADT overrides). Which controller is live is chosen at boot (APIC mode: IOAPIC;
 * the 8259A stays initialised and masked so schemes can use it). */
void intc_mask(unsigned irq);		/* stop the source at the controller. Any context. */
void intc_unmask(unsigned irq);
void intc_eoi(unsigned irq);		/* end of interrupt for a source being handled. */
unsigned intc_vector(unsigned irq);	/* CPU vector the source arrives on. */

/* ---- lines for the spl layer (kernel/spl/<scheme>.c) --------------------------------------
 * The 8259A is one device for the whole machine and delivers to the BSP only; the spl
 * schemes that mask off-chip write it from the BSP. All with IRQs off on the caller. */
void arch_isa_route_pic(unsigned irq);	/* ISA irq via the 8259A (vector 0x20+irq), IOAPIC pin masked;
					   the line stays masked in the IMR until arch_pic_write_mask */
void arch_isa_route_apic(unsigned irq, unsigned vector);	/* via the IOAPIC to the BSP at
					   vector, unmasked there; 8259A line masked */
void arch_isa_unroute(unsigned irq);	/* masked at both controllers */
void arch_pic_write_mask(uint16_t imr);	/* 8259A IMR (bit n = ISA irq n); only bytes that change
					   are written (a shadow remembers the last value) */
uint16_t arch_pic_mask_shadow(void);
void arch_pic_eoi(unsigned irq);	/* non-specific EOI to the 8259A(s) serving irq */
bool arch_pic_in_service(unsigned irq);	/* ISR bit: false means a spurious IRQ7/15 */
void arch_lapic_eoi(void);
void arch_self_ipi(unsigned vector);
/* This CPU's LAPIC timer as a one-shot clock: arm after tsc_ticks (rounded to the timer's
 * resolution, at least one count); stop; mask and unmask its LVT entry. The LAPIC does not
 * hold an expiry that falls in masked time: arch_clock_unmask re-raises an expired count
 * whose handler has not run by self-IPI and returns true (a delivery already waiting in
 * the IRR coalesces with it). The clock's handler must re-arm or stop the clock before
 * anything can unmask it (intr_run does so first thing). */
void arch_clock_arm(unsigned vector, uint64_t tsc_ticks);
void arch_clock_stop(void);
void arch_clock_mask(void);
bool arch_clock_unmask(void);

/* ---- interrupt handlers ------------------------------------------------------------ */
struct trapframe;
typedef void (*irq_handler_t)(struct trapframe *tf, void *arg);
/* Install a handler for a CPU vector (0x20..0xfe). Before the source is unmasked. */
void arch_set_handler(unsigned vector, irq_handler_t fn, void *arg);
/* The interrupted context resumes with IRQs off (cli-optim's on-chip fallback). */
void arch_frame_irqs_off(struct trapframe *tf);

/* ---- CPUs, IPIs -------------------------------------------------------------------- */
unsigned arch_ncpus(void);		/* CPUs online (BSP + started APs). */
/* Send a fixed IPI with `vector` to CPU `cpu`. */
void arch_send_ipi(unsigned cpu, unsigned vector);
/* Run fn(arg) on CPU `cpu` from its IPI handler (IRQs off there) and wait for it. */
void arch_call_on(unsigned cpu, void (*fn)(void *), void *arg);
/* The same in two halves, to start work on several CPUs at once: post (another CPU
 * only; returns once the mailbox is ours and the IPI is sent), then wait for it. */
void arch_call_post(unsigned cpu, void (*fn)(void *), void *arg);
void arch_call_wait(unsigned cpu);

/* ---- time -------------------------------------------------------------------------- */
uint64_t arch_tsc_hz(void);		/* TSC frequency found at boot. */
void arch_delay_us(uint64_t us);	/* busy-wait on the TSC. */
/* Local APIC timer of the calling CPU: periodic at hz, or one-shot after us, raising
 * `vector`. hz == 0 / us == 0 stops it. */
void arch_timer_periodic(unsigned vector, unsigned hz);
void arch_timer_oneshot(unsigned vector, uint64_t us);
uint64_t arch_timer_hz(void);		/* LAPIC timer input clock after calibration. */

/* ---- physical memory: the direct map ------------------------------------------------
 * The kernel reaches a physical address pa at P2V(pa) and names the frame behind a kernel
 * address va by V2P(va) (arch_impl.h, static inline, uint64_t -> uint64_t). On x86_64,
 * P2V(pa) = DIRECT_MAP_BASE + pa (PML4 slot 256, the first 4 GiB: RAM, firmware tables,
 * LAPIC/IOAPIC MMIO), and V2P also takes an address of the kernel image (linked at
 * KERNEL_VMA + its physical address, kernel.ld). pmm hands out frames by their P2V
 * address; page-table entries, CR3, DMA and AP trampoline addresses are V2P of it. No
 * kernel path dereferences a low-half address: the low half is the process's. The hosted
 * port has one address space: both are the identity. */

/* ---- virtual memory: lock-free mapping (Massalin & Pu "add mapping") -------------
 * 4 KiB pages in [KVA_BASE, KVA_BASE + KVA_SIZE) (x86_64: PML4 slot 257, in every
 * address space's kernel half). map: KSYNC_OK (also for re-adding the identical
 * mapping), KSYNC_EBUSY (a different mapping exists), KSYNC_EINVAL, KSYNC_ENOMEM.
 * Lock-free; any context with IRQs on or off. pa is physical (V2P of a pmm frame).
 * unmap: KSYNC_OK or KSYNC_ENOENT; shoots the TLB entry down on every CPU, so it needs
 * IRQs on. translate: the physical address behind va (the direct map, the image or the
 * KVA region), or 0. */
#define KVA_BASE 0xffff808000000000ull	/* PML4 slot 257 */
#define KVA_SIZE (512ull << 30)
int arch_vm_map(uint64_t va, uint64_t pa, bool writable);
int arch_vm_unmap(uint64_t va, uint64_t *old_pa);
uint64_t arch_vm_translate(uint64_t va);
/* Page tables this port's arch_vm_map installed by CAS, and CAS races it lost (freeing
 * its table): for the tests of the lock-free mapping. Written with atomic adds. */
extern volatile uint64_t vm_tables_installed, vm_tables_lost;

/* ---- facts for the boot report ----------------------------------------------------- */
struct arch_facts {
	unsigned cpus_found, cpus_online;
	uint64_t tsc_hz;
	const char *tsc_source;		/* "cpuid15", "cpuid16", "pit" */
	char hypervisor[13];		/* CPUID 0x40000000 signature, "" on bare metal */
	char cpu_model[49];		/* CPUID brand string */
	char cpu_vendor[13];		/* CPUID 0 vendor ("GenuineIntel"), "" if unknown */
	const char *apic_mode;		/* "xapic" or "x2apic" ("none": hosted) */
	const char *platform_source;	/* "acpi-madt", "mp-table", "none", "hosted" */
	uint64_t lapic_timer_hz;
	unsigned nioapic;
	bool rdtscp;			/* arch_cycles_end uses RDTSCP */
	const char *port;		/* ARCH_NAME: "x86_64", "hosted" */
	const char *sched;		/* hosted: "SCHED_FIFO" or "best-effort scheduling"; x86: "" */
	/* More vCPUs than host cores (every vCPU is a host thread: they wait for host time
	 * slices, so timing verdicts mean nothing; correctness ones stay). hosted: measured
	 * by the runtime; x86: vCPUs online > the command line's host_cpus=M, which the host
	 * tool passes when QEMU's -smp exceeds the CPUs it may use - false without it. */
	bool oversubscribed;
	unsigned host_cores;		/* hosted: host cores the process may use; x86: the
					   command line's host_cpus, 0 without it */
};
void arch_get_facts(struct arch_facts *f);
void arch_backtrace(void);		/* print "  bt: 0x..." lines for the caller's stack */

/* ---- console, exit ----------------------------------------------------------------- */
void arch_console_write(const char *s, size_t n);	/* IRQs off; caller serialises lines */
/* Console input (the interactive shell, kernel/proc/ushell.c): the console UART's receive
 * interrupt on ISA line ARCH_CONSOLE_IRQ (x86: COM1, IRQ 4). arch_console_rx_enable(true)
 * turns it on (x86: FIFO trigger 1 byte, IER "received data available", MCR OUT2, the
 * PC's gate of the UART's IRQ line), false turns it off; KSYNC_ENOTSUP on a port without
 * one. arch_console_rx_byte: the next received byte (x86: RBR while LSR.DR), or -1 when
 * none is waiting; called by the source's handler only (one CPU at a time: the source's
 * scheme never nests a handler with itself). Off by default: the experiments that read
 * COM1's line status register (the serial model) never see it on. */
#define ARCH_CONSOLE_IRQ 4
int arch_console_rx_enable(bool on);
int arch_console_rx_byte(void);
/* Leave the machine: under QEMU through isa-debug-exit (pass -> exit 33, fail -> 35);
 * on hardware: print and halt. Never returns. */
__attribute__((noreturn)) void arch_exit(bool pass);
__attribute__((noreturn)) void arch_halt_forever(void);

/* ---- crash triggers (for the host's tests of panic/hang reporting) ------------------
 * Each raises the named fault in the calling context and does not return normally (the
 * port's fault handler panics). A port without one returns KSYNC_ENOTSUP instead and the
 * caller reports that. */
int arch_crash_undefined_insn(void);	/* an invalid-opcode fault (x86: ud2) */
int arch_crash_triple(void);		/* an unrecoverable machine reset (x86: empty IDT + int3) */

/* ---- string primitives --------------------------------------------------------------
 * The compiler emits calls to memset and memcpy itself; the port provides them (x86:
 * rep stosb / rep movsb, arch/x86_64/string.c). memmove, memcmp, strlen, ... are
 * portable (kernel/core/lib.c). */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

/* ---- platform devices -------------------------------------------------------------
 * kernel/include/arch_dev.h (the PIT, RTC and ATA disk the experiments use as interrupt
 * sources) is the rest of this contract; the files that use the devices include it
 * (through dev.h), the others do not see the device names. */

/* ---- threads: contexts, stacks, preemption (issue 10; docs/sched.md) ---------------
 * struct arch_context is defined by the port in its arch_impl.h; the kernel embeds one in
 * each struct thread and never looks inside. The switch is the port's; what a thread is,
 * which one runs next and when, is kernel/sched/'s.
 *
 * FP/SIMD policy (Massalin & Pu distinguished integer-only from floating-point switches):
 * arch_context_switch saves the callee-saved integer registers and the stack pointer only
 * (x86_64: the kernel is built -mgeneral-regs-only, so kernel code has no FP state;
 * hosted: the SysV ABI makes every xmm register caller-saved, and MXCSR/x87 control words
 * are saved as callee-saved state). arch_context_switch_fp also saves the FP/SIMD state of
 * `from` and loads that of `to`, for contexts initialised with fp = true (a context
 * without fp is skipped on its side). */
struct arch_context;
/* The calling execution (a CPU's boot or idle stack) becomes ctx: the first switch away
 * from it saves into ctx. fp = false. */
void arch_context_adopt(struct arch_context *ctx);
/* ctx will run entry(arg) on the stack [base, base + size) at its first switch-in, with
 * IRQs off (entry enables them); entry never returns. base/size come from
 * arch_stack_alloc. */
void arch_context_init(struct arch_context *ctx, void *base, size_t size,
		       void (*entry)(void *), void *arg, bool fp);
/* Save the running context into *from, resume *to. IRQs off on entry; returns (IRQs off)
 * when some CPU switches back to from - possibly another CPU. */
void arch_context_switch(struct arch_context *from, struct arch_context *to);
void arch_context_switch_fp(struct arch_context *from, struct arch_context *to);
/* ctx will never run again (its thread was reaped, not from ctx itself): release what
 * the port keeps for it (a sanitizer fiber). */
void arch_context_destroy(struct arch_context *ctx);
/* Thread stacks: `size` usable bytes (a multiple of 4096) above one inaccessible guard
 * page; NULL when out of memory. Any context with IRQs on. */
void *arch_stack_alloc(size_t size);
void arch_stack_free(void *base, size_t size);
/* The port's overflow check, run by the kernel at every switch away from a thread:
 * false if [base, base + size) overflowed (hosted: a canary at the bottom is gone;
 * x86_64: the guard page faults first, so this checks the same canary as a second net). */
bool arch_stack_ok(void *base, size_t size);
/* Preemption: from an interrupt handler (IRQs off), ask that the interrupted context,
 * before it resumes, call fn() on the same CPU and stack with IRQs on, every register and
 * flag of the interrupted code preserved across the call (x86_64: at the tail of the trap
 * path; hosted: at the tail of the signal handler, with the interrupted context's signal
 * mask in force, or at the next poll point in thread context where the port defers
 * signals - its docs say which). Only for the outermost handler of a context that had
 * IRQs on: returns false, nothing requested, otherwise. */
bool arch_frame_call(struct trapframe *tf, void (*fn)(void));

/* ---- user space: ring 3, address spaces, user copies (issue 24; docs/userspace.md) ---
 * Massalin & Pu 1991 "Address spaces"/"Memory management": a process owns a page-table
 * root whose kernel part is shared with every other; the port switches it with the thread.
 * User addresses are [USER_VA_MIN, USER_VA_END): the whole lower half from 64 KiB
 * (Linux's default mmap_min_addr), PML4 slots 0..255 on x86_64; the kernel lives in the
 * upper half (slots 256.., copied into every process's root), so an ET_EXEC linked at
 * 0x400000 maps where it asks.
 * Every arch_as_* call on an address space is serialised by its owner (kernel/proc: the
 * process's mm lock); TLB entries are flushed on the calling CPU as they change, and on
 * the other CPUs that run the space (its other threads) by arch_as_shootdown. */
#define USER_VA_MIN 0x10000ull
#define USER_VA_END 0x800000000000ull
#define ARCH_PROT_READ 1u
#define ARCH_PROT_WRITE 2u
#define ARCH_PROT_EXEC 4u
struct arch_as;
struct arch_uctx;
struct arch_as *arch_as_create(void);		/* NULL: no memory */
/* Frees every page table and drops every page (a page shared copy-on-write goes when
 * its last mapper drops it). The space must be loaded on no CPU. */
void arch_as_destroy(struct arch_as *as);
/* The page behind va, mapped with prot if nothing is (a zeroed page), made private if
 * write and it is shared copy-on-write. Returns its physical address (the kernel reaches
 * it through the direct map: P2V) or 0 when out of memory. The fault path and exec use it. */
uint64_t arch_as_page(struct arch_as *as, uint64_t va, unsigned prot, bool write);
void arch_as_unmap(struct arch_as *as, uint64_t va, uint64_t len);	/* page-aligned */
/* A step of an unmap of [va, end): at most max_pages pages (and a bounded walk; 0: the
 * whole range); returns where the next step starts (end when done). kernel/proc/mm.c's
 * steps. */
uint64_t arch_as_unmap_some(struct arch_as *as, uint64_t va, uint64_t end, unsigned max_pages);
/* MAP_SHARED of a file: map the kernel page `page` (a direct-map address, pmm's) at va
 * with prot, replacing what was there; the mapping holds a reference on the page (fork
 * shares it writable, never copy-on-write). Its physical address, 0 if out of memory. */
uint64_t arch_as_map_page(struct arch_as *as, uint64_t va, void *page, unsigned prot);
/* MAP_PRIVATE of a file and exec's segments: the same, but shared copy-on-write - read
 * (and executed) in place, copied at the first write (the file's page never changes
 * through it; fork shares it copy-on-write like any other page). */
uint64_t arch_as_map_page_cow(struct arch_as *as, uint64_t va, void *page, unsigned prot);
/* A page's reference count outside the page tables (the RAM file system's data pages,
 * which a MAP_SHARED mapping may outlive): hold takes one, release drops one and frees
 * the page to pmm when none is left (any context). */
void arch_page_hold(void *page);
void arch_page_release(void *page);
void arch_as_protect(struct arch_as *as, uint64_t va, uint64_t len, unsigned prot);
/* A step of a protect of [va, end), bounded as arch_as_unmap_some's (max_pages 0: the
 * whole range); returns where the next step starts (end when done). */
uint64_t arch_as_protect_some(struct arch_as *as, uint64_t va, uint64_t end, unsigned prot,
			      unsigned max_pages);
/* child (new, empty) gets every mapping of parent; writable pages become read-only
 * copy-on-write in both. KSYNC_OK or KSYNC_ENOMEM (child then partly filled: destroy it). */
int arch_as_fork(struct arch_as *parent, struct arch_as *child);
/* The same for the pages in [lo, hi) (page-aligned), at most max_pages of them (0: no
 * limit): a fork in steps (kernel/proc/mm.c mm_fork). *next: where the next step starts
 * (hi when the range is done). The child's tables made by earlier steps are reused; the
 * steps' ranges must not overlap. Each call flushes the parent's TLB on this CPU, as
 * arch_as_fork does at its end. KSYNC_OK or KSYNC_ENOMEM. */
int arch_as_fork_range(struct arch_as *parent, struct arch_as *child, uint64_t lo, uint64_t hi,
		       unsigned max_pages, uint64_t *next);
uint64_t arch_as_npages(const struct arch_as *as);	/* user pages mapped */
/* The space's entries changed (unmap, protect) while other CPUs may run it (threads of
 * one process, issue 25): each other CPU that has it loaded reloads its root, so that
 * it forgets the old translations. Thread context, IRQs on, no lock held (it waits for
 * the other CPUs' IPI handlers). The caller's own CPU flushed as it changed them. */
void arch_as_shootdown(struct arch_as *as);
/* Whether va is mapped with at least prot in as (read/write/exec bits), for tests. */
bool arch_as_mapped(struct arch_as *as, uint64_t va, unsigned prot);

/* A user thread's port state: its address space, FS base, kernel stack top and the frame
 * its first entry to ring 3 uses. Owned by its thread (struct thread's uctx pointer). */
struct arch_uctx *arch_uctx_create(struct arch_as *as, void *owner);	/* NULL: no memory */
void *arch_uctx_owner(const struct arch_uctx *u);	/* the process: constant */
void arch_uctx_destroy(struct arch_uctx *u);
struct arch_as *arch_uctx_as(const struct arch_uctx *u);
/* Replace the space; when u is the calling thread's, load it now. */
void arch_uctx_set_as(struct arch_uctx *u, struct arch_as *as);
/* The first frame: a fresh image entered at entry with stack pointer sp, every other
 * register zero; or a fork child's: the parent's syscall frame with the result 0. */
void arch_uctx_start_exec(struct arch_uctx *u, uint64_t entry, uint64_t sp);
void arch_uctx_start_fork(struct arch_uctx *u, const struct trapframe *parent);
void arch_uctx_set_start_sp(struct arch_uctx *u, uint64_t sp);	/* clone's new stack */
/* The calling thread (whose uctx is u) goes to ring 3 through u's first frame. */
__attribute__((noreturn)) void arch_user_enter(struct arch_uctx *u);
/* The scheduler, at a switch from prev to next (either may be NULL: a kernel thread),
 * IRQs off: load next's space (or the kernel's), FS base and kernel stack. */
void arch_uctx_switch(struct arch_uctx *prev, struct arch_uctx *next);
/* arch_prctl(ARCH_SET_FS / ARCH_GET_FS) for the calling thread. false: not a user address. */
bool arch_uctx_set_fs(struct arch_uctx *u, uint64_t base);
uint64_t arch_uctx_get_fs(const struct arch_uctx *u);
/* The system-call frame (a struct trapframe): number, arguments 0..5, result; execve
 * resets it to a fresh image's entry. */
uint64_t arch_sys_nr(const struct trapframe *tf);
/* The number, with arguments 0..5 copied into a (one call on the dispatch path). */
uint64_t arch_sys_args(const struct trapframe *tf, uint64_t a[6]);
void arch_uregs_exec(struct trapframe *tf, uint64_t entry, uint64_t sp);
uint64_t arch_uregs_ip(const struct trapframe *tf);
/* Signal frames (kernel/proc/signal.c builds them in portable C; these are the port's
 * parts). The frame's registers as Linux's struct sigcontext (general registers, rip,
 * eflags, cs/ss, and for an exception frame trapno, err and cr2 = fault_addr; oldmask
 * and fpstate are the caller's); back from one, sanitized (cs/ss forced to the user
 * selectors, only the flags user space may change, IF on): false - nothing changed -
 * when rip is not a user address (the caller sends SIGSEGV). The frame then leaves by
 * iretq, so that rcx and r11 come back too. */
struct lx_sigcontext;
void arch_uregs_to_sigcontext(const struct trapframe *tf, uint64_t fault_addr,
			      struct lx_sigcontext *sc);
bool arch_uregs_from_sigcontext(struct trapframe *tf, const struct lx_sigcontext *sc);
uint64_t arch_uregs_sp(const struct trapframe *tf);
/* Enter a handler: rip, rsp, rdi/rsi/rdx = a0..a2, rax 0, DF/TF/RF cleared. */
void arch_uregs_call(struct trapframe *tf, uint64_t ip, uint64_t sp, uint64_t a0,
		     uint64_t a1, uint64_t a2);
/* The value a system call returns (rax), read and replaced after the call. */
uint64_t arch_sys_result(const struct trapframe *tf);
void arch_sys_set_result(struct trapframe *tf, long v);
/* A system call to be made again: back over the 2-byte `syscall`, rax = nr. */
void arch_sys_restart(struct trapframe *tf, uint64_t nr);
/* The exception a frame came from (0..31) or -1 (a system call, an interrupt). */
int arch_uregs_trapno(const struct trapframe *tf);
/* The calling user thread's FP/SSE state as a 512-byte fxsave image (a Linux
 * struct _fpstate), and back: arch_fpu_load sanitizes what user space may not set
 * (MXCSR's reserved bits); NULL loads the initial state. Thread context. */
void arch_fpu_store(void *fx512);
void arch_fpu_load(const void *fx512);
/* User copies: 0, or -14 (EFAULT) when any byte of the user range is outside
 * [USER_VA_MIN, USER_VA_END) or cannot be mapped; never a panic (the faulting
 * instruction has an exception-table fix-up). strncpy: the length (NUL not counted),
 * -14, or -36 (ENAMETOOLONG) with no NUL within n bytes. Thread context, IRQs on, no
 * master lock held (a fault may take the process's mm lock). */
long copy_from_user(void *dst, const void *usrc, size_t n);
long copy_to_user(void *udst, const void *src, size_t n);
long strncpy_from_user(char *dst, const char *usrc, size_t n);
/* ARCH_UCOPY_OWN_MEMORY (arch_impl.h): 1 when a kernel thread's own memory is "user"
 * memory to the copies above (hosted: the process's memory, bounds-checked against
 * [USER_VA_MIN, USER_VA_END), then memcpy - the kernel tests call the file calls'
 * handlers with their own buffers); 0 where user space is a process's own half that a
 * kernel thread does not have (x86_64). */
#ifndef ARCH_UCOPY_OWN_MEMORY
#define ARCH_UCOPY_OWN_MEMORY 0
#endif

/* The kernel's side (kernel/proc, kernel/syscall), called by the port:
 * kernel_syscall: a system call from ring 3 (IRQs on); returns the value for rax.
 * kernel_user_fault: a page fault at a user address (from ring 3, or from a user copy),
 *   IRQs off: 0 when the kernel made the access valid (demand-zero, copy-on-write),
 *   KERNEL_FAULT_OOM when the access was allowed but no page was left (from ring 3 the
 *   port then passes LX_SIGKILL (9) to kernel_user_trap: the out-of-memory kill; a user
 *   copy fails with -EFAULT), KERNEL_FAULT_BUS past a mapped file's end (SIGBUS),
 *   another nonzero value when the process cannot take it.
 * kernel_user_return: before an interrupt returns to ring 3 (and after each system
 *   call: kernel_syscall does it itself), on the thread's kernel stack, IRQs on, tf the
 *   frame that returns: the process's pending work (a signal that ends it, or whose
 *   handler the frame is redirected to); may not return. */
long kernel_syscall(struct trapframe *tf);
void kernel_user_return(struct trapframe *tf);
int kernel_user_fault(uint64_t addr, bool write, bool exec, bool user);
#define KERNEL_FAULT_OOM (-2)
/* the access was allowed but lies past the end of a mapped file: the port sends
 * SIGBUS (7) from ring 3 (Linux's VM_FAULT_SIGBUS); a user copy fails with -EFAULT */
#define KERNEL_FAULT_BUS (-3)
/* kernel_user_trap: an exception from ring 3 the port could not resolve (sig: the Linux
 *   signal; addr: the fault address for a page fault, else the faulting rip), on the
 *   thread's kernel stack with IRQs on, tf the user frame: the kernel sends the signal
 *   (a handler may take it) and returns to let tf go back to ring 3, or ends the
 *   process. */
void kernel_user_trap(struct trapframe *tf, int sig, uint64_t addr);

/* ---- the kernel's side of the contract (called by the port) ----------------------
 * kernel_ap_entry: each AP, once started and with IRQs enabled, calls it instead of its
 * own idle loop; never returns (it is that CPU's idle thread: kernel/sched/).
 * kernel_fault_note: a fault handler names what faulted: the current thread, and whether
 * `addr` lies in a thread's stack guard page (writes at most n bytes, NUL-terminated).
 * Callable with IRQs off, from a fault handler. */
__attribute__((noreturn)) void kernel_ap_entry(void);
void kernel_fault_note(uint64_t addr, char *buf, size_t n);

/* ---- boot hand-over -----------------------------------------------------------------
 * The port brings up its CPUs, interrupt controllers, timers and console, enables IRQs
 * on the BSP and calls kernel_entry once, on the BSP, with its boot facts. The kernel
 * owns its boot order from there (memory, then the mode the command line asks for). */
struct boot_info;
__attribute__((noreturn)) void kernel_entry(struct boot_info *bi);

#endif
