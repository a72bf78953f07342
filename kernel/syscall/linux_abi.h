/*
 * linux_abi.h - the Linux x86-64 user ABI in one place: system-call numbers, errno values,
 * and the flag values and structure layouts that cross the user/kernel boundary.
 *
 * ksync's user space speaks Linux's ABI so that the same binary runs on ksync and on Linux
 * (docs/design.md, "User space"). Every value here is Linux's own; names carry an LX_
 * prefix so that they never collide with the host's headers in the hosted port, where a
 * test compares each value with <asm/unistd_64.h>, <errno.h> and <fcntl.h> (test by
 * difference: the host is Linux). Only what the kernel implements or refuses by name is
 * listed; an absent number still answers -LX_ENOSYS through the system-call table.
 */
#ifndef KSYNC_LINUX_ABI_H
#define KSYNC_LINUX_ABI_H

#include <stdint.h>

/* ---- system-call numbers (arch/x86/entry/syscalls/syscall_64.tbl) ------------------ */
#define LX_SYS_read 0
#define LX_SYS_write 1
#define LX_SYS_open 2
#define LX_SYS_close 3
#define LX_SYS_stat 4
#define LX_SYS_fstat 5
#define LX_SYS_lstat 6
#define LX_SYS_poll 7
#define LX_SYS_lseek 8
#define LX_SYS_mmap 9
#define LX_SYS_mprotect 10
#define LX_SYS_munmap 11
#define LX_SYS_brk 12
#define LX_SYS_rt_sigaction 13
#define LX_SYS_rt_sigprocmask 14
#define LX_SYS_rt_sigreturn 15
#define LX_SYS_ioctl 16
#define LX_SYS_pread64 17
#define LX_SYS_pwrite64 18
#define LX_SYS_readv 19
#define LX_SYS_writev 20
#define LX_SYS_access 21
#define LX_SYS_pipe 22
#define LX_SYS_sched_yield 24
#define LX_SYS_madvise 28
#define LX_SYS_dup 32
#define LX_SYS_dup2 33
#define LX_SYS_pause 34
#define LX_SYS_nanosleep 35
#define LX_SYS_alarm 37
#define LX_SYS_getpid 39
#define LX_SYS_sendfile 40
#define LX_SYS_socketpair 53
#define LX_SYS_clone 56
#define LX_SYS_fork 57
#define LX_SYS_vfork 58
#define LX_SYS_execve 59
#define LX_SYS_exit 60
#define LX_SYS_wait4 61
#define LX_SYS_kill 62
#define LX_SYS_uname 63
#define LX_SYS_fcntl 72
#define LX_SYS_fsync 74
#define LX_SYS_ftruncate 77
#define LX_SYS_getcwd 79
#define LX_SYS_chdir 80
#define LX_SYS_fchdir 81
#define LX_SYS_rename 82
#define LX_SYS_mkdir 83
#define LX_SYS_rmdir 84
#define LX_SYS_link 86
#define LX_SYS_unlink 87
#define LX_SYS_symlink 88
#define LX_SYS_readlink 89
#define LX_SYS_chmod 90
#define LX_SYS_fchmod 91
#define LX_SYS_umask 95
#define LX_SYS_gettimeofday 96
#define LX_SYS_getrlimit 97
#define LX_SYS_sysinfo 99
#define LX_SYS_getuid 102
#define LX_SYS_getgid 104
#define LX_SYS_geteuid 107
#define LX_SYS_getegid 108
#define LX_SYS_setpgid 109
#define LX_SYS_getppid 110
#define LX_SYS_getpgrp 111
#define LX_SYS_setsid 112
#define LX_SYS_getpgid 121
#define LX_SYS_getsid 124
#define LX_SYS_rt_sigpending 127
#define LX_SYS_rt_sigtimedwait 128
#define LX_SYS_rt_sigsuspend 130
#define LX_SYS_sigaltstack 131
#define LX_SYS_sched_setparam 142
#define LX_SYS_sched_getparam 143
#define LX_SYS_sched_setscheduler 144
#define LX_SYS_sched_getscheduler 145
#define LX_SYS_sched_get_priority_max 146
#define LX_SYS_sched_get_priority_min 147
#define LX_SYS_sched_rr_get_interval 148
#define LX_SYS_mlock 149
#define LX_SYS_munlock 150
#define LX_SYS_mlockall 151
#define LX_SYS_munlockall 152
#define LX_SYS_prctl 157
#define LX_SYS_arch_prctl 158
#define LX_SYS_setrlimit 160
#define LX_SYS_gettid 186
#define LX_SYS_tkill 200
#define LX_SYS_time 201
#define LX_SYS_futex 202
#define LX_SYS_sched_setaffinity 203
#define LX_SYS_sched_getaffinity 204
#define LX_SYS_getdents64 217
#define LX_SYS_set_tid_address 218
#define LX_SYS_clock_gettime 228
#define LX_SYS_clock_getres 229
#define LX_SYS_clock_nanosleep 230
#define LX_SYS_exit_group 231
#define LX_SYS_tgkill 234
#define LX_SYS_openat 257
#define LX_SYS_mkdirat 258
#define LX_SYS_newfstatat 262
#define LX_SYS_unlinkat 263
#define LX_SYS_renameat 264
#define LX_SYS_linkat 265
#define LX_SYS_symlinkat 266
#define LX_SYS_readlinkat 267
#define LX_SYS_fchmodat 268
#define LX_SYS_faccessat 269
#define LX_SYS_ppoll 271
#define LX_SYS_set_robust_list 273
#define LX_SYS_get_robust_list 274
#define LX_SYS_utimensat 280
#define LX_SYS_dup3 292
#define LX_SYS_pipe2 293
#define LX_SYS_prlimit64 302
#define LX_SYS_getcpu 309
#define LX_SYS_sched_setattr 314
#define LX_SYS_sched_getattr 315
#define LX_SYS_getrandom 318
#define LX_SYS_mlock2 325
#define LX_SYS_rseq 334
#define LX_SYS_clone3 435
#define LX_SYS_faccessat2 439
#define LX_NR_SYSCALLS 512	/* the table's size: every number below it has an entry */

