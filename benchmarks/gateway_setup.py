"""Set up a fresh gateway database with the management commands.

Run by the runner with the project's interpreter and environment: migrates,
creates the tenants ``bench`` (demo.echo), ``list10`` (10 tools) and
``list200`` (200 tools) with a member and one API token each, seeds filler
tenants with ``mcp_seed``, and prints ``{"slug": "token", ...}`` as JSON.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from benchmarks import toolset  # noqa: E402

USER = "bench"


def engine_ids(slug: str) -> list[str]:
    if slug == "list200":
        return [toolset.generated_id(i) for i in range(toolset.GENERATED_COUNT)]
    if slug == "list10":
        return ["demo.echo", *(toolset.generated_id(i) for i in range(9))]
    return ["demo.echo"]


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def main(seed_tenants: int, seed_exposures: int) -> None:
    call_command("migrate", verbosity=0)
    tokens = {}
    for slug in toolset.MOUNTS:
        command("mcp_tenant", "create", slug)
        command("mcp_tenant", "add-member", slug, USER, "--create-user")
        command("mcp_expose", slug, *engine_ids(slug))
        tokens[slug] = command("mcp_token", "create", slug, "--user", USER)
    seeded = command(
        "mcp_seed", "--tenants", str(seed_tenants), "--exposures", str(seed_exposures)
    )
    print(seeded, file=sys.stderr)
    print(json.dumps(tokens))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
