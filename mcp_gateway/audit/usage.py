"""Usage from the audit log: calls per tenant, tool, UTC day and outcome.

One aggregate query (``GROUP BY``), served by the audit table's
``mcp_gateway_call_usage`` index; ``manage.py mcp_usage`` and
``GET /api/usage/`` both read it. ``since`` is inclusive and ``until``
exclusive; a bare date is that day's UTC midnight.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, time
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from mcp_gateway.audit.models import ToolCall

FIELDS = ("tenant", "tool", "day", "outcome", "calls")


def parse_moment(value: str) -> datetime:
    """A date (UTC midnight) or an ISO 8601 date and time (naive: UTC).

    Raises:
        ValueError: neither.
    """
    try:
        day = parse_date(value)
        if day is not None:
            return datetime.combine(day, time.min, tzinfo=UTC)
        moment = parse_datetime(value)
        if moment is None:
            raise ValueError(value)
        if timezone.is_naive(moment):
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(value) from exc


def rows(
    tenant: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[dict[str, Any]]:
    """Calls per tenant, tool, UTC day and outcome; one query."""
    calls = ToolCall.objects.all()
    if tenant is not None:
        calls = calls.filter(tenant_slug=tenant)
    if since is not None:
        calls = calls.filter(created_at__gte=since)
    if until is not None:
        calls = calls.filter(created_at__lt=until)
    grouped = (
        calls.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("tenant_slug", "tool_name", "day", "outcome")
        .annotate(calls=Count("pk"))
        .order_by("tenant_slug", "day", "tool_name", "outcome")
    )
    return [
        {
            "tenant": row["tenant_slug"],
            "tool": row["tool_name"],
            "day": _day(row["day"]),
            "outcome": row["outcome"],
            "calls": row["calls"],
        }
        for row in grouped
    ]


def _day(value: date | datetime | str) -> str:
    return value if isinstance(value, str) else value.isoformat()[:10]


def as_csv(found: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(found)
    return out.getvalue()


def as_json(found: list[dict[str, Any]]) -> str:
    return json.dumps(found, indent=2)
