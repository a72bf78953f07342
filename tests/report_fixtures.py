"""A small synthetic results run (prims.json + irq.json) for the report tests: every table,
finding and figure of the report has data, so the renderers and the browser see the whole
page. The figures are made up: they test rendering, not the kernel."""
from ksync import irqdata
from ksync import irqreport, report, schemes

HZ = 2_000_000_000
SHORT_CPU = "AMD EPYC"
LONG_CPU = ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz with an unusually long marketing "
            "name that keeps going")


def prim(side, env, name, median, runs=None):
    r = {"kind": "prim", "name": name, "detail": "", "unit": "tsc_ticks", "batches": 200,
         "ops_per_batch": 256, "min": median * 0.9, "median": median, "p99": median * 1.3,
         "max": median * 3, "empty": 1.0, "side": side, "env": env}
    if runs:
        r["run_medians"] = runs
    return r


def prims_data(cpu=SHORT_CPU, kernel_env="tcg"):
    kernel = [prim("kernel", kernel_env, n, m) for n, m in (
        ("cli_sti", 40.0), ("pushf_cli_popf", 55.0), ("pic_imr_write_restore", 580.0),
        ("flag_set_clear", 8.0), ("lock_cmpxchg", 20.0), ("ref_2x_lock_cmpxchg", 300.0),
        ("mp_stack_push_pop_nosync", 200.0), ("mp_stack_push_pop_lf", 450.0),
        ("mp_stack_push_pop_mlock", 500.0), ("mp_astack_push_pop_lf", 700.0))]
    hosted = [prim("hosted", "hosted", n, m, runs) for n, m, runs in (
        ("flag_set_clear", 1.0, [1.0, 1.1, 0.9]), ("pushf_popf", 12.5, [12.5, 12.0, 13.0]),
        ("mfence", 33.0, None), ("ref_2x_lock_cmpxchg", 38.0, [38.0, 37.5, 39.0]),
        ("mp_stack_push_pop_nosync", 5.0, [5.0, 5.2, 4.9]),
        ("mp_stack_push_pop_lf", 40.0, [40.0, 41.0, 39.5]),
        ("mp_counter_inc_nosync", 1.5, [1.5, 1.4, 1.6]),
        ("mp_counter_inc_lf", 20.0, [20.0, 21.0, 19.0]),
        ("mp_fifo_enq_deq_nosync", 3.0, [3.0, 3.1, 2.9]),
        ("mp_fifo_spsc_enq_deq_lf", 4.0, [4.0, 4.1, 3.9]),
        ("mp_stack_push_pop_spin", 45.0, [45.0, 46.0, 44.5]),
        ("mp_stack_push_pop_mutex", 60.0, [60.0, 61.0, 59.0]),
        ("mp_counter_inc_spin", 10.0, [10.0, 10.5, 9.5]),
        ("mp_fifo_enq_deq_spin", 9.0, [9.0, 9.2, 8.8]),
        ("mp_astack_push_pop_nosync", 2.0, [2.0, 2.1, 1.9]),
        ("mp_astack_push_pop_lf", 40.0, [40.0, 42.0, 39.0]),
        ("mp_astack_push_pop_spin", 10.0, [10.0, 10.2, 9.9]),
        ("mp_stack_push_pop_lf_2t", 160.0, [160.0, 150.0, 170.0]),
        ("mp_stack_push_pop_spin_2t", 300.0, [300.0, 200.0, 900.0]))]
    meta = {"timestamp": "2026-01-01T00:00:00Z", "commit": "abc123def456",
            "host_cpu_model": cpu, "host_cpus": 2, "qemu_version": "7.2.22"}
    return report.make_prims_data(
        kernel, hosted,
        {"env": kernel_env, "cpus": 2, "cpu_model": cpu, "tsc_hz": HZ, "tsc_source": "pit"},
        {"env": "hosted", "cpus": 2, "cpu_model": cpu, "tsc_hz": HZ,
         "tsc_source": "cpu model name (nominal)"}, meta)