/* ---- errno (include/uapi/asm-generic/errno-base.h, errno.h); returned negated ------ */
#define LX_EPERM 1
#define LX_ENOENT 2
#define LX_ESRCH 3
#define LX_EINTR 4
#define LX_EIO 5
#define LX_ENXIO 6
#define LX_E2BIG 7
#define LX_ENOEXEC 8
#define LX_EBADF 9
#define LX_ECHILD 10
#define LX_EAGAIN 11
#define LX_ENOMEM 12
#define LX_EACCES 13
#define LX_EFAULT 14
#define LX_EBUSY 16
#define LX_EEXIST 17
#define LX_EXDEV 18
#define LX_ENODEV 19
#define LX_ENOTDIR 20
#define LX_EISDIR 21
#define LX_EINVAL 22
#define LX_ENFILE 23
#define LX_EMFILE 24
#define LX_ENOTTY 25
#define LX_EFBIG 27
#define LX_ENOSPC 28
#define LX_ESPIPE 29
#define LX_EROFS 30
#define LX_EMLINK 31
#define LX_EPIPE 32
#define LX_EDOM 33
#define LX_ERANGE 34
#define LX_EDEADLK 35
#define LX_ENAMETOOLONG 36
#define LX_ENOSYS 38
#define LX_ENOTEMPTY 39
#define LX_ELOOP 40
#define LX_EOVERFLOW 75
#define LX_ELIBBAD 80
#define LX_ENOTSOCK 88
#define LX_EPROTONOSUPPORT 93
#define LX_EOPNOTSUPP 95
#define LX_EAFNOSUPPORT 97
#define LX_ETIMEDOUT 110
#define LX_ERESTARTSYS 512	/* kernel-internal: restart after the signal handler */

/* ---- scheduling policies (include/uapi/linux/sched.h), mlockall, sockets ------------ */
#define LX_SCHED_OTHER 0
#define LX_SCHED_FIFO 1
#define LX_SCHED_RR 2
#define LX_SCHED_BATCH 3
#define LX_SCHED_IDLE 5
#define LX_SCHED_DEADLINE 6
#define LX_SCHED_RESET_ON_FORK 0x40000000
#define LX_MCL_CURRENT 1
#define LX_MCL_FUTURE 2
#define LX_MCL_ONFAULT 4
#define LX_AF_UNIX 1
#define LX_SOCK_STREAM 1
#define LX_SOCK_NONBLOCK 00004000
#define LX_SOCK_CLOEXEC 02000000

