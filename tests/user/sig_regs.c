/* rt_sigreturn gives back every register: general registers set by asm before a ud2
 * whose SIGILL handler skips it (and clobbers what it likes), or before a kill system
 * call whose SIGUSR1 handler runs at its return; xmm0-15 and MXCSR survive a handler
 * that clobbers them; rsp+8 is 16-byte aligned at handler entry; a handler changes the
 * interrupted code's registers through its ucontext. Case as argv[1]. */
#include "ut.h"
#include <signal.h>
#include <ucontext.h>
#include <stdint.h>
static uint64_t in[16], out[16];
uint64_t entry_rsp;
static volatile int hits;
/* the handler's first instruction records rsp, then the C part runs */
void h_c(int s, siginfo_t *si, void *uc);
__asm__(".text\n.globl h_entry\nh_entry:\n\tmovq %rsp, entry_rsp(%rip)\n\tjmp h_c\n");
void h_entry(int, siginfo_t *, void *);
static int modify;
void h_c(int s, siginfo_t *si, void *ucv)
{
	(void)si;
	ucontext_t *uc = ucv;
	hits++;
	if (s == SIGILL)
		uc->uc_mcontext.gregs[REG_RIP] += 2;	/* over the ud2 */
	if (modify)
		uc->uc_mcontext.gregs[REG_R12] = 0x1212121212121212ull;
	/* clobber every xmm register and MXCSR */
	unsigned mx = 0x7f80;	/* round toward zero... and all masked */
	__asm__ volatile("pcmpeqd %%xmm0,%%xmm0; movdqa %%xmm0,%%xmm1; movdqa %%xmm0,%%xmm2;"
			 "movdqa %%xmm0,%%xmm3; movdqa %%xmm0,%%xmm4; movdqa %%xmm0,%%xmm5;"
			 "movdqa %%xmm0,%%xmm6; movdqa %%xmm0,%%xmm7; movdqa %%xmm0,%%xmm8;"
			 "movdqa %%xmm0,%%xmm9; movdqa %%xmm0,%%xmm10; movdqa %%xmm0,%%xmm11;"
			 "movdqa %%xmm0,%%xmm12; movdqa %%xmm0,%%xmm13; movdqa %%xmm0,%%xmm14;"
			 "movdqa %%xmm0,%%xmm15; ldmxcsr %0" :: "m"(mx) :
			 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
			 "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}
/* in[]/out[]: rax rbx rcx rdx rsi rdi rbp r8..r15 (15 values) and rflags' low byte */
static void run(int viasyscall)
{
	for (int i = 0; i < 15; i++)
		in[i] = 0x0101010101010101ull * (uint64_t)(i + 1) ^ 0x8000000000000003ull;
	if (viasyscall) {
		in[0] = SYS_kill;
		in[5] = (uint64_t)getpid();	/* rdi */
		in[4] = SIGUSR1;		/* rsi */
	}
	__asm__ volatile(
		"pushq %%rbp\n\t"
		"pushq %%rbx\n\t"
		"pushq %%r12\n\t"
		"pushq %%r13\n\t"
		"pushq %%r14\n\t"
		"pushq %%r15\n\t"
		"pushq %0\n\t"			/* &in, &out, flag */
		"pushq %1\n\t"
		"pushq %2\n\t"
		"movq 16(%%rsp), %%rax\n\t"	/* &in */
		"movq 8(%%rax), %%rbx\n\t"
		"movq 16(%%rax), %%rcx\n\t"
		"movq 24(%%rax), %%rdx\n\t"
		"movq 32(%%rax), %%rsi\n\t"
		"movq 40(%%rax), %%rdi\n\t"
		"movq 48(%%rax), %%rbp\n\t"
		"movq 56(%%rax), %%r8\n\t"
		"movq 64(%%rax), %%r9\n\t"
		"movq 72(%%rax), %%r10\n\t"
		"movq 80(%%rax), %%r11\n\t"
		"movq 88(%%rax), %%r12\n\t"
		"movq 96(%%rax), %%r13\n\t"
		"movq 104(%%rax), %%r14\n\t"
		"movq 112(%%rax), %%r15\n\t"
		"movq 0(%%rax), %%rax\n\t"
		"cmpq $0, (%%rsp)\n\t"		/* the flag: compare sets rflags (kept below) */
		"jne 1f\n\t"
		"ud2\n\t"
		"jmp 2f\n"
		"1:\tsyscall\n"
		"2:\tpushq %%rax\n\t"
		"movq 16(%%rsp), %%rax\n\t"	/* &out (below: rax, flag) */
		"popq (%%rax)\n\t"
		"movq %%rbx, 8(%%rax)\n\t"
		"movq %%rcx, 16(%%rax)\n\t"
		"movq %%rdx, 24(%%rax)\n\t"
		"movq %%rsi, 32(%%rax)\n\t"
		"movq %%rdi, 40(%%rax)\n\t"
		"movq %%rbp, 48(%%rax)\n\t"
		"movq %%r8, 56(%%rax)\n\t"
		"movq %%r9, 64(%%rax)\n\t"
		"movq %%r10, 72(%%rax)\n\t"
		"movq %%r11, 80(%%rax)\n\t"
		"movq %%r12, 88(%%rax)\n\t"
		"movq %%r13, 96(%%rax)\n\t"
		"movq %%r14, 104(%%rax)\n\t"
		"movq %%r15, 112(%%rax)\n\t"
		"addq $24, %%rsp\n\t"
		"popq %%r15\n\t"
		"popq %%r14\n\t"
		"popq %%r13\n\t"
		"popq %%r12\n\t"
		"popq %%rbx\n\t"
		"popq %%rbp\n\t"
		:: "r"((uint64_t)in), "r"((uint64_t)out), "r"((uint64_t)viasyscall)
		: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
}
static const char *const names[15] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
				       "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
static void report(int viasyscall)
{
	int same = 0;
	for (int i = 0; i < 15; i++) {
		if (in[i] == out[i])
			same++;
		else if (!(viasyscall && (i == 0 || i == 2 || i == 10)))	/* rax rcx r11: the ABI's */
			printf("  %s differs%s\n", names[i], i == 11 && modify &&
			       out[i] == 0x1212121212121212ull ? " (set by the handler)" : "");
	}
	printf("hits=%d same=%d rax=%ld aligned=%d\n", hits, same,
	       viasyscall ? (long)out[0] : 0L, (int)((entry_rsp + 8) % 16 == 0));
}
static void setxmm(uint8_t v[16][16])
{
	__asm__ volatile("movdqu 0(%0),%%xmm0; movdqu 16(%0),%%xmm1; movdqu 32(%0),%%xmm2;"
			 "movdqu 48(%0),%%xmm3; movdqu 64(%0),%%xmm4; movdqu 80(%0),%%xmm5;"
			 "movdqu 96(%0),%%xmm6; movdqu 112(%0),%%xmm7; movdqu 128(%0),%%xmm8;"
			 "movdqu 144(%0),%%xmm9; movdqu 160(%0),%%xmm10; movdqu 176(%0),%%xmm11;"
			 "movdqu 192(%0),%%xmm12; movdqu 208(%0),%%xmm13; movdqu 224(%0),%%xmm14;"
			 "movdqu 240(%0),%%xmm15; ud2;"
			 "movdqu %%xmm0,0(%0); movdqu %%xmm1,16(%0); movdqu %%xmm2,32(%0);"
			 "movdqu %%xmm3,48(%0); movdqu %%xmm4,64(%0); movdqu %%xmm5,80(%0);"
			 "movdqu %%xmm6,96(%0); movdqu %%xmm7,112(%0); movdqu %%xmm8,128(%0);"
			 "movdqu %%xmm9,144(%0); movdqu %%xmm10,160(%0); movdqu %%xmm11,176(%0);"
			 "movdqu %%xmm12,192(%0); movdqu %%xmm13,208(%0); movdqu %%xmm14,224(%0);"
			 "movdqu %%xmm15,240(%0)" :: "r"(v) :
			 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
			 "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "ud2";
	struct sigaction sa = {0};
	sa.sa_sigaction = h_entry;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (!strcmp(c, "ud2")) {
		run(0);
		report(0);
	} else if (!strcmp(c, "syscall")) {
		run(1);
		report(1);
	} else if (!strcmp(c, "modify")) {
		modify = 1;
		run(0);
		report(0);
	} else if (!strcmp(c, "xmm")) {
		uint8_t v[16][16], w[16][16];
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 16; j++)
				v[i][j] = w[i][j] = (uint8_t)(i * 16 + j + 1);
		unsigned mx = 0x1f80 | 0x6000, mxo = 0;	/* round toward zero */
		__asm__ volatile("ldmxcsr %0" :: "m"(mx));
		setxmm(v);
		__asm__ volatile("stmxcsr %0" : "=m"(mxo));
		printf("hits=%d xmm same=%d mxcsr kept=%d\n", hits, !memcmp(v, w, sizeof v), (mxo & 0xffc0) == (mx & 0xffc0));
	}
	return 0;
}
