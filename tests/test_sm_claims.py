"""ksync.smclaims: Small & Manley's observations (short sections, few interrupted, sync cost
over the body, spl-pessim's share, the order of magnitude, cli-spl-pessim = cli-pessim) on
synthetic irq.json / hosted.json data: every verdict each finding can give. The figures are
made up: they test the arithmetic and the verdict logic, not the kernel."""
import copy

import pytest

import report_fixtures as fx
from ksync import hosteddata
from ksync import document
from ksync import findings, hostedreport, irqreport, report, smclaims

MODEL = smclaims.MODEL_INPUT
NA = "not measurable here"


def claims(irq=None, hosted=None):
    return smclaims.sm_claim_findings(irqreport.IrqIndex(irq), hosted)


def by_claim(fs, text):
    hits = [f for f in fs if text in f.claim]
    assert len(hits) == 1, [f.claim for f in fs]
    return hits[0]


def set_crit(d, scheme, lo, mid, hi):
    """The scheme's crit_enter_leave row in an irq.json-shaped dict: min, median, p99."""
    for rec in d["schemes"]:
        if rec["scheme"] != scheme:
            continue
        for r in rec["rows"]:
            if r.get("kind") == "irq_prim" and r.get("name") == "crit_enter_leave":
                r.update(min=lo, median=mid, p99=hi)
    return d


def irq(env="tcg", only=None):
    d = copy.deepcopy(fx.irq_data(only=only) if only else fx.irq_data())
    for rec in d["schemes"]:
        rec["env"] = env
    return d


def hosted(schemes=("spl-pessim", "spl-optim", "cli-pessim", "cli-optim"), cpus=2,
           host_cores=4):
    """A hosted.json whose timing runs carry the fixture's irq rows (made up)."""
    runs = []
    base = fx.irq_data()
    for s in schemes:
        rec = hosteddata.run_record(s, cpus, host_cores=host_cores)
        src = next(r for r in base["schemes"] if r["scheme"] == s)
        rec.update(status="ok", boot={"kind": "boot", "tsc_hz": fx.HZ}, tsc_hz=fx.HZ,
                   cpu_model="Some CPU", rows=copy.deepcopy(src["rows"]))
        for r in rec["rows"]:
            r["env"] = "hosted"
        runs.append(rec)
    return hosteddata.make_hosted_data(runs, [], {"commit": "abc", "host_cpu_model": "X"})


def set_hosted_crit(h, scheme, lo, mid, hi):
    for rec in h["runs"]:
        if rec["scheme"] == scheme:
            set_crit({"schemes": [rec]}, scheme, lo, mid, hi)
    return h


# ---------------------------------------------------------------------------------------
# (a)-(d): inputs of the model


def test_model_input_claims_show_todays_figures_but_no_verdict():
    d = irq()
    for rec in d["schemes"]:
        for r in rec["rows"]:
            if r["kind"] == "irq_load":
                r["crit"]["dur_median"] = 4000.0
    fs = claims(d)
    a = by_claim(fs, "very short")
    assert a.verdict == MODEL and a.env.startswith("tcg")
    assert "mean section 3 µs" in a.today and "cli-pessim" in a.today   # 6000 ticks, 2 GHz
    assert "median 2 µs" in a.today
    assert "0.6-4.6 µs" in a.then and "Input of the model" in a.note
    b = by_claim(fs, "ever interrupted")
    assert b.verdict == MODEL and "spl-optim" in b.today
    assert "0.05-0.9%" in b.then
    # interrupts per second x mean length: (100 + 300 + 1400)/s x 3 µs = 0.54 %
    assert "0.54%" in b.note
    c = by_claim(fs, "more than the section's body")
    assert c.verdict == MODEL
    assert "0.17x" in c.today          # 1020 ticks / 6000 ticks
    assert "tcg" in c.note             # the cost side is the emulator's
    d = by_claim(fs, "9% to 12%")
    assert d.verdict == MODEL and "2-2.6%" in d.today     # fixture sync_pct 2.0 .. 2.6
    assert "6.5-11.9%" in d.then


def test_model_input_claims_on_hosted_say_no_emulator():
    fs = claims(None, hosted())
    c = by_claim(fs, "more than the section's body")
    assert c.verdict == MODEL and c.env.startswith("hosted")
    assert "emulator" not in c.note


def test_model_input_claims_without_load_rows_are_not_measurable():
    d = irq()
    for rec in d["schemes"]:
        rec["rows"] = [r for r in rec["rows"] if r["kind"] != "irq_load"]
    fs = claims(d)
    for text in ("very short", "ever interrupted", "more than the section's body",
                 "9% to 12%"):
        f = by_claim(fs, text)
        assert f.verdict == NA and f.today == report.DASH, text


# ---------------------------------------------------------------------------------------
# the order of magnitude