/* ---- open/fcntl (include/uapi/asm-generic/fcntl.h) --------------------------------- */
#define LX_O_ACCMODE 00000003
#define LX_O_RDONLY 00000000
#define LX_O_WRONLY 00000001
#define LX_O_RDWR 00000002
#define LX_O_CREAT 00000100
#define LX_O_EXCL 00000200
#define LX_O_NOCTTY 00000400
#define LX_O_TRUNC 00001000
#define LX_O_APPEND 00002000
#define LX_O_NONBLOCK 00004000
#define LX_O_DIRECTORY 00200000
#define LX_O_NOFOLLOW 00400000
#define LX_O_CLOEXEC 02000000
#define LX_O_PATH 010000000
#define LX_O_LARGEFILE 00100000

#define LX_AT_FDCWD (-100)
#define LX_AT_SYMLINK_NOFOLLOW 0x100
#define LX_AT_REMOVEDIR 0x200
#define LX_AT_SYMLINK_FOLLOW 0x400
#define LX_AT_EMPTY_PATH 0x1000
#define LX_AT_EACCESS 0x200	/* faccessat: the same bit as AT_REMOVEDIR */
#define LX_AT_NO_AUTOMOUNT 0x800

#define LX_F_DUPFD 0
#define LX_F_GETFD 1
#define LX_F_SETFD 2
#define LX_F_GETFL 3
#define LX_F_SETFL 4
#define LX_F_DUPFD_CLOEXEC 1030
#define LX_FD_CLOEXEC 1

#define LX_SEEK_SET 0
#define LX_SEEK_CUR 1
#define LX_SEEK_END 2
#define LX_SEEK_DATA 3
#define LX_SEEK_HOLE 4

/* ---- file modes (include/uapi/linux/stat.h) ---------------------------------------- */
#define LX_S_IFMT 0170000
#define LX_S_IFSOCK 0140000
#define LX_S_IFLNK 0120000
#define LX_S_IFREG 0100000
#define LX_S_IFBLK 0060000
#define LX_S_IFDIR 0040000
#define LX_S_IFCHR 0020000
#define LX_S_IFIFO 0010000

/* d_type of getdents64 */
#define LX_DT_UNKNOWN 0
#define LX_DT_FIFO 1
#define LX_DT_CHR 2
#define LX_DT_DIR 4
#define LX_DT_REG 8
#define LX_DT_LNK 10

/* ---- structures (x86-64 layouts) ---------------------------------------------------- */
struct lx_timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
};

struct lx_timeval {
	int64_t tv_sec;
	int64_t tv_usec;
};

/* struct stat of x86-64 (arch/x86/include/uapi/asm/stat.h), 144 bytes */
struct lx_stat {
	uint64_t st_dev;
	uint64_t st_ino;
	uint64_t st_nlink;
	uint32_t st_mode;
	uint32_t st_uid;
	uint32_t st_gid;
	uint32_t __pad0;
	uint64_t st_rdev;
	int64_t st_size;
	int64_t st_blksize;
	int64_t st_blocks;
	struct lx_timespec st_atim;
	struct lx_timespec st_mtim;
	struct lx_timespec st_ctim;
	int64_t __unused[3];
};

/* one record of getdents64; d_name is NUL-terminated, d_reclen rounded up to 8 */
struct lx_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	uint16_t d_reclen;
	uint8_t d_type;
	char d_name[];
};

struct lx_iovec {
	uint64_t iov_base;	/* a user address */
	uint64_t iov_len;
};

struct lx_utsname {
	char sysname[65];
	char nodename[65];
	char release[65];
	char version[65];
	char machine[65];
	char domainname[65];
};

struct lx_rlimit {
	uint64_t rlim_cur;
	uint64_t rlim_max;
};

struct lx_pollfd {
	int32_t fd;
	int16_t events;
	int16_t revents;
};
#define LX_POLLIN 0x001
#define LX_POLLPRI 0x002
#define LX_POLLOUT 0x004
#define LX_POLLERR 0x008
#define LX_POLLHUP 0x010
#define LX_POLLNVAL 0x020

/* ---- terminal (include/uapi/asm-generic/termbits.h, ioctls.h) ----------------------- */
#define LX_TCGETS 0x5401
#define LX_TCSETS 0x5402
#define LX_TCSETSW 0x5403
#define LX_TCSETSF 0x5404
#define LX_TIOCGPGRP 0x540F
#define LX_TIOCSPGRP 0x5410
#define LX_TIOCGWINSZ 0x5413
#define LX_TIOCSWINSZ 0x5414
#define LX_FIONREAD 0x541B
#define LX_FIONBIO 0x5421

