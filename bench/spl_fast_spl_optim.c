/*
 * spl_fast_spl_optim.c - hosted fast-path cost of the spl-optim scheme: the kernel's spl.h
 * in user mode (bench/spl_fast.h has the method and the output).
 */
#define KSYNC_SCHEME_SPL_OPTIM 1
#include "spl_fast.h"
