"""The metrics view: the series in Prometheus' text format, behind a token.

``METRICS_TOKEN`` unset (the default): 404, as if nothing were mounted, and
no series are kept. Set: a scrape must send ``Authorization: Bearer
<METRICS_TOKEN>``; without it, or with another token, the answer is 401
with a ``WWW-Authenticate: Bearer`` challenge (a mounted, configured view is
no secret; its token is). Only GET and HEAD are served.
"""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from mcp_gateway.conf import gateway_settings
from mcp_gateway.observability import metrics


@never_cache
@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    token = gateway_settings().METRICS_TOKEN
    if not token or not metrics.available():
        return HttpResponse("Not found.", status=404, content_type="text/plain")
    if not _bearer_matches(request, token):
        response = HttpResponse("Unauthorized.", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = metrics.exposition()
    return HttpResponse(body, content_type=content_type)


def _bearer_matches(request: HttpRequest, token: str) -> bool:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())
