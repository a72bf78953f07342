/*
 * spl_fast_tpr_optim.c - hosted fast-path cost of the tpr-optim scheme: the kernel's spl.h
 * in user mode (bench/spl_fast.h has the method and the output).
 */
#define KSYNC_SCHEME_TPR_OPTIM 1
#include "spl_fast.h"
