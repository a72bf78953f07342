"""The interrupt-masking schemes of Small & Manley 1997 (issue 4): names and kernel images.

What this is: the host tool's list of the kernel builds, one per scheme, and where each
build's image lives.  Nothing here is measured or modelled; it is naming only.  The kernel
side (kernel/spl/<name>.c, kernel/include/spl.h) and the Makefile
(``make SCHEME=<name> kernel``) are another engineer's; this module is the host's half of
that seam (docs/protocol.md section 5, docs/irq-schemes.md).

Paper: section 3 and Table 1 (spl-/cli- x pessim/optim), section 7.1 (cli-spl-pessim, the
authors' proposal); tpr-pessim / tpr-optim are today's on-chip priority register (x86-64
CR8), which the paper did not have.

Layout: the default scheme (spl-optim, what NetBSD 1.2 used) builds into build/kernel/
exactly as before issue 4, so every existing path keeps working; any other scheme builds
into build/kernel-<name>/ (ksync.elf32 for QEMU -kernel, ksync.elf for symbols).

Public API: ``SCHEMES``, ``DEFAULT_SCHEME``, ``OPTIMISTIC``, ``HOSTED_SCHEMES``, ``SCHEME_INFO`` (from
kernel/spl/schemes.txt, the one list), ``scheme_id(name)``, ``check_scheme(name)``,
``parse_schemes(text)``, ``scheme_dir(repo, name)``, ``scheme_image(repo, name)``,
``scheme_elf(repo, name)``, ``make_vars(name)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .util import UsageError

# The one list of schemes (kernel/spl/schemes.txt); the Makefile and mk/lib.mk read it too.
SCHEMES_FILE = Path(__file__).resolve().parents[2] / "kernel" / "spl" / "schemes.txt"


@dataclass(frozen=True)
class SchemeInfo:
    """One line of kernel/spl/schemes.txt."""
    name: str
    default: bool
    optimistic: bool
    enter: str                  # Table 2's E term: flag, onchip, offchip, cr8
    interrupted: str | None     # the I term of an optimistic scheme, else None
    hosted: bool = False        # the hosted port (arch/hosted) builds it


def parse_scheme_list(text: str) -> tuple[SchemeInfo, ...]:
    """The schemes of a schemes.txt text, in file order; ValueError on a malformed line,
    a repeated name or not exactly one default."""
    out: list[SchemeInfo] = []
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 6 or any(w not in "01" for w in (words[1], words[2], words[5])):
            raise ValueError(f"schemes.txt line {n}: want 'name default optimistic enter "
                             f"interrupted hosted', got {line!r}")
        name, dflt, optim, enter, intr, hosted = words
        if any(s.name == name for s in out):
            raise ValueError(f"schemes.txt line {n}: {name} listed twice")
        out.append(SchemeInfo(name, dflt == "1", optim == "1", enter,
                              None if intr == "-" else intr, hosted == "1"))
    if sum(s.default for s in out) != 1:
        raise ValueError("schemes.txt: exactly one scheme must have default 1")
    return tuple(out)


SCHEME_INFO = {s.name: s for s in parse_scheme_list(SCHEMES_FILE.read_text())}
SCHEMES = tuple(SCHEME_INFO)
DEFAULT_SCHEME = next(s.name for s in SCHEME_INFO.values() if s.default)
# optimistic schemes: a critical section only sets a per-CPU flag; the hardware is touched
# only when an interrupt arrives inside one (paper section 3.2)
OPTIMISTIC = tuple(s.name for s in SCHEME_INFO.values() if s.optimistic)
# the schemes the hosted port builds (docs/hosted-port.md says what each means there)
HOSTED_SCHEMES = tuple(s.name for s in SCHEME_INFO.values() if s.hosted)


def scheme_id(name: str) -> str:
    """The C/file spelling of a scheme name: ``spl-optim`` -> ``spl_optim``."""
    return name.replace("-", "_")

KERNEL_DIR = Path("build/kernel")
ELF32_NAME = "ksync.elf32"
ELF_NAME = "ksync.elf"


def _names() -> str:
    return ", ".join(SCHEMES)


def check_scheme(name: str | None) -> str:
    """``name`` if it is a known scheme, else UsageError naming every scheme.

    ``None`` means the default scheme and is returned as ``DEFAULT_SCHEME``."""
    if name is None:
        return DEFAULT_SCHEME
    if name not in SCHEMES:
        raise UsageError(f"unknown scheme {name!r} ({_names()})")
    return name


def parse_schemes(text: str) -> list[str]:
    """``"a,b,c"`` -> checked list without duplicates, in the order given; ``all`` = every
    scheme."""
    words = [w.strip() for w in text.split(",")]
    if not text.strip() or any(not w for w in words):
        raise UsageError(f"--schemes needs comma-separated scheme names ({_names()}), "
                         f"got {text!r}")
    if words == ["all"]:
        return list(SCHEMES)
    out: list[str] = []
    for w in words:
        check_scheme(w)
        if w not in out:
            out.append(w)
    return out


def scheme_dir(repo: Path, name: str | None, windows: bool = False) -> Path:
    """Build directory of a scheme's kernel: build/kernel/ for the default scheme,
    build/kernel-<name>/ for the others; with ``windows`` (make WINDOWS=1: the
    masked-window tracker compiled in) the same with ``-windows`` appended."""
    name = check_scheme(name)
    tail = "-windows" if windows else ""
    if name == DEFAULT_SCHEME:
        return Path(repo) / f"{KERNEL_DIR}{tail}"
    return Path(repo) / f"{KERNEL_DIR}-{name}{tail}"


def scheme_image(repo: Path, name: str | None, windows: bool = False) -> Path:
    """The ELF32 image QEMU boots with -kernel."""
    return scheme_dir(repo, name, windows) / ELF32_NAME


def scheme_elf(repo: Path, name: str | None, windows: bool = False) -> Path:
    """The ELF64 with symbols (for the panic symbolizer)."""
    return scheme_dir(repo, name, windows) / ELF_NAME


def make_vars(name: str | None) -> dict[str, str]:
    """make variables for a scheme's build: ``{}`` when no scheme was asked for (plain
    ``make kernel``, as before issue 4), else ``{"SCHEME": name}``."""
    if name is None:
        return {}
    return {"SCHEME": check_scheme(name)}
