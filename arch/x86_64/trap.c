/*
 * trap.c - GDT/TSS (per CPU, IST stacks for NMI, double fault, machine check), the IDT,
 * exception reporting and interrupt dispatch.
 *
 * Every exception that nobody expects is fatal: the panic names the CPU, the vector and
 * its mnemonic, the error code, RIP, CR2, the registers and a frame-pointer backtrace
 * (the host runner symbolizes the `bt:` addresses with addr2line), then exits QEMU with
 * the failure code.
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

static uint8_t ist_stacks[MAX_CPUS][3][8192] __attribute__((aligned(16)));

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
	c->gdt[3] = 0;
	c->gdt[4] = 0;
	unsigned i = c->index;
	c->nmi_stack_top = (uint64_t)&ist_stacks[i][0][8192];
	c->df_stack_top = (uint64_t)&ist_stacks[i][1][8192];
	c->mc_stack_top = (uint64_t)&ist_stacks[i][2][8192];
	memset(&c->tss, 0, sizeof c->tss);
	c->tss.ist[0] = c->nmi_stack_top;
	c->tss.ist[1] = c->df_stack_top;
	c->tss.ist[2] = c->mc_stack_top;
	c->tss.iomap_base = sizeof(struct tss);
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
		idt[v].ist = v == 2 ? 1 : v == 8 ? 2 : v == 18 ? 3 : 0;
		idt[v].type = 0x8e;	/* present, DPL 0, 64-bit interrupt gate (IF cleared) */
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

static bool plausible_frame(uint64_t fp)
{
	return fp >= 0x1000 && fp < (4ull << 30) && (fp & 7) == 0;
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

void trap_entry(struct trapframe *tf)
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
		console_panicking = true;
		kprintf("PANIC on cpu %u: exception %u (%s), error code 0x%lx\n",
			me, v, exc_names[v], tf->error);
		dump_frame(tf);
		kprintf("ksync: kernel panic; exiting with failure\n");
		arch_exit(false);
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
