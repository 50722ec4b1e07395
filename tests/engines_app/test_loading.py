from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from demo import basic
from engines_app.engine import FunctionEngine
from engines_app.errors import DuplicateRegistrationError
from engines_app.loading import autodiscover, load_dotted
from engines_app.registry import default_registry
from tests.engines import ColonEcho

DISCOVERABLE = "tests.discoverable"


def test_loading_a_pack_registers_each_engine(registry):
    load_dotted(["demo.basic.ENGINES"], registry)

    assert registry.ids() == sorted(cls.id for cls in basic.ENGINES)
    assert isinstance(registry.get("demo.echo"), basic.Echo)


def test_loading_a_class_registers_an_instance(registry):
    load_dotted(["tests.engines.ColonEcho"], registry)

    assert isinstance(registry.get("demo:echo"), ColonEcho)


def test_loading_an_instance_registers_that_instance(registry):
    load_dotted(["tests.discoverable.engines.hello"], registry)

    from tests.discoverable.engines import hello

    assert registry.get("discoverable.hello") is hello


@pytest.mark.parametrize(
    "path",
    [
        "demo.basic.ENGINES",
        "tests.engines.ColonEcho",
        "tests.discoverable.engines.hello",
    ],
)
def test_loading_twice_is_harmless(registry, path):
    load_dotted([path], registry)
    first = list(registry)

    load_dotted([path], registry)

    assert list(registry) == first


def test_loading_a_different_engine_under_a_taken_id_is_refused(registry):
    registry.register(
        FunctionEngine("demo.echo", "Impostor", "Not the demo echo.", lambda c: None)
    )

    with pytest.raises(DuplicateRegistrationError, match=r"demo\.echo"):
        load_dotted(["demo.basic.Echo"], registry)


def test_a_bad_dotted_path_raises_import_error(registry):
    with pytest.raises(ImportError):
        load_dotted(["demo.basic.NOPE"], registry)


@pytest.fixture(autouse=True)
def discoverable_unloaded() -> Iterator[None]:
    """Forget the test app's ``engines`` module before and after each test.

    Importing it registers an engine in the default registry, which no other
    test may see.
    """
    sys.modules.pop(f"{DISCOVERABLE}.engines", None)
    default_registry.unregister("discoverable.hello")
    yield
    sys.modules.pop(f"{DISCOVERABLE}.engines", None)
    default_registry.unregister("discoverable.hello")


def test_autodiscover_imports_the_engines_module_of_an_installed_app(settings):
    assert "discoverable.hello" not in default_registry

    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, DISCOVERABLE]
    autodiscover()

    assert "discoverable.hello" in default_registry


def test_autodiscover_ignores_apps_that_are_not_installed():
    autodiscover()

    assert "discoverable.hello" not in default_registry
