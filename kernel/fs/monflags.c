/*
 * monflags.c - the monitor flags the file layer's monitors are made with (vfs.h
 * fs_set_monitor_flags): the kernel's lock configuration (kernel/proc/urun.c `locks=`;
 * Hartman & Ousterhout, Figure 9 and its caption; docs/locks.md). A file of its own so
 * that ramfs.c, pipe.c and fd.c read it without depending on dev.c (tests/test_layout.py:
 * no circle among kernel files).
 */
#include "fs_internal.h"

/* written once before any monitor of the file layer exists (vfs.h), then only read:
 * relaxed (the thread that creates monitors was started after the write) */
static unsigned file_mon_flags;

void fs_set_monitor_flags(unsigned flags)
{
	__atomic_store_n(&file_mon_flags, flags, __ATOMIC_RELAXED);
}

unsigned fs_monitor_flags(void)
{
	return __atomic_load_n(&file_mon_flags, __ATOMIC_RELAXED);
}

/* as file_mon_flags */
static bool fd_lookup_locked;

void fs_set_fd_lookup_locked(bool locked)
{
	__atomic_store_n(&fd_lookup_locked, locked, __ATOMIC_RELAXED);
}

bool fs_fd_lookup_locked(void)
{
	return __atomic_load_n(&fd_lookup_locked, __ATOMIC_RELAXED);
}
