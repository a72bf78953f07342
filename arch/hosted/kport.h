/*
 * arch/hosted/kport.h - private to the hosted port's kernel glue (kport.c, boot.c): the
 * ISA-line -> runtime-source map and what boot.c hands kport.c. The two functions the
 * platform devices call (hosted_isa_raise, hosted_tsc_hz) are declared here with the
 * same prototypes as in the devices' arch/hosted/kdev.h.
 */
#ifndef KSYNC_HOSTED_KPORT_H
#define KSYNC_HOSTED_KPORT_H

#include <stdint.h>
#include <stdbool.h>

/* Deliver ISA irq `irq` as its source signal to the vCPU the line is routed to (the
 * BSP). Any thread, async-signal-safe (one tgkill); a line without a source is ignored. */
void hosted_isa_raise(unsigned irq);
uint64_t hosted_tsc_hz(void);		/* TSC ticks per second (found at boot) */

/* kport.c, called by boot.c on the main thread before hosted_start. */
void kport_init(void);			/* TSC frequency, sources, IPI handler */
void kport_entry(unsigned cpu);		/* each vCPU's entry; vCPU 0 runs the kernel */
extern const char *kport_disk_path;	/* -disk PATH, for the devices ("" if none) */

/* ISA irq -> runtime source (1..7; 0 is the clock), -1 if the line has no source. */
extern const int8_t kport_isa_src[16];

#endif
