"""Small shared pieces: user-facing errors, repo discovery, progress lines, make."""
from __future__ import annotations

import os
import shutil
import signal
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


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached the tool.  A BaseException like KeyboardInterrupt, so
    that every ``except BaseException`` around a child (QEMU, make, a hosted program)
    kills it on the way out and ``except Exception`` does not swallow it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_terminated(signum, frame) -> None:
    # the first one wins: a second SIGTERM must not interrupt the cleanup it started
    for s in TERMINATING_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


def install_signal_handlers() -> dict:
    """Turn SIGTERM and SIGHUP into ``Terminated`` (main thread only, else ValueError), so
    the children die with the tool instead of being left running, orphaned.  Returns the
    previous handlers for ``restore_signal_handlers``."""
    return {s: signal.signal(s, _raise_terminated) for s in TERMINATING_SIGNALS}


def restore_signal_handlers(saved: dict) -> None:
    for s, handler in saved.items():
        signal.signal(s, handler)


def stop_process_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process group led by ``proc`` (make then removes the targets it was
    writing), SIGKILL it if it is still there after ``grace`` seconds, and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


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


def write_atomic(path: Path, data: bytes) -> None:
    """path's new contents in one step (a temporary file beside it, then a rename): a QEMU
    reading the old file - another pytest-xdist worker's boot of the same initramfs - never
    sees it truncated or half written."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load_runs_file(path: Path, schema: str, what: str) -> dict:
    """A results file of runs (``{"schema": schema, "runs": [...]}``), or KsyncError
    (exit 2) naming the file and why: unreadable, not JSON, or another kind of file."""
    import json
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise KsyncError(f"{path}: cannot read: {e}", exit_code=2) from e
    if not isinstance(data, dict) or data.get("schema") != schema \
            or not isinstance(data.get("runs"), list):
        raise KsyncError(f"{path}: not {what} results file (schema {schema})", exit_code=2)
    return data


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
        # its own process group, stopped as a whole if the tool is interrupted or
        # terminated (a compiler it started must not outlive it)
        p = subprocess.Popen(["make", "-s", f"-j{os.cpu_count() or 1}", "-C", str(repo), *assigns, target],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        raise SetupError(f"cannot run make: {e}") from None
    try:
        stdout, _ = p.communicate()
    except BaseException:
        stop_process_group(p)
        raise
    if p.returncode != 0:
        out = stdout.decode("utf-8", errors="replace").rstrip()
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
