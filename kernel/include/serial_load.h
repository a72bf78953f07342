/*
 * serial_load.h - the serial line as a load beside user programs (kernel/dev/serial_load.c;
 * Small & Manley 1997 sections 5.1 and 6.4; issue 26 item 3). The runner's (urun.c).
 */
#ifndef KSYNC_SERIAL_LOAD_H
#define KSYNC_SERIAL_LOAD_H

#include "kernel.h"

/* Start the modelled 16550 at `spec` = "BAUD" or "BAUD:BITS" (baud 9600..921600, bits
 * SERIAL_BITS_MIN..MAX, default 10 = 8N1), trigger level 8, its interrupt the PIT (IRQ0)
 * at IPL_TTY through the running scheme. KSYNC_EINVAL with the reason in `why` for a bad
 * spec, KSYNC_EBUSY if it runs already, the interrupt layer's or the model's error. Call
 * from the BSP, before the programs. */
int serial_load_start(const char *spec, char *why, size_t n);
bool serial_load_running(void);
/* /proc/ksync-serial: {"serial":false} when no load runs, else the running totals (baud,
 * bits, trigger, tsc_hz, arrived, chars, lost, irqs, lossy_irqs, gaps_seen, seq_errors,
 * latency_max_tsc, handler_max_tsc) as one line of JSON; its length. */
long serial_load_proc(char *buf, size_t n);
/* End the stream where it has got to (the handler's next run), remove the interrupt,
 * print KSYNC {"kind":"serial_load",...}; true if the stream ended and the driver's
 * count equals the model's (gaps seen == lost, read + lost == sent). No load: true. */
bool serial_load_end(void);

#endif
