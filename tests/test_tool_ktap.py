"""ksync.ktap: KTAP v1 and KSYNC line parsing."""
from ksync import ktap


def lines(*body):
    return [ktap.PREFIX + b for b in body]


def test_complete_pass():
    r = ktap.parse(lines("KTAP version 1", "1..3", "ok 1 alpha", "ok 2 beta", "ok 3 gamma"))
    assert r.version_seen
    assert r.plan == 3
    assert [c.name for c in r.results] == ["alpha", "beta", "gamma"]
    assert all(c.ok for c in r.results)
    assert r.complete and r.passed
    assert r.problem() is None


def test_api_fields():
    r = ktap.parse(lines("1..1", "ok 1 x"))
    c = r.results[0]
    assert (c.ok, c.number, c.name, c.directive) == (True, 1, "x", None)
    assert r.diagnostics == []
    assert r.version_seen is False  # not required for completeness
    assert r.passed


def test_incomplete_plan():
    r = ktap.parse(lines("KTAP version 1", "1..12", "ok 1 a", "ok 2 b", "ok 3 c"))
    assert not r.complete and not r.passed
    assert r.problem() == "KTAP plan incomplete: 3 of 12 results"


def test_no_plan():
    r = ktap.parse(lines("ok 1 a"))
    assert r.plan is None and not r.complete and not r.passed
    assert "no plan line" in r.problem()
    empty = ktap.parse(["just log text", "more"])
    assert not empty.passed and empty.results == []
    assert "no KTAP output" in empty.problem()


def test_not_ok():
    r = ktap.parse(lines("1..3", "ok 1 a", "not ok 2 spin_lock_basic", "not ok 3 queue"))
    assert r.complete and not r.passed
    assert [c.name for c in r.failed] == ["spin_lock_basic", "queue"]
    assert r.problem() == "2 test(s) failed: spin_lock_basic, queue"
    assert r.results[1].ok is False


def test_skip_counts_as_ok():
    r = ktap.parse(lines("1..2", "ok 1 a", "ok 2 x2apic_tpr # SKIP no x2apic"))
    assert r.passed
    assert r.results[1].directive == "SKIP no x2apic"
    assert r.results[1].name == "x2apic_tpr"
    assert [c.number for c in r.skipped] == [2]
    assert r.ok_count == 2
    # a skipped "not ok" is not a failure either
    r2 = ktap.parse(lines("1..1", "not ok 1 y # SKIP not here"))
    assert r2.passed


def test_skip_without_name():
    r = ktap.parse(lines("1..1", "ok 1 # SKIP reason"))
    assert r.results[0].name == "" and r.results[0].directive == "SKIP reason"
    assert r.passed


def test_noise_lines_ignored():
    noise = ["SeaBIOS (version 1.16)", "ok 7 not prefixed", "1..99", "ktap:ok 1 no space",
             "random ktap: ok 5 in the middle", "KSYNC {\"kind\":\"done\"}"]
    r = ktap.parse(noise + lines("1..1", "ok 1 real") + noise)
    assert r.plan == 1 and len(r.results) == 1 and r.passed


def test_crlf_and_escapes():
    raw = ["ktap: KTAP version 1\r\n", "ktap: 1..2\r\n", "ktap: ok 1 a\r\n",
           "\x1b[2J\x1b[01;01Hktap: ok 2 b # SKIP why\r"]
    r = ktap.parse(raw)
    assert r.passed
    assert r.results[0].name == "a"
    assert r.results[1].directive == "SKIP why"


def test_str_and_bytes_blob():
    blob = "log\r\nktap: 1..2\r\nktap: ok 1 a\r\nktap: ok 2 b\r\n"
    assert ktap.parse(blob).passed
    assert ktap.parse(blob.encode()).passed
    assert ktap.parse([l.encode() for l in blob.splitlines(True)]).passed


def test_duplicate_numbers():
    r = ktap.parse(lines("1..3", "ok 1 a", "ok 2 b", "ok 2 b", "ok 3 c"))
    assert not r.complete and not r.passed
    assert r.duplicates == [2]
    assert "duplicate" in r.problem()
    # right count but a duplicate instead of a missing number
    r2 = ktap.parse(lines("1..3", "ok 1 a", "ok 1 a", "ok 3 c"))
    assert not r2.complete


def test_out_of_range_and_two_plans():
    assert not ktap.parse(lines("1..2", "ok 1 a", "ok 3 c")).complete
    r = ktap.parse(lines("1..1", "ok 1 a", "1..1", "ok 1 a"))
    assert not r.complete
    assert "plan lines" in r.problem()


def test_empty_plan():
    r = ktap.parse(lines("KTAP version 1", "1..0"))
    assert r.complete and r.passed


def test_diagnostics_and_dash():
    r = ktap.parse(lines("1..1", "# seed 42", "#no space", "ok 1 - with dash"))
    assert r.diagnostics == ["seed 42", "no space"]
    assert r.results[0].name == "with dash"


def test_todo_not_failure():
    r = ktap.parse(lines("1..1", "not ok 1 flaky # TODO later"))
    assert r.passed and r.results[0].todo


def test_parse_ksync():
    src = [
        'KSYNC {"kind":"boot","cpus":2,"tsc_hz":2596000000}',
        'KSYNC {"kind":"prim","name":"cli_sti","median":1.5}\r',
        "KSYNC {not json",
        "KSYNC [1, 2]",
        'KSYNC {"no_kind": 1}',
        'noise KSYNC {"kind":"x"}',
        "ktap: ok 1 a",
    ]
    bad = []
    objs = ktap.parse_ksync(src, bad_lines=bad)
    assert [o["kind"] for o in objs] == ["boot", "prim"]
    assert objs[1]["median"] == 1.5
    assert len(objs.bad_lines) == 3 and bad == objs.bad_lines
    assert objs.first("boot")["cpus"] == 2
    assert objs.of_kind("prim")[0]["name"] == "cli_sti"
    assert objs.first("done") is None
    assert isinstance(objs, list)


def test_parse_ksync_never_raises():
    weird = ["KSYNC ", "KSYNC", "KSYNC \x00\x01", "KSYNC {\"kind\":1}" * 3, "\udcff"]
    objs = ktap.parse_ksync(weird)
    assert len(objs.bad_lines) >= 2
