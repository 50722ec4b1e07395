"""engines_app knows nothing of MCP; its contract knows nothing of Django."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engines_app

PACKAGE = Path(engines_app.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def roots(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_modules(path)}


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_scan_sees_the_package():
    assert PACKAGE / "engine.py" in SOURCES
    assert PACKAGE / "context.py" in SOURCES
    assert "django" in roots(PACKAGE / "loading.py")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engines_app_imports_neither_mcp_gateway_nor_mcp(path):
    assert roots(path).isdisjoint({"mcp_gateway", "mcp"})


@pytest.mark.parametrize("name", ["engine.py", "context.py"])
def test_the_engine_contract_imports_nothing_from_django(name):
    assert "django" not in roots(PACKAGE / name)
