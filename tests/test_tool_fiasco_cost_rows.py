"""Table 2's cost rows (kernel/exp/fiasco.c -> ksync.fiascoreport.table2): a row's dropped
samples are shown in its cell, next to the kept count; a row without any shows none."""
from ksync import fiascoreport as fr

IPC = "IPC one-way (hipc_send to a waiting receiver, switch hint)"


def cost(row, med, sched="-", method="batch", n=200, dropped=0):
    return {"kind": "fiasco_cost", "row": row, "sched": sched, "method": method,
            "scheme": "spl-optim", "cpus": 2, "unit": "tsc_ticks", "n": n, "min": med,
            "median": med, "p99": med, "max": med, "empty_subtracted": True,
            "empty_per_op": 1.5 if method == "batch" else 52.0, "dropped": dropped}


def data(rows):
    rec = {"platform": "hosted", "env": "hosted", "pair": 0, "status": "ok", "reason": None,
           "log": "build/logs/x.log", "cmdline": "mode=bench", "wall_s": 1.0,
           "side": {"env": "hosted", "cpus": 2, "tsc_hz": 2_000_000_000, "cpu_model": "x86"},
           "rows": rows}
    return {"meta": {"commit": "c", "timestamp": "t", "host_cpu_model": "x86", "host_cpus": 2,
                     "qemu_version": "7.2", "set": "default"},
            "plan": {"pairs": 1, "seconds": 2, "section_us": 100, "icount_pairs": 0,
                     "icount_shift": 4, "hosted_pairs": 1, "timeout": 300.0},
            "runs": [rec], "linux": [], "linux_missing": {"rt": None, "std": None, "host": None},
            "other_qemu": []}


def t2_cells(rows):
    d = data(rows)
    t = next(t for t in fr.fiasco_tables(d) if t.title == fr.TITLES["t2"])
    col = next(i for i, h in enumerate(t.headers) if h.endswith("median TSC ticks"))
    return {r[0]: r[col] for r in t.rows}, t


def test_dropped_samples_shown_in_the_rows_cell():
    cells, t = t2_cells([cost("counter, CAS", 6.0),
                         cost(IPC, 260.0, "lockfree", "single", n=393, dropped=7),
                         cost(IPC, 300.0, "locked", "single", n=400, dropped=0)])
    assert cells[f"{IPC} [lockfree]"].endswith("; 7 of 400 samples dropped")
    assert cells[f"{IPC} [lockfree]"].startswith("260")
    assert "dropped" not in cells[f"{IPC} [locked]"] and "dropped" not in cells["counter, CAS"]
    notes = " ".join(t.notes_above)
    assert "empty interval's median subtracted" in notes and "dropped" in notes


def test_a_row_with_every_sample_dropped_still_shows_the_count():
    skipped = {"kind": "fiasco_cost", "row": IPC, "sched": "lockfree", "method": "single",
               "scheme": "spl-optim", "cpus": 2, "n": 0, "dropped": 400,
               "skipped": "every sample dropped"}
    cells, _ = t2_cells([cost("counter, CAS", 6.0), skipped])
    assert cells[f"{IPC} [lockfree]"].endswith("400 of 400 samples dropped")
