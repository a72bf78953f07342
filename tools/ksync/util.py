"""Small shared pieces: user-facing errors, repo discovery, progress lines, make."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


class KsyncError(Exception):
    """A failure to report as one line ``ksync: <message>`` (no traceback)."""

    exit_code = 1
    prefix = ""

    def __init__(self, message: str, exit_code: int | None = None, details: str = ""):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
        self.details = details  # optional multi-line text printed before the one-liner


class UsageError(KsyncError):
    """Bad user input: ``ksync: error: <message>``, exit 2."""

    exit_code = 2
    prefix = "error: "


class SetupError(KsyncError):
    """Cannot run at all (missing QEMU, unusable KVM, no kernel image): exit 2."""

    exit_code = 2


def find_repo(explicit: str | os.PathLike | None = None) -> Path:
    """The ksync source tree: --repo, $KSYNC_REPO, the tree this package lives in, or cwd."""
    if explicit:
        p = Path(explicit).resolve()
        if not p.is_dir():
            raise UsageError(f"--repo {explicit}: not a directory")
        return p
    env = os.environ.get("KSYNC_REPO")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parent.parent.parent  # tools/ksync/util.py -> repo
    if (here / "docs" / "protocol.md").exists() or (here / "Makefile").exists():
        return here
    cwd = Path.cwd().resolve()
    for d in (cwd, *cwd.parents):
        if (d / "docs" / "protocol.md").exists():
            return d
    return cwd


def display_path(path: Path | str) -> str:
    """Path relative to cwd when it is below it, else absolute."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def utc_timestamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """``[  4.1s] step`` lines on stderr, elapsed since the command started."""

    def __init__(self, stream=None, start: float | None = None):
        self.stream = stream or sys.stderr
        self.start = time.monotonic() if start is None else start

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def __call__(self, message: str) -> None:
        print(f"[{self.elapsed():5.1f}s] {message}", file=self.stream, flush=True)


def make(repo: Path, target: str, progress=None, what: str | None = None,
         variables: dict[str, str] | None = None, log_path: Path | None = None) -> None:
    """Run ``make -s -C <repo> [VAR=value ...] <target>``; on failure raise with make's
    output attached (and, with ``log_path``, written there too)."""
    if shutil.which("make") is None:
        raise SetupError("make not found; install it: apt-get install make")
    assigns = [f"{k}={v}" for k, v in (variables or {}).items()]
    shown = " ".join([*assigns, target])
    if progress:
        progress(f"building {what or target} (make {shown})")
    try:
        p = subprocess.run(["make", "-s", "-C", str(repo), *assigns, target],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    except OSError as e:
        raise SetupError(f"cannot run make: {e}") from None
    if p.returncode != 0:
        out = p.stdout.decode("utf-8", errors="replace").rstrip()
        if log_path is not None:
            try:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                log_path.write_text(f"# make {shown} exited with code {p.returncode}\n"
                                    + out + "\n", encoding="utf-8")
            except OSError:
                pass
        lines = out.splitlines()
        if len(lines) > 200:
            lines = [f"... ({len(lines) - 200} earlier lines of make output omitted)"] + lines[-200:]
        raise KsyncError(f"build failed: make {shown} exited with code {p.returncode}",
                         details="\n".join(lines))