struct lx_termios {	/* the kernel's struct termios of TCGETS (36 bytes), not libc's */
	uint32_t c_iflag;
	uint32_t c_oflag;
	uint32_t c_cflag;
	uint32_t c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
};
#define LX_ISIG 0000001
#define LX_ICANON 0000002
#define LX_ECHO 0000010
#define LX_ECHOE 0000020
#define LX_ECHOK 0000040
#define LX_ECHONL 0000100
#define LX_NOFLSH 0000200
#define LX_ICRNL 0000400
#define LX_OPOST 0000001
#define LX_ONLCR 0000004
#define LX_VINTR 0
#define LX_VQUIT 1
#define LX_VERASE 2
#define LX_VKILL 3
#define LX_VEOF 4
#define LX_VMIN 6
#define LX_VSUSP 10

struct lx_winsize {
	uint16_t ws_row;
	uint16_t ws_col;
	uint16_t ws_xpixel;
	uint16_t ws_ypixel;
};

/* ---- signals (arch/x86/include/uapi/asm/signal.h) ----------------------------------- */
#define LX_SIGHUP 1
#define LX_SIGINT 2
#define LX_SIGQUIT 3
#define LX_SIGILL 4
#define LX_SIGTRAP 5
#define LX_SIGABRT 6
#define LX_SIGBUS 7
#define LX_SIGFPE 8
#define LX_SIGKILL 9
#define LX_SIGUSR1 10
#define LX_SIGSEGV 11
#define LX_SIGUSR2 12
#define LX_SIGPIPE 13
#define LX_SIGALRM 14
#define LX_SIGTERM 15
#define LX_SIGCHLD 17
#define LX_SIGCONT 18
#define LX_SIGSTOP 19
#define LX_SIGTSTP 20
#define LX_SIGTTIN 21
#define LX_SIGTTOU 22
#define LX_NSIG 64

#define LX_SA_SIGINFO 0x00000004
#define LX_SA_RESTORER 0x04000000
#define LX_SA_ONSTACK 0x08000000
#define LX_SA_RESTART 0x10000000
#define LX_SA_NODEFER 0x40000000
#define LX_SA_RESETHAND 0x80000000
#define LX_SIG_DFL 0
#define LX_SIG_IGN 1
#define LX_SIG_BLOCK 0
#define LX_SIG_UNBLOCK 1
#define LX_SIG_SETMASK 2
#define LX_SA_NOCLDSTOP 0x00000001
#define LX_SA_NOCLDWAIT 0x00000002
#define LX_SS_ONSTACK 1
#define LX_SS_DISABLE 2
#define LX_MINSIGSTKSZ 2048	/* the kernel's (glibc's may be a sysconf call) */
/* si_code values (include/uapi/asm-generic/siginfo.h) */
#define LX_SI_USER 0
#define LX_SI_KERNEL 0x80
#define LX_SI_TKILL (-6)
#define LX_CLD_EXITED 1
#define LX_CLD_KILLED 2
#define LX_CLD_DUMPED 3
#define LX_CLD_STOPPED 5
#define LX_CLD_CONTINUED 6
#define LX_SEGV_MAPERR 1
#define LX_SEGV_ACCERR 2
#define LX_ILL_ILLOPN 2
#define LX_FPE_INTDIV 1
#define LX_BUS_ADRALN 1
#define LX_BUS_ADRERR 2
#define LX_TRAP_BRKPT 1
/* kernel-internal restart codes (include/linux/errno.h), never seen by user space */
#define LX_ERESTARTNOINTR 513
#define LX_ERESTARTNOHAND 514
#define LX_ERESTART_RESTARTBLOCK 516

/* siginfo_t: 128 bytes; the union at offset 16 (kill: pid, uid; SIGCHLD: pid, uid,
 * status, utime, stime; faults: addr) */
struct lx_siginfo {
	int32_t si_signo;
	int32_t si_errno;
	int32_t si_code;
	int32_t _pad0;
	union {
		struct {
			int32_t pid;
			uint32_t uid;
			int32_t status;
			int32_t _pad1;
			int64_t utime, stime;
		} k;			/* si_pid, si_uid, si_status, si_utime, si_stime */
		uint64_t addr;		/* si_addr */
		uint8_t _bytes[112];
	} u;
};

/* stack_t (sigaltstack, uc_stack) */
struct lx_stack {
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t _pad;
	uint64_t ss_size;
};

