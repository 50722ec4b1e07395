"""Drive one host site from a wheel: the steps a site takes to adopt the app.

Run by ``noxfile.py`` (session ``hostsite``) with the Python of a fresh
virtual environment in which the wheel (never the source tree) and the
suite's pins are installed, from a temporary directory, so the repository
is not on ``sys.path``::

    python drive.py WORKDIR

WORKDIR holds ``template/`` (copied from tests/hostsite/template) and this
file; the site is generated in WORKDIR/site. Each step prints one line; the
first failure prints its output and exits 1.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PYTHON = sys.executable
BIN = Path(PYTHON).parent
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
GATEWAY_PACKAGES = {"mcp_gateway", "engines_app"}
ISSUER = "https://idp.example"
EMAIL = "alice@example.com"


class StepFailed(Exception):
    pass


class Site:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.root = workdir / "site"
        self.template = workdir / "template"
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL")
        }
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.token = ""  # the API token the commands issue

    def run(
        self, *args: str, env: dict[str, str] | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args,
            cwd=self.root,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if ok and done.returncode != 0:
            command = " ".join(args)
            output = f"{done.stdout}\n{done.stderr}"
            raise StepFailed(f"{command} exited {done.returncode}\n{output}")
        return done

    def manage(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(PYTHON, "manage.py", *args, **kwargs)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise StepFailed(message)


def no_gateway_ids(output: str) -> None:
    lines = [line for line in output.splitlines() if "mcp_gateway." in line]
    expect(not lines, "the app's check ids fired:\n" + "\n".join(lines))


# The steps, in order.


def generate(site: Site) -> None:
    site.root.mkdir()
    site.run(str(BIN / "django-admin"), "startproject", "config", ".")
    for name in ("accounts", "tools", "site_tests"):
        shutil.copytree(site.template / name, site.root / name)
    for name in ("conftest.py", "pytest.ini"):
        shutil.copy(site.template / name, site.root / name)
    shutil.copy(site.template / "urls.py", site.root / "config" / "urls.py")
    settings = site.root / "config" / "settings.py"
    tail = (site.template / "settings_tail.py").read_text()
    settings.write_text(settings.read_text() + tail)


def imports_from_the_wheel(site: Site) -> None:
    done = site.run(
        PYTHON,
        "-c",
        "import importlib.util as u, sys, mcp_gateway, engines_app, config;"
        "print(mcp_gateway.__file__); print(engines_app.__file__);"
        "print(config.__file__); print(u.find_spec('demo'))",
    )
    gateway, engines, config, demo = done.stdout.split()
    expect(Path(gateway).is_relative_to(SITE_PACKAGES), f"mcp_gateway from {gateway}")
    expect(Path(engines).is_relative_to(SITE_PACKAGES), f"engines_app from {engines}")
    expect(Path(config).is_relative_to(site.root), f"config from {config}")
    expect(demo == "None", "the demo app is importable")
    admin = site.run(
        PYTHON,
        "-c",
        "import importlib.util as u, os, django;"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings';"
        "assert u.find_spec('django_stubs_ext') is None, 'django-stubs-ext';"
        "django.setup(); import mcp_gateway.admin; print('ok')",
    )
    expect(admin.stdout.strip() == "ok", f"import mcp_gateway.admin: {admin.stderr}")


def user_model_before_first_migrate(site: Site) -> None:
    site.manage("makemigrations", "accounts")


def check(site: Site) -> None:
    no_gateway_ids(site.manage("check").stderr)


def check_deploy(site: Site) -> None:
    done = site.manage("check", "--deploy", env={"SITE_DEBUG": "0"})
    no_gateway_ids(done.stdout + done.stderr)


def migrations_complete(site: Site) -> None:
    for field in ("django.db.models.BigAutoField", "django.db.models.AutoField"):
        site.manage(
            "makemigrations", "--check", "--dry-run", env={"SITE_AUTO_FIELD": field}
        )


def migrate(site: Site) -> None:
    site.manage("migrate", "--no-input")


# Commands run in one process through call_command (each parses its
# arguments exactly as manage.py would), to save a Django start-up each.
COMMANDS = f"""
import io, json, os, django
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()
from django.core.management import call_command, get_commands
from mcp_gateway.models import AuthorizationServer, Tenant

def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()

