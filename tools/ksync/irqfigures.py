"""Small & Manley 1997's figures from irq.json (and Table 5's from prims.json), drawn with
plots.py and written as PNG and SVG next to report.html:

* ``lossmap_figure``: serial characters lost (%) by line rate and sectors per PIO interrupt,
  one panel per scheme, a colour bar, each cell's value written in it (§6.4);
* ``table5_figure``: off-chip / on-chip and on-chip / flag, 1997 vs today (Table 5);
* ``table6_figure``: Table 2 model vs measured time in synchronization per scheme and
  workload, with the paper's Table 6 (§5.4);
* ``latency_figure``: interrupt latency histograms per scheme (Table 7, §6).
"""
from __future__ import annotations

import math
from pathlib import Path

from . import plots
from .base import CYCLES_1997, Figure, T6_1997, fmt_count, fmt_ratio, num
from .irqdata import IrqIndex, WORKLOADS, WORKLOAD_LABELS, loss_grid, overheads, prim_source



def irq_env(ix: IrqIndex, names: list[str]) -> str:
    """"tcg, 2 CPUs; host CPU <model>" for the schemes drawn."""
    env = ix.env_of(names)
    host = ix.data.get("host_cpu_model")
    text = f"environment: {env}" + (f"; host CPU {host}" if host else "")
    if "tcg" in env:
        text += " (tcg: the emulator's costs, not hardware costs)"
    return text



def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 4)
    return math.ceil(n / cols), cols



def _pct_cell(v: float | None) -> str:
    """A loss fraction as the percentage written in its cell."""
    if v is None:
        return "n/a"
    p = 100.0 * v
    if p == 0:
        return "0"
    if p < 0.1:
        return "<0.1"
    return f"{p:.1f}" if p < 10 else f"{p:.0f}"



def lossmap_figure(ix: IrqIndex, out_dir: Path) -> list[Figure]:
    panels = []
    for s in ix.schemes_shown():
        bauds, secs, grid = loss_grid(ix.losses(s))
        if bauds and secs:
            panels.append((s, bauds, secs, grid))
    if not panels:
        return []
    rows, cols = _grid(len(panels))
    with plots.plt.rc_context(plots.RC):
        fig, axes = plots.plt.subplots(rows, cols, figsize=(3.6 * cols + 1.2, 3.1 * rows + 1.3),
                                 squeeze=False, constrained_layout=True)
        cmap = plots.plt.get_cmap("Reds").with_extremes(bad="#d9d9d9")
        image = None
        for n, (ax, (s, bauds, secs, grid)) in enumerate(zip(axes.flat, panels)):
            vals = plots.np.ma.masked_invalid(plots.np.array(
                [[plots.np.nan if v is None else 100.0 * v for v in row] for row in grid], float))
            image = ax.imshow(vals, cmap=cmap, vmin=0, vmax=100, origin="lower",
                              aspect="auto")
            for bi in range(len(bauds)):
                for ki in range(len(secs)):
                    v = grid[bi][ki]
                    text = _pct_cell(v)
                    dark = v is not None and v > 0.55
                    ax.text(ki, bi, text, ha="center", va="center", fontsize=8,
                            color="white" if dark else "black")
            ax.set_title(s)
            ax.set_xticks(range(len(secs)), [fmt_count(k) for k in secs])
            ax.set_yticks(range(len(bauds)), [f"{b / 1000:g}" for b in bauds])
            ax.set_xlabel("sectors per PIO interrupt")
            if n % cols == 0:
                ax.set_ylabel("serial line rate (kbit/s)")
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        fig.colorbar(image, ax=axes, shrink=0.8, label="characters lost (%)")
        names = [p[0] for p in panels]
        plots.suptitle(fig, "Serial characters lost during PIO disk interrupts "
                       "(Small & Manley 1997 §6.4)", irq_env(ix, names))
        cap = ("Serial characters lost (%) by line rate and sectors moved per PIO disk "
               "interrupt, one panel per scheme (each cell: the least loss of its repeated "
               "runs; grey n/a = not measured).")
        return [plots.save_figure(fig, out_dir, "lossmap", cap)]



def _median(row: dict | None) -> float | None:
    return num((row or {}).get("median")) if isinstance(row, dict) else None



def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None