/* The fxsave image (asm/sigcontext.h struct _fpstate_64): 512 bytes, 64-byte aligned in
 * a signal frame; sw_reserved (bytes 464..511) carries the xstate magic when the frame
 * is an xsave frame - ksync writes fxsave frames, whose sw_reserved is zero (Linux reads
 * magic1 != FP_XSTATE_MAGIC1 as "plain fxsave"). */
struct lx_fpstate {
	uint16_t cwd, swd, twd, fop;
	uint64_t rip, rdp;
	uint32_t mxcsr, mxcsr_mask;
	uint32_t st_space[32];
	uint32_t xmm_space[64];
	uint32_t reserved2[12];
	uint32_t sw_reserved[12];
};

/* asm/sigcontext.h struct sigcontext (x86-64): 256 bytes */
struct lx_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;	/* user pointer to a struct lx_fpstate, 0: none */
	uint64_t reserved1[8];
};

/* the kernel's struct ucontext (asm/ucontext.h): uc_sigmask is the kernel's 8-byte set */
#define LX_UC_SIGCONTEXT_SS 0x2
#define LX_UC_STRICT_RESTORE_SS 0x4
struct lx_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct lx_stack uc_stack;
	struct lx_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

/* arch/x86/include/asm/sigframe.h struct rt_sigframe (64-bit): at the handler's rsp */
struct lx_rt_sigframe {
	uint64_t pretcode;	/* sa_restorer: the handler's return address */
	struct lx_ucontext uc;
	struct lx_siginfo info;
};

struct lx_sigaction {	/* the kernel's struct sigaction of rt_sigaction */
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

/* wait4 options and status encoding */
#define LX_WNOHANG 1
#define LX_WUNTRACED 2
#define LX_WCONTINUED 8
#define LX_W_EXITCODE(ret, sig) (((ret) << 8) | (sig))

/* ---- memory (include/uapi/asm-generic/mman-common.h) -------------------------------- */
#define LX_PROT_READ 0x1
#define LX_PROT_WRITE 0x2
#define LX_PROT_EXEC 0x4
#define LX_MAP_SHARED 0x01
#define LX_MAP_PRIVATE 0x02
#define LX_MAP_FIXED 0x10
#define LX_MAP_ANONYMOUS 0x20
#define LX_MAP_FIXED_NOREPLACE 0x100000
#define LX_MAP_FAILED (~0ull)

/* ---- arch_prctl, clocks, auxiliary vector ------------------------------------------- */
#define LX_ARCH_SET_GS 0x1001
#define LX_ARCH_SET_FS 0x1002
#define LX_ARCH_GET_FS 0x1003
#define LX_ARCH_GET_GS 0x1004
/* prctl options (sys/prctl.h) */
#define LX_PR_SET_NAME 15
#define LX_PR_GET_NAME 16

#define LX_CLOCK_REALTIME 0
#define LX_CLOCK_MONOTONIC 1
#define LX_CLOCK_PROCESS_CPUTIME_ID 2
#define LX_CLOCK_THREAD_CPUTIME_ID 3
#define LX_CLOCK_MONOTONIC_RAW 4
#define LX_CLOCK_REALTIME_COARSE 5
#define LX_CLOCK_MONOTONIC_COARSE 6
#define LX_CLOCK_BOOTTIME 7
#define LX_TIMER_ABSTIME 1

#define LX_AT_NULL 0
#define LX_AT_PHDR 3
#define LX_AT_PHENT 4
#define LX_AT_PHNUM 5
#define LX_AT_PAGESZ 6
#define LX_AT_BASE 7
#define LX_AT_FLAGS 8
#define LX_AT_ENTRY 9
#define LX_AT_UID 11
#define LX_AT_EUID 12
#define LX_AT_GID 13
#define LX_AT_EGID 14
#define LX_AT_PLATFORM 15
#define LX_AT_HWCAP 16
#define LX_AT_CLKTCK 17
#define LX_AT_SECURE 23
#define LX_AT_RANDOM 25
#define LX_AT_EXECFN 31

#define LX_RLIMIT_STACK 3
#define LX_RLIMIT_CORE 4
#define LX_RLIMIT_NPROC 6
#define LX_RLIMIT_NOFILE 7
#define LX_RLIM_INFINITY (~0ull)

#define LX_PATH_MAX 4096
#define LX_PIPE_BUF 4096

#endif /* KSYNC_LINUX_ABI_H */