seen = {{"commands": sorted(get_commands())}}
run("mcp_tenant", "create", "acme", "--name", "Acme")
run("mcp_tenant", "add-member", "acme", "{EMAIL}", "--create-user")
seen["engines"] = run("mcp_engines")
run("mcp_expose", "acme", "site.summarize")
seen["tenants"] = run("mcp_tenant", "list")
run("mcp_audit", "prune", "--older-than", "30")
AuthorizationServer.objects.create(
    tenant=Tenant.objects.get(slug="acme"), issuer="{ISSUER}", jwks_uri="{ISSUER}/jwks"
)
print(json.dumps(seen))
"""


def commands(site: Site) -> None:
    site.manage(
        "createsuperuser",
        "--no-input",
        "--email",
        "root@example.com",
        env={"DJANGO_SUPERUSER_PASSWORD": "root-password-1"},
    )
    seen = json.loads(site.run(PYTHON, "-c", COMMANDS).stdout)
    expect("mcp_tenant" in seen["commands"], "the app's commands are missing")
    expect("mcp_demo" not in seen["commands"], "mcp_demo is installed in a host site")
    expect("site.summarize" in seen["engines"], f"mcp_engines:\n{seen['engines']}")
    expect("acme" in seen["tenants"], f"mcp_tenant list:\n{seen['tenants']}")
    token = site.manage("mcp_token", "create", "acme", "--user", EMAIL).stdout.strip()
    listed = site.manage("mcp_token", "list", "acme").stdout
    expect(EMAIL in listed, f"mcp_token list:\n{listed}")
    site.token = token


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gunicorn(site: Site, prefix: str) -> Iterator[str]:
    port = free_port()
    args = [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}"]
    args += ["--workers", "1", "--threads", "4"]
    if prefix:
        args += ["--env", f"SCRIPT_NAME={prefix}"]
    env = {**site.env, "SITE_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}
    log = (site.workdir / f"gunicorn{prefix.replace('/', '-')}.log").open("wb")
    process = subprocess.Popen(args, cwd=site.root, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            expect(process.poll() is None, "gunicorn exited")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                expect(time.monotonic() < deadline, "gunicorn did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{prefix}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def serve(site: Site, token: str, prefix: str) -> None:
    import httpx2

    with gunicorn(site, prefix) as base:
        mount = f"{base}/api/mcp/acme/mcp"
        for mode, version in (("auto", "2026-07-28"), ("legacy", "2025-11-25")):
            probe = site.run(
                PYTHON, str(site.workdir / "sdk_probe.py"), mount, token, mode
            )
            seen = json.loads(probe.stdout)
            expect(seen["version"] == version, f"{mode}: {seen}")
            expect(seen["tools"] == ["site_summarize"], f"{mode}: {seen}")
            expect(not seen["is_error"], f"{mode}: {seen}")
            expect(seen["structured"]["caller"] == EMAIL, f"{mode}: {seen}")
        refused = httpx2.post(
            mount,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"MCP-Protocol-Version": "2025-11-25"},
        )
        expect(refused.status_code == 401, f"no token: {refused.status_code}")
        header = refused.headers["WWW-Authenticate"]
        link = header.split('resource_metadata="')[1].split('"')[0]
        document = httpx2.get(link)
        expect(document.status_code == 200, f"{link}: {document.status_code}")
        metadata = document.json()
        expect(metadata["resource"] == mount, f"resource {metadata['resource']}")
        expect(metadata["authorization_servers"] == [ISSUER], f"{metadata}")
        login = httpx2.get(f"{base}/admin/login/")
        expect(login.status_code == 200, f"admin login page: {login.status_code}")


def serve_at_root(site: Site) -> None:
    serve(site, site.token, "")


def serve_under_a_prefix(site: Site) -> None:
    serve(site, site.token, "/sub")


def own_tests(site: Site) -> None:
    site.run(PYTHON, "-m", "pytest", "-q")


def pip_check(site: Site) -> None:
    site.run(PYTHON, "-m", "pip", "check")


def uninstall(site: Site) -> None:
    before = {p.name for p in SITE_PACKAGES.iterdir()}
    site.run(PYTHON, "-m", "pip", "uninstall", "-y", "django-mcp-gateway")
    after = {p.name for p in SITE_PACKAGES.iterdir()}
    removed = before - after - {"__pycache__"}
    dist = {name for name in removed if name.endswith(".dist-info")}
    expect(removed - dist == GATEWAY_PACKAGES, f"uninstall removed {sorted(removed)}")
    expect(
        [name.split("-")[0] for name in dist] == ["django_mcp_gateway"],
        f"uninstall removed {sorted(dist)}",
    )
    expect(after >= before - removed, "uninstall removed more")


STEPS = [
    ("startproject config . and the site's files", generate),
    ("the app imports from the wheel (admin: no dev tools)", imports_from_the_wheel),
    ("custom user model before the first migrate", user_model_before_first_migrate),
    ("check", check),
    ("check --deploy, DEBUG off, the site's key", check_deploy),
    ("makemigrations --check (BigAutoField, AutoField)", migrations_complete),
    ("migrate", migrate),
    ("management commands with an email user", commands),
    ("gunicorn, SDK client both eras, RFC 9728", serve_at_root),
    ("the same under SCRIPT_NAME=/sub", serve_under_a_prefix),
    ("the site's own tests (mcp_gateway.testing)", own_tests),
    ("pip check", pip_check),
    ("pip uninstall removes only the app", uninstall),
]


def main(workdir: Path) -> int:
    site = Site(workdir)
    for name, action in STEPS:
        if not run_step(name, lambda action=action: action(site)):
            return 1
    print(f"hostsite: all steps passed (Python {sys.version.split()[0]})")
    return 0


def run_step(name: str, action: Any) -> bool:
    started = time.monotonic()
    try:
        action()
    except StepFailed as exc:
        print(f"FAIL  {name}\n{exc}", flush=True)
        return False
    print(f"ok    {name} ({time.monotonic() - started:.1f}s)", flush=True)
    return True


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
