/*
 * exp_prims.c - the primitive-cost experiment (`make run`, protocol.md §4). It lives in
 * the port because every row is an x86 instruction sequence named by what it executes
 * (port 0x21, IOAPIC registers, %gs:16, CR8, the LAPIC TPR); the portable experiments
 * reach the same mechanisms through arch_if.h's measurement hooks (kernel/exp/irq.c).
 *
 * Small & Manley 1997, section 5.3 and Table 5: the cost of setting and restoring the
 * interrupt priority off-chip (8259A IMR), on-chip (cli/sti) and through a flag, each
 * measured as a set+unset pair in a tight loop. We add the modern rows: pushf/cli/popf,
 * CR8 (task priority), IOAPIC redirection-entry masking, the LAPIC TPR, and the atomic
 * instructions the lock-free objects are built from. Every row runs on the BSP with the
 * timer and devices masked, 200 batches x 256 operations, the empty loop subtracted
 * (libksync measure.h). Under TCG these are the emulator's costs, not hardware costs.
 */
#include "kernel.h"
#include "experiment.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include <ksync/measure.h>

#define NB KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH

static uint64_t t[NB], e[NB];
static uint64_t word __attribute__((aligned(64)));
static struct { uint64_t lo, hi; } dword __attribute__((aligned(64)));

/* cmdline skip=GLOBS leaves rows out (kvm_pvm cannot run cmpxchg16b in ring 0). */
static char skip[128];
static bool skipped(struct ktest_ctx *kt, const char *name)
{
	if (skip[0] && ktest_filter_match(skip, name)) {
		kt_diag(kt, "%s skipped (skip=%s on the command line)", name, skip);
		return true;
	}
	return false;
}

/* Measure BODY after a warm-up, with the empty loop measured right before it. A body
 * with commas (asm operand lists) is passed as a statement expression ({ ... }). */
#define ROW(name, detail, BODY)                                                       \
	do {                                                                          \
		if (skipped(kt, name))                                                \
			break;                                                        \
		KSYNC_MEASURE(e, 16, OPS, BODY);		/* warm-up */         \
		KSYNC_MEASURE(e, NB, OPS, (void)0);                                   \
		KSYNC_MEASURE(t, NB, OPS, BODY);                                      \
		ksync_prim_emit(name, detail, t, NB, OPS, e, NB);                     \
	} while (0)

KEXPERIMENT(prims, "default")
{
	if (!cmdline_get("skip", skip, sizeof skip))
		skip[0] = 0;
	irqkey_t k = arch_irq_save();
	uint64_t cr8 = read_cr8();

	ROW("cli_sti", "cli; sti", ({ __asm__ volatile("cli; sti" ::: "memory"); }));
	arch_irq_disable();
	ROW("pushf_cli_popf", "pushfq; cli; popfq",
	    ({ __asm__ volatile("pushfq; cli; popfq" ::: "memory", "cc"); }));
	ROW("cr8_raise_restore", "mov cr8<-15; mov cr8<-old",
	    ({ write_cr8(15); write_cr8(cr8); }));

	uint8_t imr = inb(0x21);
	ROW("pic_imr_write_restore", "8259A master OCW1: outb 0x21 all-masked, restore",
	    ({ outb(0x21, 0xff); outb(0x21, imr); }));

	if (ioapic_count()) {
		unsigned pin = platform.ioapic[0].nredir - 1;	/* an unused pin */
		volatile uint32_t *m = ioapic_mmio(0);
		m[0] = 0x10 + 2 * pin;
		uint32_t lo = m[4] | (1u << 16);
		ROW("ioapic_mask_unmask", "IOREGSEL+IOWIN write x2 (mask, unmask), last pin",
		    ({ m[0] = 0x10 + 2 * pin; m[4] = lo; m[0] = 0x10 + 2 * pin; m[4] = lo & ~(1u << 16); }));
		ioapic_write(0, 0x10 + 2 * pin, lo);	/* leave it masked */
	} else {
		kt_diag(kt, "no IOAPIC: ioapic_mask_unmask not measured");
	}

	if (lapic_is_x2apic()) {
		ROW("lapic_tpr_write", "x2apic-msr", ({ wrmsr(0x808, 0xf0); wrmsr(0x808, 0); }));
	} else {
		volatile uint32_t *tpr = (volatile uint32_t *)P2V(lapic_base_phys() + LAPIC_TPR);
		ROW("lapic_tpr_write", "xapic-mmio", ({ *tpr = 0xf0; *tpr = 0; }));
	}

	ROW("flag_set_clear", "movb $1,%gs:flag; movb $0,%gs:flag",
	    ({ __asm__ volatile("movb $1, %%gs:16; movb $0, %%gs:16" ::: "memory"); }));

	uint64_t zero = 0;
	ROW("lock_cmpxchg", "lock cmpxchgq, succeeds",
	    ({ uint64_t ex = 0; __asm__ volatile("lock cmpxchgq %2, %1" : "+a"(ex), "+m"(word) : "r"(zero) : "memory", "cc"); }));
	ROW("lock_xadd", "lock xaddq",
	    ({ uint64_t one = 1; __asm__ volatile("lock xaddq %0, %1" : "+r"(one), "+m"(word) :: "memory", "cc"); }));
	dword.lo = dword.hi = 0;
	ROW("cmpxchg16b", "lock cmpxchg16b, succeeds",
	    ({ uint64_t a = 0, d = 0; __asm__ volatile("lock cmpxchg16b %2" : "+a"(a), "+d"(d), "+m"(dword) : "b"(zero), "c"(zero) : "memory", "cc"); }));

	write_cr8(cr8);
	arch_irq_restore(k);
	KT_EXPECT(arch_irq_enabled() == ((k & RFLAGS_IF) != 0));
}
