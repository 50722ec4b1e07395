"""Real servers (gunicorn, uvicorn) and a raw HTTP client for them."""
