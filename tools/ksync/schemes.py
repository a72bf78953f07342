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

Public API: ``SCHEMES``, ``DEFAULT_SCHEME``, ``OPTIMISTIC``, ``check_scheme(name)``,
``parse_schemes(text)``, ``scheme_dir(repo, name)``, ``scheme_image(repo, name)``,
``scheme_elf(repo, name)``, ``make_vars(name)``.
"""
from __future__ import annotations

from pathlib import Path

from .util import UsageError

SCHEMES = ("spl-pessim", "spl-optim", "cli-pessim", "cli-optim", "cli-spl-pessim",
           "tpr-pessim", "tpr-optim")
DEFAULT_SCHEME = "spl-optim"
# optimistic schemes: a critical section only sets a per-CPU flag; the hardware is touched
# only when an interrupt arrives inside one (paper section 3.2)
OPTIMISTIC = ("spl-optim", "cli-optim", "tpr-optim")

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


def scheme_dir(repo: Path, name: str | None) -> Path:
    """Build directory of a scheme's kernel: build/kernel/ for the default scheme,
    build/kernel-<name>/ for the others."""
    name = check_scheme(name)
    if name == DEFAULT_SCHEME:
        return Path(repo) / KERNEL_DIR
    return Path(repo) / f"{KERNEL_DIR}-{name}"


def scheme_image(repo: Path, name: str | None) -> Path:
    """The ELF32 image QEMU boots with -kernel."""
    return scheme_dir(repo, name) / ELF32_NAME


def scheme_elf(repo: Path, name: str | None) -> Path:
    """The ELF64 with symbols (for the panic symbolizer)."""
    return scheme_dir(repo, name) / ELF_NAME


def make_vars(name: str | None) -> dict[str, str]:
    """make variables for a scheme's build: ``{}`` when no scheme was asked for (plain
    ``make kernel``, as before issue 4), else ``{"SCHEME": name}``."""
    if name is None:
        return {}
    return {"SCHEME": check_scheme(name)}
