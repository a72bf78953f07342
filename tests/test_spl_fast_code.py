"""Issue 8 item 9c: Table 5c once printed the same crit_enter_leave for spl-optim and
tpr-optim. The cause is in spl.h, not in the tool: the optimistic schemes share one
crit_enter/crit_leave, and for spl-optim and tpr-optim it compiles to the same
instructions; splraise/splx is where they differ. This compiles spl.h the way the hosted
benchmark does (bench/spl_shim, mk/lib.mk's KSYNC_SPL_FAST_CFLAGS) and compares the code."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ksync import irqreport

ROOT = Path(__file__).resolve().parent.parent
PROBE = """#define KSYNC_SPL_HEADER "spl/{scheme}.h"
#include "spl.h"
_Thread_local unsigned shim_cpu_index __attribute__((tls_model("local-exec")));
struct kcpu kcpus[MAX_CPUS];
void probe_crit(void) {{ crit_enter(); crit_leave(); }}
void probe_spl(void) {{ spl_t s = splraise(IPL_BIO); splx(s); }}
"""


def function_asm(tmp_path: Path, scheme: str) -> dict[str, list[str]]:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or cc) on PATH")
    macro = scheme.replace("-", "_").upper()
    src = tmp_path / f"{macro}.c"
    src.write_text(PROBE.format(scheme=scheme))
    asm = tmp_path / f"{macro}.s"
    subprocess.run([cc, "-std=gnu11", "-O2", "-S", "-fno-asynchronous-unwind-tables",
                    f"-I{ROOT / 'bench'}", f"-I{ROOT / 'bench' / 'spl_shim'}",
                    f"-I{ROOT / 'kernel' / 'include'}", f"-I{ROOT / 'include'}",
                    "-o", str(asm), str(src)], check=True, capture_output=True, text=True)
    return asm_functions(asm.read_text())


def asm_functions(text: str) -> dict[str, list[str]]:
    """The probe_* functions of gcc -S output, each as its stripped lines (comments out)."""
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^(probe_\w+):$", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name and line.strip().startswith(".size"):
            name = None
        elif name and not line.startswith("#") and not line.strip().startswith("# "):
            out[name].append(line.strip())
    return out


def instructions(lines: list[str]) -> list[str]:
    """The instruction lines, labels renamed by order (.L14 -> L0): what the CPU runs."""
    labels: dict[str, str] = {}
    out = []
    for line in lines:
        for lab in re.findall(r"\.L\d+", line):
            labels.setdefault(lab, f"L{len(labels)}")
        out.append(re.sub(r"\.L\d+", lambda m: labels[m.group(0)], line))
    return out


def test_spl_optim_and_tpr_optim_share_the_crit_code(tmp_path):
    a, b = irqreport.SAME_CRIT_CODE
    asm_a, asm_b = function_asm(tmp_path, a), function_asm(tmp_path, b)
    assert asm_a["probe_crit"] and instructions(asm_a["probe_crit"]) == \
        instructions(asm_b["probe_crit"])
    # ... and the levels are not the same code: spl-optim lowers with a cmpxchg
    assert instructions(asm_a["probe_spl"]) != instructions(asm_b["probe_spl"])
    assert any("cmpxchg" in x for x in asm_a["probe_spl"])
    assert not any("cmpxchg" in x for x in asm_b["probe_spl"])


def test_cli_optim_crit_code_differs(tmp_path):
    """The check differs where the rule differs (cli-optim runs nothing pending until the
    level is back at none), so the comparison above can tell code apart."""
    spl, cli = function_asm(tmp_path, "spl-optim"), function_asm(tmp_path, "cli-optim")
    assert instructions(spl["probe_crit"]) != instructions(cli["probe_crit"])
