/*
 * cpu.h - the kernel's CPU limit, arch-neutral. Every per-CPU array in the kernel, the
 * ports and libksync's kernel slots is sized from MAX_CPUS; the headers that keep their
 * own name for it (INTR_MAX_CPUS, KSYNC_MWCAS_CPU_SLOTS) are checked against it below.
 * "cpus" in the results means CPUs online (arch_ncpus()), never this limit.
 */
#ifndef KSYNC_CPU_H
#define KSYNC_CPU_H

#define MAX_CPUS 64

#endif
