/*
 * ksync_platform_kernel.h - libksync's platform hooks (protocol.md §6) in the kernel.
 * Included by include/ksync/platform.h when KSYNC_KERNEL is defined.
 */
#ifndef KSYNC_PLATFORM_KERNEL_H
#define KSYNC_PLATFORM_KERNEL_H

#include <stdint.h>
#include <stdarg.h>
#include "arch_if.h"

static inline uint64_t ksync_cycles(void) { return arch_cycles(); }

/* Serialized interval reads: the port's arch_cycles_begin/arch_cycles_end (arch_if.h). */
static inline uint64_t ksync_cycles_begin(void) { return arch_cycles_begin(); }
static inline uint64_t ksync_cycles_end(void) { return arch_cycles_end(); }

/* On-chip masking for libksync's irq variants (mwcas.h). */
typedef irqkey_t ksync_irq_key_t;
static inline ksync_irq_key_t ksync_irq_save(void) { return arch_irq_save(); }
static inline void ksync_irq_restore(ksync_irq_key_t k) { arch_irq_restore(k); }

static inline void ksync_cpu_relax(void) { arch_cpu_relax(); }
static inline unsigned ksync_cpu_id(void) { return arch_cpu_id(); }

void ksync_printf(const char *fmt, ...);
void ksync_vprintf(const char *fmt, va_list ap);

#endif
