/*
 * spl/tpr-optim.h - scheme tpr-optim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=tpr-optim -> -DKSYNC_SPL_HEADER="spl/tpr-optim.h"). Not in the paper: a soft level, CR8 raised on a deferral.
 * Slow paths and interrupt entry: kernel/spl/tpr-optim.c.
 */
#ifndef KSYNC_SPL_TPR_OPTIM_H
#define KSYNC_SPL_TPR_OPTIM_H

#define KSYNC_SCHEME "tpr-optim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 1
#define SPL_REPLAY_ORDERED 1
#define SPL_HANDLERS_NEST 1
#define SPL_HOLDS_ALL 0
#define SPL_RUN_AT_NONE_ONLY 0
#define SPL_USES_TPR 1

#include "spl/level-store.h"

#include "spl/crit-optim.h"

#endif
