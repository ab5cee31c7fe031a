"""The site as an ASGI application: `make serve` (gunicorn with uvicorn workers) and `make demo`
(uvicorn --reload) serve it. Views stay synchronous (Django runs each request's sync code in a
thread of its own); only streaming endpoints are async.

Under ASGI a persistent database connection would be left behind by every request's thread,
so PostgreSQL connections come from a per-process pool here (``BABEL_PG_POOL``, on unless
set; see settings)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "babel_site.settings")
os.environ.setdefault("BABEL_PG_POOL", "true")
application = get_asgi_application()
