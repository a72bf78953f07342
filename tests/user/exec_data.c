/* exec_data: a program's initialized data is its own - exec maps the executable's whole
 * data pages from the file copy-on-write (kernel/proc/exec.c), so a write to one copies
 * it and reaches neither the file nor the next exec of the same file; code and read-only
 * data read as the file holds them. The program writes its data, then execs itself twice:
 * every round must print the initial values. Usage: exec_data [ROUND] */
#include "ut.h"
static int counter = 41;				/* .data, a partial page */
static int table[3000] = { [0] = 5, [2500] = 7 };	/* .data: whole pages */
static const char motto[] = "read-only data";		/* .rodata */
extern char **environ;
int main(int argc, char **argv)
{
	int round = argc > 1 ? atoi(argv[1]) : 0;
	printf("round %d: counter %d table %d %d %d motto %s\n", round, counter, table[0],
	       table[1500], table[2500], motto);
	counter += 100;
	table[0] = -1;
	table[1500] = -2;
	table[2500] = -3;
	printf("round %d wrote: counter %d table %d %d %d\n", round, counter, table[0],
	       table[1500], table[2500]);
	if (round >= 2)
		return 0;
	char next[12];
	snprintf(next, sizeof next, "%d", round + 1);
	char *a[] = { argv[0], next, NULL };
	fflush(stdout);
	execve(argv[0], a, environ);
	printf("execve: errno %d\n", errno);
	return 1;
}
