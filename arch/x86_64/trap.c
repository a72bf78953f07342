/*
 * trap.c - GDT/TSS (per CPU, IST stacks for NMI, double fault, machine check and page
 * fault), the IDT, exception reporting, interrupt dispatch, and the tail of the
 * outermost trap where arch_frame_call's request runs (preemption).
 *
 * Every exception that nobody expects is fatal: the panic names the CPU, the vector and
 * its mnemonic, the error code, RIP, CR2, the registers and a frame-pointer backtrace
 * (the host runner symbolizes the `bt:` addresses with addr2line), then exits QEMU with
 * the failure code. The panic also names what faulted through the kernel's
 * kernel_fault_note (the current thread; a stack guard hit), and a #PF runs on its own
 * IST stack so that a thread's overflow into its guard page reports instead of turning
 * into a double fault on the overflowed stack.
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"

struct idt_gate {
	uint16_t off0, sel;
	uint8_t ist, type;
	uint16_t off1;
	uint32_t off2, rsvd;
} __attribute__((packed));

static struct idt_gate idt[256] __attribute__((aligned(16)));
extern const uint64_t isr_table[256];

/* handlers[v]: written at set-up (before the source is unmasked), read in trap_entry. */
static struct { irq_handler_t fn; void *arg; } handlers[256];
static volatile uint64_t unexpected_irqs;

static uint8_t ist_stacks[MAX_CPUS][4][8192] __attribute__((aligned(16)));

static const char *const exc_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor overrun", "#TS invalid TSS", "#NP segment not present",
	"#SS stack fault", "#GP general protection", "#PF page fault", "reserved 15",
	"#MF x87 error", "#AC alignment check", "#MC machine check", "#XM SIMD error",
	"#VE virtualization", "#CP control protection", "reserved 22", "reserved 23",
	"reserved 24", "reserved 25", "reserved 26", "reserved 27", "#HV hypervisor injection",
	"#VC VMM communication", "#SX security", "reserved 31",
};

