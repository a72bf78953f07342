/*
 * spl_fast_cli_optim.c - hosted fast-path cost of the cli-optim scheme: the kernel's spl.h
 * in user mode (bench/spl_fast.h has the method and the output).
 */
#define KSYNC_SCHEME_CLI_OPTIM 1
#include "spl_fast.h"
