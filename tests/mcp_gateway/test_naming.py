from __future__ import annotations

import hashlib

import pytest

from mcp_gateway.naming import VALID_TOOL_NAME, tool_name


def test_unsupported_characters_become_underscores():
    assert tool_name("a.b:c/d e+f") == "a_b_c_d_e_f"


def test_an_empty_id_becomes_an_underscore():
    assert tool_name("") == "_"


def test_an_id_longer_than_64_characters_is_shortened_with_a_hash():
    engine_id = "pack." + "x" * 70

    name = tool_name(engine_id)

    digest = hashlib.sha256(engine_id.encode()).hexdigest()[:12]
    assert name == "pack_" + "x" * 46 + "_" + digest
    assert len(name) == 64


def test_a_shortened_name_keeps_the_portable_prefix_of_a_unicode_id():
    engine_id = "é" * 65

    name = tool_name(engine_id)

    digest = hashlib.sha256(engine_id.encode("utf-8")).hexdigest()[:12]
    assert name == "_" * 51 + "_" + digest


def test_long_ids_with_the_same_prefix_get_different_names():
    assert tool_name("a" * 65) != tool_name("a" * 66)


def test_an_id_of_exactly_64_characters_is_unchanged():
    engine_id = "a" * 64

    assert tool_name(engine_id) == engine_id


def test_an_id_of_exactly_64_characters_with_dots_is_only_made_portable():
    engine_id = "a." * 32

    assert tool_name(engine_id) == "a_" * 32


def test_an_already_valid_id_is_unchanged():
    assert tool_name("test_simple_text-2") == "test_simple_text-2"


def test_a_dotted_id_keeps_its_dashes():
    assert tool_name("support.classify-ticket") == "support_classify-ticket"


@pytest.mark.parametrize(
    "engine_id",
    [
        "",
        "_",
        "a",
        "demo.echo",
        "demo:echo",
        "support.classify-ticket",
        " ",
        "\n\t",
        "x" * 64,
        "x" * 65,
        "y" * 1000,
        "élan.vital",
        "日本語.ツール",
        "emoji.🙂.tool",
        "a\u0301",
        "null\x00byte",
        "../../etc/passwd",
        "ünïcödé" * 20,
    ],
)
def test_the_result_is_always_a_valid_tool_name(engine_id):
    assert VALID_TOOL_NAME.fullmatch(tool_name(engine_id))
