"""Import rules of the package, read from the source (AST), not at run time.

- no module imports a private name (``_x``) of another module;
- no module imports a module of a higher layer (the order below);
- ``engines_app`` imports neither ``mcp_gateway`` nor ``mcp``: engines see
  the engine contract and nothing of the gateway or the SDK.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, module prefixes), lowest first. A module belongs to the layer
    # of its longest matching prefix.
    (
        "foundation",
        (
            "mcp_gateway.conf",
            "mcp_gateway.jsonrpc",
            "mcp_gateway.scopes",
            "mcp_gateway.naming",
            "mcp_gateway.errors",
            "mcp_gateway.generics",
            "mcp_gateway.oauth.net",
            "mcp_gateway.oauth.config",
            "mcp_gateway.compiled",
            "mcp_gateway.fingerprint",  # a pure function of a tool
            "mcp_gateway.engine_secrets.keys",
            "mcp_gateway.dispatch.versions",  # constants only
            "mcp_gateway.db",  # database backends: Django's, one method each
        ),
    ),
    (
        "models",
        (
            "mcp_gateway.models",
            "mcp_gateway.migrations",
            "mcp_gateway.audit.models",
            "mcp_gateway.audit.callrecord",
            "mcp_gateway.credentials",
            "mcp_gateway.engine_secrets.models",
        ),
    ),
    (
        "telemetry",
        ("mcp_gateway.observability.metrics", "mcp_gateway.observability.tracing"),
    ),
    ("limits", ("mcp_gateway.limits",)),
    ("runtime", ("mcp_gateway.runtime",)),
    (
        "domain",
        (
            "mcp_gateway.catalog",
            "mcp_gateway.engine_secrets.store",
            "mcp_gateway.engine_secrets.runtime",
            "mcp_gateway.tokens",
            "mcp_gateway.users",
            "mcp_gateway.bus",
            "mcp_gateway.principals",
            "mcp_gateway.oauth",
            "mcp_gateway.backends",
        ),
    ),
    ("observation", ("mcp_gateway.observability",)),
    ("audit", ("mcp_gateway.audit", "mcp_gateway.audit_chain")),
    (
        "bookkeeping",
        (
            "mcp_gateway.bookkeeping",
            "mcp_gateway.signals",
            "mcp_gateway.engine_secrets.service",
            "mcp_gateway.call_approvals",
        ),
    ),
    ("dispatch", ("mcp_gateway.dispatch",)),
    ("endpoint", ("mcp_gateway.endpoint",)),
    (
        "site",
        (
            "mcp_gateway",  # the package itself, its shims
            "mcp_gateway.urls",
            "mcp_gateway.admin",
            "mcp_gateway.api",
            "mcp_gateway.forms",
            "mcp_gateway.management",
            "mcp_gateway.checks",
            "mcp_gateway.apps",
            "mcp_gateway.testing",
            "mcp_gateway.engine_secrets.checks",
        ),
    ),
)


def _modules(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _imports(module: str, path: Path) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) of every import."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                yield base, alias.name, node.lineno


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    return None if best is None else best[1]


def _is_module(name: str) -> bool:
    dotted = ROOT.joinpath(*name.split("."))
    return dotted.with_suffix(".py").exists() or (dotted / "__init__.py").exists()


GATEWAY = list(_modules("mcp_gateway"))


def test_every_module_has_a_layer():
    assert [module for module, _ in GATEWAY if _layer(module) is None] == []


def test_every_prefix_names_a_module():
    names = {module for module, _ in GATEWAY}
    stale = [
        prefix
        for _, prefixes in LAYERS
        for prefix in prefixes
        if not any(n == prefix or n.startswith(prefix + ".") for n in names)
    ]
    assert stale == []


def test_no_module_imports_a_private_name_of_another():
    found = []
    for module, path in [*GATEWAY, *_modules("engines_app")]:
        for imported, name, line in _imports(module, path):
            target = imported if name is None else name
            private = any(part.startswith("_") for part in imported.split(".")) or (
                name is not None and name.startswith("_") and name != "__future__"
            )
            if private and imported != "__future__" and imported != module:
                found.append(f"{path.relative_to(ROOT)}:{line} {imported} {target}")
    assert found == []


def test_no_layer_imports_a_higher_one():
    found = []
    for module, path in GATEWAY:
        own = _layer(module)
        assert own is not None
        for imported, name, line in _imports(module, path):
            if not imported.startswith("mcp_gateway"):
                continue
            target = imported
            if name is not None and _is_module(f"{imported}.{name}"):
                target = f"{imported}.{name}"  # ``from package import module``
            theirs = _layer(target)
            if theirs is not None and theirs > own:
                found.append(
                    f"{path.relative_to(ROOT)}:{line} ({LAYERS[own][0]}) imports "
                    f"{target} ({LAYERS[theirs][0]})"
                )
    assert found == []


@pytest.mark.parametrize("forbidden", ["mcp_gateway", "mcp", "mcp_types"])
def test_engines_app_imports_neither_the_gateway_nor_the_sdk(forbidden):
    found = [
        f"{path.relative_to(ROOT)}:{line} {imported}"
        for module, path in _modules("engines_app")
        for imported, _, line in _imports(module, path)
        if imported == forbidden or imported.startswith(forbidden + ".")
    ]
    assert found == []
