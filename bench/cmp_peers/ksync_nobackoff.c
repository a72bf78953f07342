/*
 * ksync_nobackoff.c - libksync's stack and mpmc queue for bench/cmp_peers.c, compiled
 * with the bounded backoff after a failed CAS turned off (KSYNC_BACKOFF_MAX 0, defined
 * here before any ksync header, as include/ksync/backoff.h asks): the "ksync-nobackoff"
 * rows, which show what the algorithm alone does next to the peers (which do not back
 * off) and, against the "ksync" rows, what the backoff contributes. mk/lib.mk links
 * this object into build/hosted/bench/cmp_peers. Hosted only.
 */
#define KSYNC_BACKOFF_MAX 0
#define CMP_KSYNC_TABLE cmp_ksync_nobackoff
#define CMP_KSYNC_NAME "ksync-nobackoff"
#include "../cmp_peers_ksync.h"

_Static_assert(KSYNC_BACKOFF_MAX == 0, "the nobackoff unit must see KSYNC_BACKOFF_MAX 0");