void gdt_init_cpu(struct cpu *c)
{
	c->gdt[0] = 0;
	c->gdt[1] = 0x00af9a000000ffffull;	/* 0x08 code64 */
	c->gdt[2] = 0x00cf92000000ffffull;	/* 0x10 data */
	/* user segments in the order sysret wants (STAR[63:48] = 0x10: SS = 0x18|3, CS =
	 * 0x20|3; uvm.c): 0x18 data DPL 3, 0x20 code64 DPL 3 */
	c->gdt[3] = 0x00cff2000000ffffull;
	c->gdt[4] = 0x00affa000000ffffull;
	unsigned i = c->index;
	c->nmi_stack_top = (uint64_t)&ist_stacks[i][0][8192];
	c->df_stack_top = (uint64_t)&ist_stacks[i][1][8192];
	c->mc_stack_top = (uint64_t)&ist_stacks[i][2][8192];
	c->pf_stack_top = (uint64_t)&ist_stacks[i][3][8192];
	memset(&c->tss, 0, sizeof c->tss);
	c->tss.ist[0] = c->nmi_stack_top;
	c->tss.ist[1] = c->df_stack_top;
	c->tss.ist[2] = c->mc_stack_top;
	c->tss.ist[3] = c->pf_stack_top;
	c->tss.iomap_base = sizeof(struct tss);
	uvm_cpu_init();		/* syscall MSRs, NX (uvm.c) */
	uint64_t base = (uint64_t)&c->tss, lim = sizeof(struct tss) - 1;
	c->gdt[5] = (lim & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		    (((lim >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	c->gdt[6] = base >> 32;

	struct { uint16_t lim; uint64_t base; } __attribute__((packed)) p = { sizeof c->gdt - 1, (uint64_t)c->gdt };
	__asm__ volatile(
		"lgdt %0\n\t"
		"pushq $0x08\n\t"
		"leaq 1f(%%rip), %%rax\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"movw $0x10, %%ax\n\t"
		"movw %%ax, %%ds\n\t"
		"movw %%ax, %%es\n\t"
		"movw %%ax, %%ss\n\t"
		"movw $0x28, %%ax\n\t"
		"ltr %%ax"
		:: "m"(p) : "rax", "memory");
}

void idt_init(void)
{
	for (int v = 0; v < 256; v++) {
		uint64_t a = isr_table[v];
		idt[v].off0 = a & 0xffff;
		idt[v].sel = 0x08;
		/* IST: NMI 1, #DF 2, #MC 3, #PF 4. A #PF on its IST stack must never switch
		 * threads or take interrupts (it does not: exceptions never get frame calls) */
		idt[v].ist = v == 2 ? 1 : v == 8 ? 2 : v == 18 ? 3 : v == 14 ? 4 : 0;
		idt[v].type = 0x8e;	/* present, DPL 0, 64-bit interrupt gate (IF cleared) */
		if (v == 3 || v == 4)
			idt[v].type = 0xee;	/* DPL 3: int3 and into from ring 3 (SIGTRAP,
						   SIGSEGV as on Linux), not #GP */
		idt[v].off1 = (a >> 16) & 0xffff;
		idt[v].off2 = a >> 32;
		idt[v].rsvd = 0;
	}
}

void idt_load(void)
{
	struct { uint16_t lim; uint64_t base; } __attribute__((packed)) p = { sizeof idt - 1, (uint64_t)idt };
	__asm__ volatile("lidt %0" :: "m"(p) : "memory");
}

void arch_set_handler(unsigned vector, irq_handler_t fn, void *arg)
{
	KASSERT(vector >= 0x20 && vector < 256);
	handlers[vector].arg = arg;
	/* release: arg is visible to a CPU that sees fn (trap_entry loads fn with acquire) */
	__atomic_store_n(&handlers[vector].fn, fn, __ATOMIC_RELEASE);
}

void arch_frame_irqs_off(struct trapframe *tf) { tf->rflags &= ~RFLAGS_IF; }

/* Per-CPU one-shot recovery (tests). Written and read only by the owning CPU. */
static struct { uint64_t vector, rip; } expect[MAX_CPUS];
volatile uint64_t trap_expected_hits;

uint64_t *trap_expect(unsigned vector)
{
	expect[this_cpu_index()].vector = vector;
	return &expect[this_cpu_index()].rip;
}

/* A frame pointer the walk may follow: in the kernel image (the boot stack), the direct
 * map, or on a mapped page of the KVA region (thread stacks, context.c), both of its two
 * words. */
static bool plausible_frame(uint64_t fp)
{
	if (fp & 7)
		return false;
	if (fp >= KERNEL_VMA + 0x1000 && fp < KERNEL_VMA + (1ull << 30) - 16)
		return true;
	if (fp >= DIRECT_MAP_BASE + 0x1000 && fp < DIRECT_MAP_BASE + DIRECT_MAP_SIZE - 16)
		return true;
	return fp >= KVA_BASE && fp < KVA_BASE + KVA_SIZE - 16 &&
	       arch_vm_translate(fp) && arch_vm_translate(fp + 8);
}

void arch_backtrace_from(uint64_t rbp)
{
	for (int depth = 0; depth < 16 && plausible_frame(rbp); depth++) {
		uint64_t *f = (uint64_t *)rbp;
		if (!f[1])
			break;
		kprintf("  bt: 0x%016lx\n", f[1] - 1);	/* -1: point into the call insn */
		if (f[0] <= rbp)
			break;
		rbp = f[0];
	}
}

void arch_backtrace(void)
{
	arch_backtrace_from((uint64_t)__builtin_frame_address(0));
}

extern bool console_panicking;

static void dump_frame(struct trapframe *tf)
{
	kprintf("  RIP=0x%016lx CS=0x%lx RFLAGS=0x%lx RSP=0x%016lx SS=0x%lx\n",
		tf->rip, tf->cs, tf->rflags, tf->rsp, tf->ss);
	kprintf("  CR2=0x%016lx CR3=0x%lx CR0=0x%lx CR4=0x%lx error=0x%lx\n",
		read_cr2(), read_cr3(), read_cr0(), read_cr4(), tf->error);
	kprintf("  RAX=%016lx RBX=%016lx RCX=%016lx RDX=%016lx\n", tf->rax, tf->rbx, tf->rcx, tf->rdx);
	kprintf("  RSI=%016lx RDI=%016lx RBP=%016lx R8 =%016lx\n", tf->rsi, tf->rdi, tf->rbp, tf->r8);
	kprintf("  R9 =%016lx R10=%016lx R11=%016lx R12=%016lx\n", tf->r9, tf->r10, tf->r11, tf->r12);
	kprintf("  R13=%016lx R14=%016lx R15=%016lx\n", tf->r13, tf->r14, tf->r15);
	kprintf("  bt: 0x%016lx\n", tf->rip);
	arch_backtrace_from(tf->rbp);
}

void kernel_fault_note(uint64_t addr, char *buf, size_t n);

static __attribute__((noreturn)) void trap_fatal(struct trapframe *tf, unsigned v)
{
	uint64_t cr2 = read_cr2();	/* first: nothing below may fault and replace it */
	struct cpu *c = this_cpu();
	__atomic_store_n(&console_panicking, true, __ATOMIC_RELAXED);	/* printf.c says why relaxed */
	if (c->in_panic) {		/* a fault inside this report: say so and stop */
		kprintf("PANIC on cpu %u: exception %u (%s) while reporting a fault, RIP=0x%lx CR2=0x%lx\n",
			c->index, v, exc_names[v], tf->rip, cr2);
		arch_exit(false);
	}
	c->in_panic = 1;
	char note[160];
	note[0] = 0;
	kernel_fault_note(v == 14 ? cr2 : tf->rip, note, sizeof note);
	note[sizeof note - 1] = 0;
	kprintf("PANIC on cpu %u: exception %u (%s), error code 0x%lx%s%s\n",
		c->index, v, exc_names[v], tf->error, note[0] ? " in " : "", note);
	unsigned slot;
	if (v == 14 && stack_guard_hit(cr2, &slot))
		kprintf("  CR2 is in the unmapped guard area below thread stack slot %u: stack overflow\n", slot);
	dump_frame(tf);
	kprintf("ksync: kernel panic; exiting with failure\n");
	arch_exit(false);
}

static void trap_dispatch(struct trapframe *tf)
{
	unsigned v = (unsigned)tf->vector;
	if (v < 32) {
		unsigned me = this_cpu_index();
		if (expect[me].rip && expect[me].vector == v) {
			tf->rip = expect[me].rip;
			expect[me].rip = 0;
			trap_expected_hits++;
			return;
		}
		if (uvm_trap(tf, v))	/* the user space's: resolved, fixed up or killed */
			return;
		trap_fatal(tf, v);
	}
	/* acquire: pairs with arch_set_handler's release */
	irq_handler_t fn = __atomic_load_n(&handlers[v].fn, __ATOMIC_ACQUIRE);
	if (fn) {
		fn(tf, handlers[v].arg);
		return;
	}
	if (v == VEC_SPURIOUS)
		return;			/* spurious LAPIC interrupt: no EOI by definition */
	if (unexpected_irqs++ < 8)
		kprintf("ksync: unexpected interrupt vector 0x%x on cpu %u\n", v, this_cpu_index());
	lapic_eoi();
}

/* Called by isr_common with IRQs off (interrupt gates), on the interrupted context's
 * stack (or an IST stack for NMI/#DF/#MC/#PF). trap_depth counts the traps in progress on
 * this CPU; when the outermost one is done and a handler asked for a frame call, fn runs
 * here - below the trap frame on the interrupted thread's stack, with IRQs on - before
 * isr_common restores every register and iretq restores RIP/RFLAGS/RSP. fn may switch
 * threads: this stack then waits with the frame on it, and the thread may resume on
 * another CPU, so nothing per-CPU is touched after fn returns. The handler must have
 * sent its EOI before the tail (the LAPIC would otherwise hold back equal and lower
 * priorities while fn runs, or on whatever CPU ran it). */
#ifdef KSYNC_WINDOWS
struct arch_win arch_win_cpu[ARCH_WIN_CPUS];	/* each CPU's own, IF=0 (arch_impl.h) */
#endif

void arch_win_reset(void)
{
#ifdef KSYNC_WINDOWS
	irqkey_t k = arch_irq_save();
	struct arch_win *w = arch_win_self();
	uint32_t held = w->held;
	uint64_t since = w->since, site = w->open_site;
	*w = (struct arch_win){ 0 };
	/* the windows open now (this one, at least: IF=0 here) stay open */
	w->held = held;
	w->since = since;
	w->open_site = site;
	arch_irq_restore(k);
#endif
}

bool arch_win_read(struct arch_win *out)
{
#ifdef KSYNC_WINDOWS
	irqkey_t k = arch_irq_save();
	*out = *arch_win_self();
	if (arch_irqkey_on(k))
		out->held &= ~ARCH_WIN_IF;	/* the window this read opened itself */
	arch_irq_restore(k);
	return true;
#else
	(void)out;
	return false;
#endif
}

static void trap_body(struct trapframe *tf);

/* The tracker's view of a trap: IF=0 from the CPU's acceptance to iretq when the
 * interrupted code had IF=1 (isr.S's 26 instructions before this call and 19 after it
 * are outside the measured part: the report adds them). */
void trap_entry(struct trapframe *tf)
{
	if (ARCH_WINDOWS && (tf->rflags & RFLAGS_IF))
		ARCH_WIN_OPEN(ARCH_WIN_IF);
	trap_body(tf);
	if (ARCH_WINDOWS && (tf->rflags & RFLAGS_IF))
		ARCH_WIN_CLOSE(ARCH_WIN_IF);
}

/* The outermost interrupt (not exception: those may be on an IST stack) returning to
 * ring 3: the kernel's pending work for the process (a signal sent to it: it may end
 * the process and never return, or redirect tf to a handler), on the thread's kernel
 * stack with IRQs on. */
static void user_return(struct trapframe *tf)
{
	if (!(tf->cs & 3) || tf->vector < 32)
		return;
	arch_irq_enable();
	kernel_user_return(tf);
	uvm_shoot_pending();	/* uvm.c: a signal frame's copy-on-write break */
	arch_irq_disable();
}

static void trap_body(struct trapframe *tf)
{
	struct cpu *c = this_cpu();
	c->trap_depth++;
	trap_dispatch(tf);
	if (--c->trap_depth)
		return;
	if (!c->frame_call) {
		user_return(tf);
		return;
	}
	void (*fn)(void) = c->frame_call;
	c->frame_call = NULL;
	if (!(tf->rflags & RFLAGS_IF)) {
		/* a handler masked the frame after the request (arch_frame_irqs_off): the
		 * interrupted code must not be preempted now; the request is dropped */
		c->frame_calls_dropped++;
		return;
	}
	c->frame_calls++;
	arch_irq_enable();
	fn();
	arch_irq_disable();	/* isr_common's pops and iretq run with IRQs off */
	user_return(tf);	/* tf is this thread's (perhaps now on another CPU) */
}

bool arch_frame_call(struct trapframe *tf, void (*fn)(void))
{
	struct cpu *c = this_cpu();
	/* only interrupts (not exceptions: IST stacks, faulting code), only the outermost
	 * trap, only when the interrupted code could have been interrupted anyway (IF=1) */
	if (tf->vector < 32 || c->trap_depth != 1 || !(tf->rflags & RFLAGS_IF))
		return false;
	c->frame_call = fn;	/* read at this trap's tail, same CPU, IRQs still off */
	return true;
}