@pytest.mark.parametrize("pess, other, verdict", [
    ((900.0, 1000.0, 1100.0), (5.0, 6.0, 7.0), "holds"),         # above 10 x 5..7 = 50..70
    ((20.0, 30.0, 40.0), (5.0, 6.0, 7.0), "reversed"),           # below 50: less than 10x
    ((100.0, 120.0, 150.0), (5.0, 6.0, 12.0), "within noise"),   # overlaps 50..120
])
def test_order_of_magnitude_verdicts_on_hosted(pess, other, verdict):
    h = hosted()
    for s in ("spl-optim", "cli-pessim", "cli-optim"):
        set_hosted_crit(h, s, *other)
    set_hosted_crit(h, "spl-pessim", *pess)
    fs = claims(irq(), h)       # the tcg data is there too: the hosted figures decide
    for o in ("spl-optim", "cli-pessim", "cli-optim"):
        f = by_claim(fs, f"what {o}'s does")
        assert f.verdict == verdict, o
        assert f.env.startswith("hosted") and "pthread_sigmask" in f.note
    assert "28.7-65x" in by_claim(fs, "what spl-optim's does").then    # 9.0/0.2 .. 6.5/0.1


def test_order_of_magnitude_tcg_shows_the_emulators_ratio():
    fs = claims(irq())
    f = by_claim(fs, "what cli-pessim's does")
    assert f.verdict == NA and "tcg" in f.note and f.env.startswith("tcg")
    assert f.today.startswith("11.3x")          # 1020 / 90


def test_order_of_magnitude_bare_metal_is_judged():
    d = set_crit(irq(env="bare-metal"), "spl-pessim", 2000.0, 2100.0, 2300.0)
    for s in ("spl-optim", "cli-pessim", "cli-optim"):
        set_crit(d, s, 20.0, 22.0, 25.0)
    f = by_claim(claims(d), "what cli-optim's does")
    assert f.verdict == "holds" and f.env.startswith("bare-metal")
    assert "pthread_sigmask" not in f.note


def test_order_of_magnitude_without_spl_pessim():
    d = irq(only=("spl-optim", "cli-pessim", "cli-optim"))
    f = by_claim(claims(d), "what spl-optim's does")
    assert f.verdict == NA and f.today == report.DASH and "spl-pessim" in f.note


# ---------------------------------------------------------------------------------------
# cli-spl-pessim costs the same as cli-pessim


@pytest.mark.parametrize("prop, verdict", [
    ((80.0, 92.0, 110.0), "within noise"),       # overlaps cli-pessim 81..108
    ((200.0, 220.0, 260.0), "reversed"),         # apart: measurably dearer
    ((10.0, 12.0, 15.0), "reversed"),            # apart: measurably cheaper
])
def test_same_cost_verdicts_on_bare_metal(prop, verdict):
    d = set_crit(irq(env="bare-metal"), "cli-spl-pessim", *prop)
    f = by_claim(claims(d), "cost the same as cli-pessim")
    assert f.verdict == verdict and f.verdict != "holds"
    assert f.env.startswith("bare-metal")


def test_same_cost_tcg_not_measurable():
    f = by_claim(claims(irq()), "cost the same as cli-pessim")
    assert f.verdict == NA and "tcg" in f.note and f.today.startswith("1.06x")


def test_same_cost_hosted_only_names_the_unbuilt_scheme():
    f = by_claim(claims(None, hosted()), "cost the same as cli-pessim")
    assert f.verdict == NA and f.today == report.DASH
    assert "does not build cli-spl-pessim" in f.note


# ---------------------------------------------------------------------------------------
# through all_findings and the renderers


def test_all_findings_carries_them_and_renders_the_new_verdict():
    fs = document.all_findings(fx.prims_data(), fx.irq_data())
    assert sum(f.verdict == MODEL for f in fs) == 4
    doc = report.Document("r", findings=fs)
    text = report.render_findings_text(fs)
    assert f"[{MODEL}]" in text
    assert "Input of the model" in text        # the terminal says why
    assert f"<b>{MODEL}</b>" in report.render_html(doc)


def test_no_irq_and_no_hosted_data_adds_nothing():
    fs = document.all_findings({"rows": [], "sides": {}}, None)
    assert not [f for f in fs if f.verdict == MODEL or "spl-pessim's" in f.claim]


# ---------------------------------------------------------------------------------------
# a real run: the hosted kernel's four schemes (ksync run --platform hosted --smp 1
# --irq-seconds 0.3 --irq-quick), its irq rows kept (tests/fixtures/hosted_sm_claims.json)


def test_recorded_hosted_run():
    import json
    from pathlib import Path
    h = json.loads((Path(__file__).parent / "fixtures" / "hosted_sm_claims.json").read_text())
    fs = claims(None, h)
    for text in ("very short", "ever interrupted", "more than the section's body",
                 "9% to 12%"):
        assert by_claim(fs, text).verdict == MODEL, text
    for other in ("spl-optim", "cli-pessim", "cli-optim"):
        f = by_claim(fs, f"what {other}'s does")
        assert f.verdict == "holds" and f.env.startswith("hosted"), other
    assert by_claim(fs, "cost the same as cli-pessim").verdict == NA
    assert all(f.env.startswith("hosted") for f in fs if f.verdict != NA)
