"""Evidence that more than one process shares an in-process bus.

The in-process bus reaches only the process that publishes. It cannot know
every other process, so it looks for evidence and says what it saw:

- the server's own command line and environment: gunicorn, uvicorn,
  hypercorn or granian with ``--workers``/``-w`` above 1, ``WEB_CONCURRENCY``
  or ``GUNICORN_CMD_ARGS`` asking for more than one; a gunicorn
  configuration file, which may ask for more ("cannot be ruled out");
- every process that listens on the in-process bus registers next to the
  SQLite database file: one file per process, locked with ``flock`` while
  the process lives (the lock dies with the process, so a crashed process
  never counts). Another live registration is another process whose
  subscribers this process's changes never reach.

Processes on other hosts, or that use another database, leave no evidence.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no registration
    fcntl = None  # type: ignore[assignment]

SERVERS = ("gunicorn", "uvicorn", "hypercorn", "granian")
SUFFIX = ".mcpgw-bus"
"""The registration directory: the database file's name plus this."""


def server_evidence(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """Why the command line says several processes may serve, or ``None``."""
    argv = list(sys.argv if argv is None else argv)
    environ = os.environ if environ is None else environ
    server = _server(argv)
    if server is None:
        return None
    options = [*argv[1:], *shlex.split(environ.get("GUNICORN_CMD_ARGS", ""))]
    workers = _workers(options)
    if workers is None and environ.get("WEB_CONCURRENCY", "").strip().isdigit():
        workers = int(environ["WEB_CONCURRENCY"])
    if workers is not None:
        return f"{server} runs {workers} workers" if workers > 1 else None
    if server == "gunicorn" and _gunicorn_config(options):
        return "gunicorn reads a configuration file that may start several workers"
    return None


def _server(argv: Sequence[str]) -> str | None:
    if not argv:
        return None
    parts = Path(argv[0]).parts
    return next((name for name in SERVERS if name in parts), None)


def _workers(options: Sequence[str]) -> int | None:
    found = None
    for index, option in enumerate(options):
        value = None
        if option in ("-w", "--workers") and index + 1 < len(options):
            value = options[index + 1]
        elif option.startswith("--workers="):
            value = option.partition("=")[2]
        elif option.startswith("-w") and option[2:].isdigit():
            value = option[2:]
        if value is not None and value.isdigit():
            found = int(value)
    return found


def _gunicorn_config(options: Sequence[str]) -> bool:
    named = any(o in ("-c", "--config") or o.startswith("--config=") for o in options)
    return named or Path("gunicorn.conf.py").exists()


class Registration:
    """This process, registered as listening next to a SQLite file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path: Path | None = None
        self._fd: int | None = None
        if fcntl is None:
            return
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, exist_ok=True)
            self._register()

    def _register(self) -> None:
        # Locked under a temporary name first, so another process checking
        # for stale files never mistakes this one for a dead process.
        token = secrets.token_hex(4)
        pending = self.directory / f"pending-{os.getpid()}-{token}"
        fd = os.open(pending, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.path = self.directory / f"{os.getpid()}-{token}"
        os.rename(pending, self.path)
        self._fd = fd

    def others(self) -> int:
        """How many other live processes are registered here."""
        return count_live(self.directory, exclude=self.path)

    def close(self) -> None:
        if self._fd is None or self.path is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None
        with contextlib.suppress(OSError):
            self.directory.rmdir()  # only when it is empty

    def forget(self) -> None:
        """After a fork: the child keeps neither the file nor the lock."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None


def count_live(directory: Path, exclude: Path | None = None) -> int:
    """Registered processes still alive; removes the files of dead ones."""
    if fcntl is None:
        return 0
    try:
        entries = [e for e in directory.iterdir() if not e.name.startswith("pending")]
    except OSError:
        return 0
    return sum(_alive(entry) for entry in entries if entry != exclude)


def _alive(entry: Path) -> bool:
    try:
        fd = os.open(entry, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True  # its owner holds the lock: alive
    except OSError:
        return False
    else:
        with contextlib.suppress(OSError):
            entry.unlink()  # nobody held it: its process is gone
        return False
    finally:
        os.close(fd)


def registry_directory(database: str | os.PathLike[str] | None) -> Path | None:
    """Where processes sharing this SQLite database register, if a file."""
    name = str(database or "")
    if not name or name == ":memory:" or "mode=memory" in name:
        return None
    if name.startswith("file:"):
        name = name[len("file:") :].partition("?")[0]
    path = Path(name).resolve()
    return path.with_name(path.name + SUFFIX)
