/*
 * ktest_main.c - main() of every hosted test binary (linked into each, not into
 * libksync.a): runs the KTEST cases linked into the program and prints KTAP.
 *   usage: <test> [filter]      filter = comma-separated globs ('*'), default all
 * Exit status 0 iff every selected case passed (or was skipped), 1 otherwise.
 */
#include <stdio.h>

#include <ksync/ktest.h>

int main(int argc, char **argv)
{
	/* Line-buffered stdout even when piped, so a crash loses at most a partial line
	 * (ksync_vprintf also flushes after every call). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return ktest_run_all(argc > 1 ? argv[1] : NULL) == 0 ? 0 : 1;
}
