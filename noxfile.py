"""The supported matrix: a host site built from the wheel, per Python and Django.

``nox`` runs session ``hostsite`` for every combination (``nox -l`` lists
them; ``nox -s "hostsite(py3.12-django6.0)"`` runs one). Each session makes
a fresh virtual environment, installs the wheel (``MCPGW_WHEEL``, or one it
builds), the combination's Django and the suite's pins, and runs
tests/hostsite/drive.py from a temporary directory: the repository is never
on ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
HOSTSITE = ROOT / "tests" / "hostsite"
DJANGO = {"5.2": "5.2.19", "6.0": "6.0.10", "6.1": "6.1.3"}
# Django 6 needs Python 3.12 or later.
MATRIX = [
    ("3.11", "5.2"),
    ("3.12", "5.2"),
    ("3.12", "6.0"),
    ("3.12", "6.1"),
    ("3.13", "5.2"),
    ("3.13", "6.0"),
    ("3.13", "6.1"),
]

# pyenv's interpreters are found even when `pyenv global` names only one.
for _bin in sorted(Path.home().glob(".pyenv/versions/3.1[1-3].*/bin"), reverse=True):
    os.environ["PATH"] = f"{_bin}{os.pathsep}{os.environ.get('PATH', '')}"

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["hostsite"]
nox.options.error_on_missing_interpreters = True


def _wheel(session: nox.Session) -> Path:
    given = os.environ.get("MCPGW_WHEEL")
    if given:
        return Path(given).resolve()
    out = Path(tempfile.mkdtemp(prefix="mcpgw-wheel-"))
    session.run(
        "python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)
    )
    return next(out.glob("*.whl"))


@nox.session
@nox.parametrize(
    "python,django",
    [nox.param(p, d, id=f"py{p}-django{d}") for p, d in MATRIX],
)
def hostsite(session: nox.Session, django: str) -> None:
    wheel = _wheel(session)
    session.install(
        "-q",
        "-c",
        str(HOSTSITE / "constraints.txt"),
        f"{wheel}[api-docs]",
        f"Django=={DJANGO[django]}",
        "-r",
        str(HOSTSITE / "requirements.txt"),
    )
    work = Path(tempfile.mkdtemp(prefix="mcpgw-hostsite-"))
    shutil.copytree(HOSTSITE / "template", work / "template")
    for name in ("drive.py", "sdk_probe.py"):
        shutil.copy(HOSTSITE / name, work / name)
    session.chdir(work)
    session.run("python", "drive.py", str(work))
    session.chdir(ROOT)
    shutil.rmtree(work, ignore_errors=True)
