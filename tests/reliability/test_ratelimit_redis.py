"""Rate limits in Redis, shared by every process using it."""

from __future__ import annotations

import pytest
from django.core.cache import caches

from engines_app.context import Principal
from mcp_gateway.limits import ratelimit
from mcp_gateway.models import Tenant
from tests.services import redis_running

REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:6379/7",
}


pytestmark = pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379")


@pytest.fixture
def redis_cache(settings):
    settings.CACHES = {**settings.CACHES, "default": REDIS}
    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()


def test_redis_counts_are_shared_and_refuse_past_the_burst(redis_cache, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(calls_per_minute=3)
    tenant.refresh_from_db()
    alice = Principal(tenant="acme", user="alice", token="abc")

    verdicts = [ratelimit.check(tenant, alice).allowed for _ in range(4)]

    assert verdicts == [True, True, True, False]
    keys = redis_cache._cache.get_client().keys("*mcpgw:rl:*")
    assert len(keys) == 1
