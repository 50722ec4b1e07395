# The reference deployment's image: the reference project on uvicorn (ASGI,
# httptools), exact pins from requirements/reference.txt, run as a non-root
# user. See docs/deployment.md, "Beyond one machine".
FROM python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    MCP_SERVER_INTERFACE=asgi

WORKDIR /app
COPY requirements/reference.txt requirements/reference.txt
RUN pip install --no-deps -r requirements/reference.txt
COPY . .
RUN pip install --no-deps -e . \
    && python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 --home-dir /app mcpgw

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2).status != 200)"]
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--http", "httptools", "--workers", "2"]