def table5_figure(prims: dict | None, ix: IrqIndex, out_dir: Path) -> list[Figure]:
    c = CYCLES_1997
    series: list[tuple[str, list[float | None]]] = [
        ("1997, Pentium 120 MHz (cycles)", [c["offchip"] / c["onchip"], c["onchip"] / c["flag"]])]
    envs = []
    sides = (prims or {}).get("sides") or {}
    rows = [r for r in (prims or {}).get("rows") or [] if isinstance(r, dict)]

    def prim(side: str, name: str) -> float | None:
        return _median(next((r for r in rows if r.get("side") == side
                             and r.get("name") == name), None))
    if sides.get("kernel"):
        k = sides["kernel"]
        lab = f"kernel, {k.get('env', '?')}, {k.get('cpus', '?')} CPUs (TSC ticks)"
        series.append((lab, [_ratio(prim("kernel", "pic_imr_write_restore"),
                                    prim("kernel", "cli_sti")),
                             _ratio(prim("kernel", "cli_sti"), prim("kernel", "flag_set_clear"))]))
        envs.append(f"kernel {k.get('env', '?')}, {k.get('cpus', '?')} CPUs")
    else:
        src = prim_source(ix)
        if src:
            lab = f"kernel, {ix.env_label(src)} (TSC ticks)"
            series.append((lab, [_ratio(ix.prim_median(src, "offchip"),
                                        ix.prim_median(src, "onchip")),
                                 _ratio(ix.prim_median(src, "onchip"),
                                        ix.prim_median(src, "flag"))]))
            envs.append(f"kernel {ix.env_label(src)}")
    if sides.get("hosted"):
        h = sides["hosted"]
        series.append((f"hosted, {h.get('cpus', '?')} CPUs: pushf;popf / flag (TSC ticks)",
                       [None, _ratio(prim("hosted", "pushf_popf"),
                                     prim("hosted", "flag_set_clear"))]))
        envs.append(f"hosted, {h.get('cpus', '?')} CPUs")
    if len(series) == 1:
        return []
    groups = ["off-chip / on-chip", "on-chip / flag"]
    host = (prims or {}).get("host_cpu_model") or ix.data.get("host_cpu_model")
    env = "environment: " + "; ".join(envs) + (f"; host CPU {host}" if host else "")
    if any("tcg" in e for e in envs):
        env += "\n(tcg: the emulator's costs, not hardware costs)"
    with plots.plt.rc_context(plots.RC):
        fig, ax = plots.plt.subplots(figsize=(8.5, 5.2), layout="constrained")
        width = 0.8 / len(series)
        x = plots.np.arange(len(groups))
        for i, (lab, vals) in enumerate(series):
            pos = x - 0.4 + width * (i + 0.5)
            h = [v if v is not None and v > 0 else plots.np.nan for v in vals]
            ax.bar(pos, h, width, label=lab)
            for p, v in zip(pos, vals):
                ax.text(p, v if v and v > 0 else 1, fmt_ratio(v) + "x" if v else "n/a",
                        ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(x, groups)
        ax.set_ylabel("cost ratio (x, log scale)")
        ax.set_xlabel("ratio of the medians of one set + unset pair")
        ax.axhline(1, color="#888", lw=0.8)
        top = max((v for _, vals in series for v in vals if v), default=10.0)
        ax.set_ylim(top=top * 3)
        fig.legend(fontsize=8, loc="outside lower center", ncols=min(len(series), 3))
        plots.suptitle(fig, "Table 5 ratios: 1997 vs today (Small & Manley 1997 §5.3)", env)
        cap = ("Table 5 ratios, 1997 (Pentium core cycles) next to today's (TSC ticks, same "
               "run, same machine); log scale.")
        return [plots.save_figure(fig, out_dir, "table5-ratios", cap)]



def table6_figure(ix: IrqIndex, out_dir: Path) -> list[Figure]:
    wls = [w for w in ix.workloads()
           if any(ix.load(s, w) for s in ix.schemes_shown())]
    shown = [s for s in ix.schemes_shown() if any(ix.load(s, w) for w in wls)]
    if not wls or not shown:
        return []
    model = overheads(ix, "today")
    rows, cols = _grid(len(wls))
    with plots.plt.rc_context(plots.RC):
        fig, axes = plots.plt.subplots(rows, cols, figsize=(4.2 * cols, 3.8 * rows + 1.0),
                                 squeeze=False, constrained_layout=True, sharey=True)
        x = plots.np.arange(len(shown))
        for n, (ax, w) in enumerate(zip(axes.flat, wls)):
            wi = list(WORKLOADS).index(w) if w in WORKLOADS else None
            meas = [num((ix.load(s, w) or {}).get("sync_pct")) for s in shown]
            mod = [model.get((s, w)) for s in shown]
            old = [T6_1997[s][wi] if wi is not None and s in T6_1997
                   else None for s in shown]
            for off, vals, lab, col in ((-0.27, mod, "model (Table 2, today's inputs)", "#9ecae1"),
                                        (0.0, meas, "measured", "#08519c"),
                                        (0.27, old, "1997 paper (Table 6)", "#fdae6b")):
                ax.bar(x + off, [v if v is not None and v > 0 else plots.np.nan for v in vals], 0.27,
                       label=lab, color=col)
            ax.set_yscale("log")
            ax.set_xticks(x, shown, rotation=40, ha="right")
            ax.set_title(WORKLOAD_LABELS.get(w, w))
            ax.tick_params(labelleft=True)
            if n % cols == 0:
                ax.set_ylabel("time in synchronization (% of each second)")
        for ax in list(axes.flat)[len(wls):]:
            ax.set_visible(False)
        axes.flat[0].legend(fontsize=7)
        plots.suptitle(fig, "Table 6: time in synchronization, model vs measured "
                       "(Small & Manley 1997 §5.4)", irq_env(ix, shown))
        cap = ("Time in synchronization (% of each second, log scale): the Table 2 model with "
               "today's inputs, the measured time, and the paper's Table 6; a missing bar = "
               "no figure, or 0 (a log scale has no 0).")
        return [plots.save_figure(fig, out_dir, "table6-model", cap)]



def _latency_hists(ix: IrqIndex, scheme: str) -> dict[str, tuple[list[float], list[float]]]:
    """source -> (edges in µs, counts) summed over the workloads (the kernel cuts each
    row's log2 bins after its last count; rows whose bins are not a prefix of the others'
    are left out)."""
    hz = ix.tsc_hz(scheme)
    out: dict[str, tuple[list[float], list[float]]] = {}
    if not hz:
        return out
    for r in ix.sources(scheme):
        lat = r.get("latency") if isinstance(r.get("latency"), dict) else {}
        edges, hist = lat.get("hist_edges"), lat.get("hist")
        if not isinstance(edges, list) or not isinstance(hist, list) or \
                len(edges) != len(hist) + 1 or not hist:
            continue
        e = [num(x) for x in edges]
        h = [num(x) for x in hist]
        if any(v is None for v in e + h) or sum(h) <= 0:
            continue
        eu = [v / hz * 1e6 for v in e]
        src = str(r.get("source"))
        if src in out:
            old_e, old_h = out[src]
            long_e, short_e = (old_e, eu) if len(old_e) >= len(eu) else (eu, old_e)
            if long_e[:len(short_e)] == short_e:     # the same bins, one list cut shorter
                n = len(long_e) - 1
                pad = lambda c: list(c) + [0.0] * (n - len(c))  # noqa: E731
                out[src] = (long_e, [a + b for a, b in zip(pad(old_h), pad(h))])
        else:
            out[src] = (eu, h)
    # the kernel's bins are log2 of ticks from 0: drop the empty ones below the first count
    for src, (e, h) in list(out.items()):
        first = next(i for i, c in enumerate(h) if c > 0)
        out[src] = (e[first:], h[first:])
    return out



def latency_figure(ix: IrqIndex, out_dir: Path) -> list[Figure]:
    panels = [(s, _latency_hists(ix, s)) for s in ix.schemes_shown()]
    panels = [(s, h) for s, h in panels if h]
    if not panels:
        return []
    rows, cols = _grid(len(panels))
    with plots.plt.rc_context(plots.RC):
        fig, axes = plots.plt.subplots(rows, cols, figsize=(3.8 * cols, 3.2 * rows + 1.0),
                                 squeeze=False, constrained_layout=True, sharex=True,
                                 sharey=True)
        colours = {"clock": "#1b9e77", "disk": "#d95f02", "serial": "#7570b3", "net": "#e7298a"}
        for n, (ax, (s, hists)) in enumerate(zip(axes.flat, panels)):
            logx = False
            for src, (edges, counts) in sorted(hists.items()):
                e = list(edges)
                pos = [v for v in e if v > 0]
                if pos and e[-1] / min(pos) > 50:
                    logx = True
                    if e[0] <= 0:
                        e[0] = min(pos) / 2
                ax.stairs(counts, e, label=src, color=colours.get(src), lw=1.4)
            if logx:
                ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(s)
            ax.tick_params(labelbottom=True, labelleft=True)
            ax.set_xlabel("latency, raised to handler start (µs)")
            if n % cols == 0:
                ax.set_ylabel("interrupts (count)")
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        plots.suptitle(fig, "Interrupt latency per scheme (Small & Manley 1997 Table 7, §6)",
                  irq_env(ix, [p[0] for p in panels]))
        cap = ("Interrupt latency histograms per scheme and source, summed over the workloads "
               "(counts on a log scale); sources without an arrival time (disk, net) have no "
               "latency.")
        return [plots.save_figure(fig, out_dir, "table7-latency", cap)]
