"""The Dockerfile and compose file name real paths, pins and settings.

No Docker here (and no hadolint): these parse both files and check what a
typo would break, the probe path, the env names config/settings.py reads,
the pinned base images and the non-root user.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from django.urls import resolve

ROOT = Path(__file__).resolve().parents[2]
_SETTINGS = (ROOT / "config" / "settings.py").read_text()


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def _dockerfile() -> list[str]:
    return (ROOT / "Dockerfile").read_text().splitlines()


def test_every_service_has_a_healthcheck_or_is_a_one_shot() -> None:
    services = _compose()["services"]
    assert set(services) == {"app", "migrate", "postgres", "redis"}
    for name in ("app", "postgres", "redis"):
        assert services[name]["healthcheck"]["test"][0] == "CMD"


def test_probes_name_a_mounted_readiness_view() -> None:
    texts = [" ".join(_compose()["services"]["app"]["healthcheck"]["test"])]
    texts += [line for line in _dockerfile() if "readyz" in line]
    assert len(texts) == 2
    for text in texts:
        path = re.search(r"127\.0\.0\.1:8000(/\w+)", text)
        assert path is not None
        assert resolve(path.group(1)).url_name == "readyz"


def test_env_names_are_ones_the_settings_read() -> None:
    services = _compose()["services"]
    for name in ("app", "migrate"):
        for variable in services[name]["environment"]:
            assert re.search(rf"env\.\w+\(\s*\"{variable}\"", _SETTINGS), variable


def test_images_are_pinned_and_the_app_runs_as_non_root() -> None:
    lines = _dockerfile()
    base = next(line for line in lines if line.startswith("FROM "))
    assert re.fullmatch(r"FROM python:\d+\.\d+\.\d+-slim-\w+", base)
    assert any(re.fullmatch(r"USER [1-9]\d*", line) for line in lines)
    assert any("requirements/reference.txt" in line for line in lines)
    assert any(line.startswith("HEALTHCHECK ") for line in lines)
    for name in ("postgres", "redis"):
        assert re.fullmatch(
            r"\w+:\d+\.\d+(\.\d+)?-\w+", _compose()["services"][name]["image"]
        )


def test_the_server_command_is_one_the_reference_pins() -> None:
    cmd = next(line for line in _dockerfile() if line.startswith("CMD "))
    assert '"uvicorn", "config.asgi:application"' in cmd
    assert '"httptools"' in cmd
    pins = (ROOT / "requirements" / "reference.txt").read_text()
    assert re.search(r"^uvicorn==", pins, re.M)
    assert re.search(r"^httptools==", pins, re.M)
