"""Babel settings: everything comes from the environment, read once, here.

Embedded default (nothing configured): SQLite beside manage.py, Celery tasks run eagerly
in-process, the offline memory engine, no API key. Scale-out: DATABASE_URL → PostgreSQL,
REDIS_URL → Redis broker + `celery -A babel_site worker`. See `.env.example`.
A bad value fails at start with ImproperlyConfigured naming the variable.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A local, git-ignored .env (written by `make demo`) fills in what the environment leaves
# unset; the environment always wins. Production sets real variables and has no .env.
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _bool(name: str, default: bool) -> bool:
    raw = env.str(name, default="")
    if raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true/false (or 1/0), got {raw!r}.")


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.str(name, default="")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be ≥ {minimum}, got {value}.")
    return value


def _float(name: str, default: float) -> float:
    raw = env.str(name, default="")
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.") from None
    if value < 0:
        raise ImproperlyConfigured(f"{name} must be ≥ 0, got {value}.")
    return value


def _url(name: str, schemes: set[str]) -> str:
    raw = env.str(name, default="").strip()
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise ImproperlyConfigured(f"{name} must be a URL with scheme {allowed}; got {raw!r}.")
    return raw


# Production is the default: debug pages (settings, URL patterns) only when asked for.
DEBUG = _bool("DJANGO_DEBUG", False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false (the default); "
            "`make demo` writes a development key and DJANGO_DEBUG=true into .env."
        )
    SECRET_KEY = "babel-insecure-development-key-change-me"

ALLOWED_HOSTS = [
    host.strip()
    for host in env.str("ALLOWED_HOSTS", default="127.0.0.1,localhost,testserver").split(",")
    if host.strip()
]
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name at least one host.")

INSTALLED_APPS = [
    "axes",
    "csp",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "campaigns",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app server itself (gunicorn's uvicorn workers in production):
    # WhiteNoise (compressed, cache headers, no separate web server needed), its file bodies
    # read off the event loop under ASGI.
    "babel_site.middleware.StaticFilesMiddleware",
    "babel_site.middleware.RequestBodyLimitMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: it turns the lockout django-axes flags during authentication into a page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "babel_site.urls"
WSGI_APPLICATION = "babel_site.wsgi.application"
ASGI_APPLICATION = "babel_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
# PostgreSQL: prepared statements for the pack loader (turn off behind a connection pooler
# that cannot keep them, e.g. PgBouncer before 1.21 in transaction mode).
BABEL_PG_PREPARE = _bool("BABEL_PG_PREPARE", True)
DATABASE_URL = env.str("DATABASE_URL", default="").strip()
# PostgreSQL connections: a pool per process where the web is served by ASGI (babel_site/asgi.py
# turns it on before the settings load), persistent per-thread connections elsewhere (Celery
# workers, management commands, tests).
BABEL_PG_POOL = _bool("BABEL_PG_POOL", False)
BABEL_PG_POOL_SIZE = _int("BABEL_PG_POOL_SIZE", 8, minimum=1)
if DATABASE_URL:
    if urlparse(DATABASE_URL).scheme not in {"postgres", "postgresql", "sqlite"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be postgres://… or sqlite:///…; got {DATABASE_URL!r}."
        )
    try:
        _db = env.db_url_config(DATABASE_URL)
    except Exception as exc:  # django-environ raises assorted errors on bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if _db["ENGINE"].endswith("postgresql"):
        if BABEL_PG_POOL:
            # Under ASGI each request's sync code runs in a thread of its own, so a
            # persistent connection would be left behind by every request (Django: "when
            # using ASGI, persistent connections should be disabled"). psycopg's pool keeps
            # the connections instead, prepared statements and all; a request that needs
            # one waits up to the timeout when all are in use.
            _db["CONN_MAX_AGE"] = 0
            _db.setdefault("OPTIONS", {})["pool"] = {
                "min_size": 1,
                "max_size": BABEL_PG_POOL_SIZE,
                "timeout": 20,
            }
        else:
            _db.setdefault("CONN_MAX_AGE", 60)
            _db["CONN_HEALTH_CHECKS"] = True
        if BABEL_PG_PREPARE:
            # The pack loader's batched reads are prepared once per connection and run on
            # a generic plan (`campaigns.reads.precompiled.run_all`): planning them cost more than
            # running them. Django's own queries are never prepared (client-side binding);
            # the threshold only lets an explicit prepare through.
            _options = _db.setdefault("OPTIONS", {})
            _options.setdefault("prepare_threshold", 2**31 - 1)
            _options["options"] = (
                _options.get("options", "") + " -c plan_cache_mode=force_generic_plan"
            ).strip()
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}
if _db["ENGINE"].endswith("sqlite3"):
    # Web and an eager/worker process share the file: wait for locks instead of failing.
    _db.setdefault("OPTIONS", {})
    _db["OPTIONS"].setdefault("timeout", 20)
    _db["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
    # A page cache that holds a long campaign's hot pages (SQLite's default is 2 MiB):
    # ranked retrieval looks up a thousand turns by id at 50,000 turns, and with the
    # default each lookup went to the operating system for its page (the README's pack
    # speed table). Allocated as used, per connection.
    _db["OPTIONS"].setdefault(
        "init_command", f"PRAGMA cache_size=-{_int('BABEL_SQLITE_CACHE_KIB', 65536, minimum=0)}"
    )
    # Tests run on a file too, as the app does, not on SQLite's in-memory default: a live
    # server's request threads would all share the in-memory database's one connection,
    # and a statement that calls a Python SQL function (the term rows' `babel_terms`)
    # can then deadlock with another thread binding its parameters (one waits for the
    # GIL inside SQLite, the other for the connection's mutex holding the GIL). With a
    # file each thread opens its own connection. In shared memory where there is one;
    # the process id keeps concurrent runs apart (pytest-xdist adds its worker's suffix).
    _test_dir = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    _test_file = _test_dir / f"babel-test-{os.getpid()}.sqlite3"
    _db.setdefault("TEST", {}).setdefault("NAME", str(_test_file))
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------
REDIS_URL = _url("REDIS_URL", {"redis", "rediss"})
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = _int("CELERY_TASK_TIME_LIMIT", 300, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = max(1, CELERY_TASK_TIME_LIMIT - 30)

# --- Live streaming (issue 25): Redis keys of the live channels, and how long one SSE
# connection lasts before the browser reconnects (resuming where it was).
BABEL_LIVE_PREFIX = env.str("BABEL_LIVE_PREFIX", default="babel:live")
BABEL_LIVE_MAX_SECONDS = _int("BABEL_LIVE_MAX_SECONDS", 600, minimum=1)
CELERY_TASK_TRACK_STARTED = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Model backends (read once) ---------------------------------------------------------
GEMINI_API_KEY = env.str("GEMINI_API_KEY", default="") or env.str("GOOGLE_API_KEY", default="")
GEMINI_BASE_URL = _url("GEMINI_BASE_URL", {"http", "https"})
OPENAI_BASE_URL = _url("OPENAI_BASE_URL", {"http", "https"})
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
LLM_TIMEOUT_SECONDS = _int("BABEL_LLM_TIMEOUT", 30, minimum=1)
# The CPU presets (lmstudio:, ollama:, llamacpp:): a small model on a CPU takes minutes.
LLM_CPU_TIMEOUT_SECONDS = _int("BABEL_LLM_CPU_TIMEOUT", 300, minimum=1)
# "Test connection" and the window probes (llama.cpp /props, Ollama /api/show…).
BABEL_LLM_CHECK_TIMEOUT = _float("BABEL_LLM_CHECK_TIMEOUT", 5.0)
# A model window read from its server is cached this long per (server, model); a server
# that did not answer is asked again after a minute.
BABEL_LLM_WINDOW_TTL = _int("BABEL_LLM_WINDOW_TTL", 600, minimum=0)
# Tokens kept free for an agent's answer inside its model's window when the participant
# sets no max output (and sent to the server as its output limit).
BABEL_DEFAULT_MAX_OUTPUT_TOKENS = _int("BABEL_DEFAULT_MAX_OUTPUT_TOKENS", 1024, minimum=1)
# Hosts a participant's own base URL may point at (the server calls them: no arbitrary
# addresses from a form). Loopback and the hosts of GEMINI_BASE_URL / OPENAI_BASE_URL are
# always allowed; "*" allows any.
BABEL_LLM_HOSTS = [
    host.strip().lower()
    for host in env.str("BABEL_LLM_HOSTS", default="").split(",")
    if host.strip()
]
# The memory workers' model (digests, definitions, vetting) when a campaign names none:
# unset → Gemini with a key, an OpenAI-compatible server with OPENAI_BASE_URL, else offline.
BABEL_MEMORY_MODEL = env.str("BABEL_MEMORY_MODEL", default="").strip()
# Backoff base between retries of a failed model call (then 2×, 4×…), in seconds.
BABEL_LLM_RETRY_BASE_DELAY = _float("BABEL_LLM_RETRY_BASE_DELAY", 0.5)
# After a model has failed all its retries, skip it for this long (the fallback is used).
BABEL_LLM_BREAKER_SECONDS = _int("BABEL_LLM_BREAKER_SECONDS", 60, minimum=0)
# Gemini explicit context caching of each agent's frozen prefix (system instruction):
# off by default; prefixes under the token floor (the provider's minimum) go uncached.
BABEL_GEMINI_CONTEXT_CACHE = _bool("BABEL_GEMINI_CONTEXT_CACHE", False)
BABEL_GEMINI_CACHE_MIN_TOKENS = _int("BABEL_GEMINI_CACHE_MIN_TOKENS", 2048, minimum=0)
BABEL_GEMINI_CACHE_TTL = _int("BABEL_GEMINI_CACHE_TTL", 3600, minimum=60)
# World Bible hydration reads at most this many turns per batch (one task step).
BABEL_HYDRATE_BATCH_TURNS = _int("BABEL_HYDRATE_BATCH_TURNS", 2000, minimum=1)

# --- Babel ------------------------------------------------------------------------------
BABEL_MAX_CONTENT_CHARS = _int("BABEL_MAX_CONTENT_CHARS", 100_000, minimum=1)
# The last round a campaign may reach (the clock, turns, reveal and invalidation rounds).
# Well inside the 32-bit columns, so no round arithmetic can overflow the database.
BABEL_MAX_ROUND = 100_000

# --- Security: the production profile (README, Deploy) ---------------------------------
# Behind a TLS proxy, name the header it sets: BABEL_PROXY_SSL_HEADER="X-Forwarded-Proto: https".
_proxy_header = env.str("BABEL_PROXY_SSL_HEADER", default="").strip()
if _proxy_header:
    _name, _, _value = _proxy_header.partition(":")
    if not _name.strip() or not _value.strip():
        raise ImproperlyConfigured(
            "BABEL_PROXY_SSL_HEADER must look like 'X-Forwarded-Proto: https', "
            f"got {_proxy_header!r}."
        )
    SECURE_PROXY_SSL_HEADER = (
        "HTTP_" + _name.strip().upper().replace("-", "_"),
        _value.strip(),
    )
SECURE_SSL_REDIRECT = _bool("BABEL_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = _int("BABEL_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _bool("BABEL_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = _bool("BABEL_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = _bool("BABEL_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"

# Content Security Policy: scripts only from this site and never inline, so a template
# that escapes correctly today cannot become an XSS tomorrow. Inline style attributes stay
# allowed (they run no code; the admin and htmx's indicator styles use them).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Bodies: JSON nested deeper than this is refused (a 400, never a RecursionError 500).
BABEL_MAX_JSON_DEPTH = 32
# Any body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 naming the limit; a transcript import
# has a limit of its own.
DATA_UPLOAD_MAX_MEMORY_SIZE = _int("BABEL_MAX_BODY_BYTES", 2_621_440, minimum=1024)
BABEL_MAX_IMPORT_BYTES = _int("BABEL_MAX_IMPORT_BYTES", 256 * 1024 * 1024, minimum=1024)
# Helper processes that count a large import's tokens beside the request
# (`context_engine.token_pool`): by default one per core beyond the request's, at most 4.
BABEL_IMPORT_COUNT_PROCESSES = _int(
    "BABEL_IMPORT_COUNT_PROCESSES", max(0, min(4, (os.cpu_count() or 1) - 1)), minimum=0
)

# Password guessing: django-axes counts failed logins (form and token endpoint) per
# username and per address; the 11th try within 15 minutes is refused (429). The count
# lives where every web process sees it: Redis with REDIS_URL, else the database.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = (
    "axes.handlers.cache.AxesCacheHandler"
    if REDIS_URL
    else "axes.handlers.database.AxesDatabaseHandler"
)
AXES_FAILURE_LIMIT = _int("BABEL_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=_int("BABEL_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "campaigns.lockout.lockout_response"
AXES_VERBOSE = False
# Requests per user (or address) on writes; the token endpoint is limited by failures.
BABEL_WRITE_RATE = env.str("BABEL_WRITE_RATE", default="300/minute").strip()
if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", BABEL_WRITE_RATE):
    raise ImproperlyConfigured(
        f"BABEL_WRITE_RATE must look like '300/minute' (per s/m/h/d), got {BABEL_WRITE_RATE!r}."
    )

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
CACHES["default"]["KEY_PREFIX"] = "babel"

# --- Auth, API --------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    # Not a rule for passwords: revokes the user's API token after a password change.
    {"NAME": "campaigns.services.tokens.RevokeTokenOnPasswordChange"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["campaigns.api.throttles.WriteRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"writes": BABEL_WRITE_RATE},
    # JSON in and out: form bodies would hand the services strings where they expect lists.
    "DEFAULT_PARSER_CLASSES": ["campaigns.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "campaigns.api.pagination.BabelPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "campaigns.api.schema.BabelAutoSchema",
    # Services raise django's ValidationError keyed by field: answered as 400 {field: [...]}.
    "EXCEPTION_HANDLER": "campaigns.api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Babel API",
    "DESCRIPTION": "Campaigns, turns with visibility, lore, digests and prompt packs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {
        "schemas": {
            "Error": {
                "type": "object",
                "description": "Field name → list of messages, or {'detail': message}.",
                "additionalProperties": {},
            }
        }
    },
    "ENUM_NAME_OVERRIDES": {
        "ExperimentStatusEnum": "campaigns.models.Experiment.Status",
        "JobStatusEnum": "campaigns.models.Job.Status",
        "LoreStatusEnum": "campaigns.models.LoreEntry.Status",
        "TurnKindEnum": "campaigns.models.Turn.Kind",
        "ParticipantKindEnum": "campaigns.models.Participant.Kind",
        "JobKindEnum": "campaigns.models.Job.Kind",
        "SummaryKindEnum": "campaigns.models.Summary.Kind",
        "InvitationStatusEnum": "campaigns.models.Invitation.Status",
    },
}

# --- i18n, static -----------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve from the app directories too, so a server started without `collectstatic`
# (tests, `make demo`) still has its static files; `make serve` collects them first.
WHITENOISE_USE_FINDERS = True
# Before the first `collectstatic` there is no STATIC_ROOT yet; the finders serve instead.
warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "campaigns": {"handlers": ["console"], "level": env.str("BABEL_LOG_LEVEL", "INFO")}
    },
}
