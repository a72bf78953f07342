/*
 * spl/cli-optim.h - scheme cli-optim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=cli-optim -> -DKSYNC_SPL_HEADER="spl/cli-optim.h"). Small & Manley 1997 section 3.4.
 * Slow paths and interrupt entry: kernel/spl/cli-optim.c.
 */
#ifndef KSYNC_SPL_CLI_OPTIM_H
#define KSYNC_SPL_CLI_OPTIM_H

#define KSYNC_SCHEME "cli-optim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 1
#define SPL_REPLAY_ORDERED 0
#define SPL_HANDLERS_NEST 0
#define SPL_HOLDS_ALL 1
#define SPL_RUN_AT_NONE_ONLY 1
#define SPL_USES_TPR 0

#include "spl/level-store.h"

#include "spl/crit-optim.h"

#endif
