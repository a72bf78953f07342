/*
 * x86.h - x86-64 instruction wrappers used by the port: port I/O, MSRs, control
 * registers, CPUID, TSC. Each is a single instruction; none takes a lock.
 */
#ifndef KSYNC_X86_H
#define KSYNC_X86_H

#include <stdint.h>
#include <stdbool.h>

static inline void outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" :: "a"(v), "Nd"(port) : "memory"); }
static inline void outw(uint16_t port, uint16_t v) { __asm__ volatile("outw %0, %1" :: "a"(v), "Nd"(port) : "memory"); }
static inline void outl(uint16_t port, uint32_t v) { __asm__ volatile("outl %0, %1" :: "a"(v), "Nd"(port) : "memory"); }
static inline uint8_t inb(uint16_t port) { uint8_t v; __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory"); return v; }
static inline uint16_t inw(uint16_t port) { uint16_t v; __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port) : "memory"); return v; }
static inline uint32_t inl(uint16_t port) { uint32_t v; __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port) : "memory"); return v; }
static inline void insw(uint16_t port, void *buf, uint32_t n)
{
	__asm__ volatile("rep insw" : "+D"(buf), "+c"(n) : "d"(port) : "memory");
}
/* A write to an unused port: ~1 us on real ISA hardware, used between PIC init words. */
static inline void io_wait(void) { outb(0x80, 0); }

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" :: "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

static inline uint64_t read_cr0(void) { uint64_t v; __asm__ volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr2(void) { uint64_t v; __asm__ volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr3(void) { uint64_t v; __asm__ volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr4(void) { uint64_t v; __asm__ volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr8(void) { uint64_t v; __asm__ volatile("mov %%cr8, %0" : "=r"(v)); return v; }
/* CR8 writes are serializing for interrupt delivery: "memory" keeps accesses on their side. */
static inline void write_cr8(uint64_t v) { __asm__ volatile("mov %0, %%cr8" :: "r"(v) : "memory"); }
static inline uint64_t read_rflags(void) { uint64_t v; __asm__ volatile("pushfq; popq %0" : "=r"(v) :: "memory"); return v; }

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline void cpu_pause(void) { __asm__ volatile("pause" ::: "memory"); }
static inline void cpu_hlt(void) { __asm__ volatile("hlt" ::: "memory"); }

#define MSR_APIC_BASE	0x1b
#define MSR_EFER	0xc0000080
#define MSR_FS_BASE	0xc0000100
#define MSR_GS_BASE	0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_PAT		0x277
#define MSR_X2APIC_BASE	0x800

#define RFLAGS_IF	(1ul << 9)

#endif
