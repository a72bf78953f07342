/*
 * spl_fast.c - hosted fast-path cost of one optimistic scheme: the kernel's spl.h in user
 * mode (bench/spl_fast.h has the method and the output). Built once per optimistic scheme
 * of kernel/spl/schemes.txt by mk/lib.mk, with -DKSYNC_SPL_HEADER="spl/<name>.h" choosing it, as
 * build/hosted/bench/spl_fast_<name>.
 */
#include "spl_fast.h"
