"""The in-process bus says when more than one process may share it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_gateway import bus
from mcp_gateway.bus import backends, core, presence
from tests.live.servers import free_port
from tests.mcp_gateway.bus.helpers import Recorder, eventually
from tests.mcp_gateway.bus.peer import ROOT, WAIT_SECONDS


@pytest.mark.parametrize(
    ("argv", "environ", "evidence"),
    [
        (["/venv/bin/gunicorn", "config.wsgi", "-w", "4"], {}, "gunicorn runs 4"),
        (["/venv/bin/gunicorn", "config.wsgi", "-w4"], {}, "gunicorn runs 4"),
        (["/venv/bin/uvicorn", "app", "--workers=3"], {}, "uvicorn runs 3"),
        (["/venv/bin/uvicorn", "app", "--workers", "1"], {}, None),
        (["/venv/bin/gunicorn", "app"], {"WEB_CONCURRENCY": "2"}, "runs 2"),
        (["/venv/bin/gunicorn", "app"], {"GUNICORN_CMD_ARGS": "--workers 5"}, "5"),
        (["/venv/bin/gunicorn", "app", "-c", "conf.py"], {}, "may start several"),
        (["/lib/python3.11/site-packages/gunicorn/__main__.py", "-w", "2"], {}, "2"),
        (["/venv/bin/gunicorn", "app"], {}, None),
        (["manage.py", "runserver", "--workers", "4"], {}, None),
        (["/venv/bin/pytest", "-w", "9"], {}, None),
        ([], {}, None),
    ],
)
def test_the_command_line_says_whether_several_processes_serve(
    argv, environ, evidence, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # no gunicorn.conf.py here

    found = presence.server_evidence(argv, environ)

    if evidence is None:
        assert found is None
    else:
        assert evidence in (found or "")


def test_a_gunicorn_configuration_file_means_workers_cannot_be_ruled_out(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gunicorn.conf.py").write_text("workers = 4\n")

    found = presence.server_evidence(["/venv/bin/gunicorn", "app"], {})

    assert "may start several workers" in (found or "")


def test_start_up_warns_when_the_in_process_bus_serves_several_workers(
    settings, monkeypatch, caplog
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    monkeypatch.setattr(sys, "argv", ["/venv/bin/gunicorn", "config.wsgi", "-w", "2"])

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        bus.warn_if_shared()

    assert "The change bus is in-process" in caplog.text
    assert "gunicorn runs 2 workers" in caplog.text


def test_start_up_is_quiet_when_a_shared_backend_is_used(settings, monkeypatch, caplog):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "off"}
    monkeypatch.setattr(sys, "argv", ["/venv/bin/gunicorn", "config.wsgi", "-w", "2"])

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        bus.warn_if_shared()

    assert caplog.text == ""


HOLD = """
import sys
from pathlib import Path
from mcp_gateway.bus.presence import Registration
registration = Registration(Path(sys.argv[1]))
print(registration.path, flush=True)
sys.stdin.read()
"""


class Holder:
    """A process registered as listening in ``directory``, until killed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(directory)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.process.stdout is not None
        self.path = Path(self.process.stdout.readline().strip())

    def kill(self) -> None:
        self.process.kill()  # by the pid this test started
        self.process.wait(WAIT_SECONDS)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def other_process(tmp_path) -> Iterator[Holder]:
    directory = presence.registry_directory(tmp_path / "db.sqlite3")
    assert directory is not None
    holder = Holder(directory)
    yield holder
    holder.kill()


def test_a_registered_process_counts_while_it_lives(other_process):
    assert presence.count_live(other_process.directory) == 1

    other_process.kill()

    assert presence.count_live(other_process.directory) == 0
    assert not other_process.path.exists()  # the stale file is gone


def local_bus(directory: Path | None) -> core.Bus:
    return core.Bus(plan=backends.Plan("local", (directory,)))


def test_listening_beside_another_process_warns(other_process, caplog):
    listener = local_bus(other_process.directory)
    try:
        with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
            listener.subscribe(bus.CatalogChanged, Recorder())
            eventually(lambda: listener.stats().listening)

        assert "1 other process(es) already listen on this database" in caplog.text
        assert presence.count_live(other_process.directory) == 2
    finally:
        listener.close()
    assert presence.count_live(other_process.directory) == 1


@pytest.mark.django_db(transaction=True)
def test_publishing_where_another_process_listens_warns_once(other_process, caplog):
    publisher = local_bus(other_process.directory)

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        publisher.publish(bus.CatalogChanged(1, 2), using="default")
        publisher.publish(bus.CatalogChanged(1, 3), using="default")

    assert caplog.text.count("1 other process(es) listen on this database") == 1


@pytest.mark.django_db(transaction=True)
def test_a_lone_process_is_not_warned(tmp_path, caplog, fresh_bus):
    listener = local_bus(presence.registry_directory(tmp_path / "db.sqlite3"))
    try:
        with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
            listener.subscribe(bus.CatalogChanged, Recorder())
            eventually(lambda: listener.stats().listening)
            listener.publish(bus.CatalogChanged(1, 2), using="default")
    finally:
        listener.close()

    assert caplog.text == ""


@pytest.mark.parametrize("name", ["", ":memory:", "file:x?mode=memory&cache=shared"])
def test_an_in_memory_database_has_no_registry(name):
    assert presence.registry_directory(name) is None


@pytest.mark.parametrize(
    "server",
    [
        ["gunicorn", "config.wsgi", "--workers", "2", "--bind"],
        ["uvicorn", "config.asgi:application", "--workers", "2", "--port"],
    ],
)
def test_a_server_started_with_two_workers_on_sqlite_says_so(server, tmp_path):
    port = free_port()
    log = tmp_path / "server.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    env.pop("CACHE_URL", None)
    env.pop("MCP_BUS", None)
    address = f"127.0.0.1:{port}" if server[0] == "gunicorn" else str(port)
    program = str(Path(sys.executable).parent / server[0])
    with log.open("wb") as output:
        started = subprocess.Popen(
            [program, *server[1:], address],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=output,
        )
        try:
            eventually(lambda: log.read_text().count("change bus is in-process") == 2)
        finally:
            started.terminate()  # by the pid this test started
            started.wait(WAIT_SECONDS)

    assert f"{server[0]} runs 2 workers" in log.read_text()
