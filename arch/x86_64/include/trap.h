/*
 * trap.h - the frame isr.S builds, and the port's trap/interrupt internals.
 */
#ifndef KSYNC_TRAP_H
#define KSYNC_TRAP_H

#include <stdint.h>
#include <stdbool.h>
#include "percpu.h"

struct trapframe {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;	/* pushed by the CPU */
};

#define VEC_IRQ_BASE	0x20	/* ISA IRQ n arrives on 0x20 + n (PIC or IOAPIC) */
#define VEC_TEST	0xe0	/* free for tests */
#define VEC_TIMER	0xef	/* LAPIC timer */
#define VEC_CALL	0xf0	/* cross-CPU call IPI */
#define VEC_PING	0xf1	/* counted IPI (tests) */
#define VEC_SPURIOUS	0xff

void idt_init(void);		/* build the shared IDT (BSP, once) */
void idt_load(void);		/* load it (every CPU) */
void gdt_init_cpu(struct cpu *c);	/* per-CPU GDT + TSS with IST stacks, load them */
void trap_entry(struct trapframe *tf);
/* One-shot recovery for tests: the next exception with `vector` on this CPU resumes at
 * the address stored in the returned slot instead of panicking. The slot must be filled
 * in the same asm statement as the faulting instruction (a C label's address is not
 * reliable there):  asm("leaq 1f(%%rip),%%rax; movq %%rax,(%0); ud2; 1:" :: "r"(slot) : "rax");
 */
uint64_t *trap_expect(unsigned vector);
extern volatile uint64_t trap_expected_hits;

/* pic.c, lapic.c, ioapic.c */
void pic_init(void);
void pic_set_imr(uint16_t mask);	/* bit n masks IRQ n (master low byte, slave high) */
uint16_t pic_get_imr(void);
void pic_eoi(unsigned irq);
extern volatile uint64_t pic_spurious;	/* spurious IRQ7/15 seen (pic.c) */
void lapic_init_cpu(void);
uint32_t lapic_read(uint32_t reg);
void lapic_write(uint32_t reg, uint32_t v);
void lapic_eoi(void);
uint32_t lapic_id(void);
void lapic_send(uint32_t apic_id, uint32_t icr_lo);
bool lapic_is_x2apic(void);
uint64_t lapic_base_phys(void);
void lapic_timer_calibrate(void);
void ioapic_init(void);
void ioapic_route(unsigned gsi, unsigned vector, unsigned dest_apic, bool level, bool active_low);
void ioapic_set_masked(unsigned gsi, bool masked);
uint32_t ioapic_read(unsigned idx, uint32_t reg);
void ioapic_write(unsigned idx, uint32_t reg, uint32_t v);
unsigned ioapic_gsi_of_irq(unsigned irq, bool *level, bool *active_low);
volatile uint32_t *ioapic_mmio(unsigned idx);
unsigned ioapic_count(void);

/* LAPIC register offsets (xAPIC MMIO; x2APIC MSR = 0x800 + off/16) */
#define LAPIC_ID	0x020
#define LAPIC_VER	0x030
#define LAPIC_TPR	0x080
#define LAPIC_EOI	0x0b0
#define LAPIC_SVR	0x0f0
#define LAPIC_ESR	0x280
#define LAPIC_ICR_LO	0x300
#define LAPIC_ICR_HI	0x310
#define LAPIC_LVT_TIMER	0x320
#define LAPIC_LVT_LINT0	0x350
#define LAPIC_LVT_LINT1	0x360
#define LAPIC_LVT_ERR	0x370
#define LAPIC_TIMER_ICR	0x380
#define LAPIC_TIMER_CCR	0x390
#define LAPIC_TIMER_DCR	0x3e0

/* acpi.c: what the MADT (or the MP table) told us */
struct platform_info {
	unsigned ncpus;
	uint32_t apic_ids[64];
	uint64_t lapic_phys;
	unsigned nioapic;
	struct { uint32_t id, phys, gsi_base, nredir; } ioapic[8];
	/* ISA IRQ -> GSI overrides (MADT type 2); default identity, edge, active high */
	struct { uint32_t gsi; bool level, active_low, overridden; } isa[16];
	const char *source;	/* "acpi-madt" or "mp-table" */
};
extern struct platform_info platform;
void acpi_init(void);

/* tsc.c */
void tsc_init(void);
extern const char *tsc_source;
uint64_t pit_delay_ticks(uint32_t pit_ticks);	/* TSC ticks spanning pit_ticks of the PIT */

/* context.c */
void fpu_init_cpu(void);	/* CR0/CR4 for x87+SSE+FXSAVE, fninit, MXCSR default; each CPU */
bool stack_guard_hit(uint64_t addr, unsigned *slot);	/* addr in a stack slot's unmapped guard */
extern volatile uint64_t stack_slots_live;

/* uvm.c */
void uvm_cpu_init(void);	/* EFER.SCE/NXE, STAR/LSTAR/FMASK; each CPU, from gdt_init_cpu */
bool uvm_trap(struct trapframe *tf, unsigned v);	/* trap_dispatch, before a panic */
void uvm_shoot_pending(void);	/* user_return: a copy-on-write break shot down (uvm.c) */

/* smp.c */
void smp_init(void);
void smp_drop_boot_identity(void);	/* after smp_init, IRQs on: PML4 slot 0 goes */
void smp_call_handler(void);

#endif