PRIM_TICKS = {"offchip": 1000.0, "onchip": 80.0, "flag": 10.0, "cr8": 150.0}
CRIT = {"spl-pessim": 1020.0, "spl-optim": 12.0, "cli-pessim": 90.0, "cli-optim": 14.0,
        "cli-spl-pessim": 95.0, "tpr-pessim": 160.0, "tpr-optim": 13.0}
SYNC = {"spl-pessim": 2.0, "spl-optim": 0.1, "cli-pessim": 0.3, "cli-optim": 0.08,
        "cli-spl-pessim": 0.35, "tpr-pessim": 0.5, "tpr-optim": 0.09}
LOAD = {"andrew-local": (36000.0, 20.0), "andrew-nfs": (26000.0, 50.0),
        "webstone": (34000.0, 300.0), "serial-115.2": (47000.0, 140.0)}
EDGES = [0, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000]


def _rows(s):
    rows = [{"kind": "irq_scheme", "scheme": s, "cpus": 2}]
    for name, t in list(PRIM_TICKS.items()) + [("crit_enter_leave", CRIT[s]),
                                                ("splraise_splx", 1050.0)]:
        rows.append({"kind": "irq_prim", "scheme": s, "name": name, "unit": "tsc_ticks",
                     "min": t * 0.9, "median": t, "p99": t * 1.2, "max": t * 2})
    for k, (w, (e, i)) in enumerate(LOAD.items()):
        rows.append({"kind": "irq_load", "scheme": s, "workload": w, "seconds": 1.0,
                     "window_s": 0.1,
                     "crit": {"n": int(e), "per_s_mean": e, "per_s_std": e * 0.3,
                              "per_s_max": e * 2, "dur_mean": 6000.0},
                     "interrupted": int(i), "interrupted_per_s": i,
                     "interrupted_pct": 100 * i / e, "sync_pct": SYNC[s] * (1 + 0.1 * k),
                     "check_errors": 0})
        for src, lvl, n in (("clock", "clock", 100), ("disk", "bio", 300),
                            ("serial", "tty", 1400)):
            hist = [0, n // 2, n // 4, n // 8, n // 16, 3, 2, 1, 0] if src != "disk" else []
            rows.append({"kind": "irq_source", "scheme": s, "workload": w, "source": src,
                         "level": lvl, "irqs": n, "per_s": float(n),
                         "handler": {"min": 2000.0, "mean": 5000.0, "median": 4000.0,
                                     "max": 40000.0, "std": 1000.0},
                         "latency": ({"n": n, "mean": 9000.0, "median": 5000.0,
                                      "max": 300000.0, "hist_edges": EDGES, "hist": hist}
                                     if hist else {"n": 0})})
    lossy = s in ("cli-pessim", "cli-optim")
    for baud in (38400, 115200, 460800, 921600):
        for k in (0, 1, 4, 16):
            lost = int(1000 * k / 16 * baud / 921600) if lossy else 0
            rows.append({"kind": "irq_loss", "scheme": s, "baud": baud, "trigger": 8,
                         "pio_sectors": k, "pio_handler_mean": 20000.0 * (k + 1),
                         "chars": 1000 - lost, "lost": lost, "packets": 500, "dropped": 0,
                         "seconds": 1.0, "repeats": 3})
    return rows


def irq_data(cpu=SHORT_CPU, only=schemes.SCHEMES):
    recs = [{"scheme": s, "status": "ok", "reason": None, "note": None,
             "log": f"build/logs/run-{s}.log", "env": "tcg", "cpus": 2, "tsc_hz": HZ,
             "tsc_source": "pit", "elapsed": 30.0, "boot": {"kind": "boot", "tsc_hz": HZ},
             "rows": _rows(s)} for s in only]
    meta = {"timestamp": "2026-01-01T00:00:00Z", "commit": "abc123def456",
            "host_cpu_model": cpu, "host_cpus": 2, "qemu_version": "7.2.22"}
    return irqdata.make_irq_data(recs, meta, {"smp": 2, "irq_seconds": 1.0,
                                                "irq_quick": False, "disk": True})
