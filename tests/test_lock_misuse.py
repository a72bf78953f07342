"""Issues 11 and 12, bad input: misuse of master locks, monitors, condition variables and
helping locks panics
naming the lock class, the holder and the call sites - on the hosted port (every case)
and under QEMU (one case: the same kernel code through the x86 port's panic path).
The kernel's crash= triggers are in kernel/core/main.c (crash_lock)."""
import pytest

from test_hosted_kernel import _exe, _raw, hk_bins, host_env  # noqa: F401
from test_kernel import built, ksync  # noqa: F401

SITE = "kernel/core/main.c:"
CASES = {
    # the master locks name the thread through the scheduler's namer (panic_thread_on):
    # before sched_start there is none, after it the boot context is thread 'boot'
    "mlock-release": ["master lock of class 'crash_master'", "nobody holds it", "released at " + SITE,
                      "by cpu 0 thread '(no thread)'"],
    "mlock-recursion": ["recursion", "class 'crash_master'", "already holds", "acquired at " + SITE,
                        "cpu 0 thread '(no thread)' asks at " + SITE],
    "mlock-sleep": ["sched_sleep", "would sleep holding master lock of class 'crash_master'",
                    "acquired at " + SITE, "cpu 0 thread 'boot' would sleep"],
    "mon-release": ["mon_unlock at " + SITE, "does not hold monitor of class 'crash_monitor'",
                    "owner: 'holder'"],
    "mon-recursion": ["mon_lock: recursion", "monitor of class 'crash_monitor'", "holds since " + SITE],
    "cv-nolock": ["cv_wait", "without its monitor", "class 'crash_monitor'"],
    # issue 12: helping locks
    "hlock-release": ["releases lock 'crash_helping'", "owned by 'holder'"],
    "hlock-sleep": ["sleeps inside a helping-lock critical section", "lock 'crash_helping'",
                    "thread 'boot'"],
    "hlock-exit": ["thread 'exiter' exits holding 1 helping lock", "'crash_helping'"],
}


# panic's own line naming the thread it ran in (core/panic.c, through the same namer)
IN_THREAD = {"mlock-release": "in thread 'none (scheduler not started)'",
             "mlock-sleep": "in thread 'boot'", "hlock-sleep": "in thread 'boot'",
             "mon-recursion": "in thread 'boot'"}


@pytest.mark.parametrize("how", sorted(CASES))
def test_lock_misuse_panics_hosted(hk_bins, host_env, tmp_path, how):
    r = _raw(_exe("plain"), ["-smp", "2", "-append", f"crash={how}"], tmp_path)
    out = r.stdout + r.stderr
    # a kernel panic (not a host signal): the runtime's failure exit
    assert r.returncode == 1 and "kernel panic" in out, f"--- exit {r.returncode}\n{out}"
    panic = [l for l in out.splitlines() if l.startswith("PANIC")]
    assert panic, out
    for needle in CASES[how]:
        assert needle in panic[0], f"{needle!r} not in {panic[0]!r}"
    if how in IN_THREAD:
        assert IN_THREAD[how] in out, out


@pytest.mark.parametrize("how", ["mon-recursion", "mlock-sleep"])
def test_lock_misuse_panics_qemu(built, how):
    rc, out = ksync("boot", "--mode", "test", "--append", f"crash={how}", "--smp", "2",
                    "--no-build", "--timeout", "120")
    assert rc != 0
    assert "kernel panic" in out
    for needle in CASES[how] + [IN_THREAD[how]]:
        assert needle in out, out
