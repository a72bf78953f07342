/*
 * pagehooks.c - kernel/fs's page references (vfs.h fs_page_hold/fs_page_release; weak
 * defaults in kernel/fs/wait.c) as the port's page counts (arch_if.h arch_page_hold/
 * arch_page_release), so that a MAP_SHARED mapping (mmfile.c, arch_as_map_page) and the
 * RAM file system hold a file's data page with one count: the last of them frees it.
 *
 * A leaf on purpose, as fshooks.c: it calls only the port, so kernel/fs -> these hooks ->
 * kernel/fs is no circle of files (tests/test_layout.py). No state of its own.
 */
#include "kernel.h"
#include "fs/vfs.h"

void fs_page_hold(void *page) { arch_page_hold(page); }
void fs_page_release(void *page) { arch_page_release(page); }
