"""SearchTweak settings: one file, driven by environment variables.

With no environment variables at all it runs the embedded default: SQLite in
db.sqlite3, Celery tasks executed eagerly in the web process, DEBUG on and a development
secret. Production sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, DEBUG=false and
ALLOWED_HOSTS (see docker-compose.yml).

Longer than our ~450-line mark on purpose: the whole configuration in one file, each
environment variable read once with its meaning above it (docs/operations/settings.md is
generated from these comments).
"""

import hashlib
import os
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from searchtweak.envvars import (
    env_behind_tls_proxy,
    env_bool,
    env_email_url,
    env_int,
    env_list,
    env_networks,
    env_str,
    env_url,
    group_roles_parse,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# Development mode: error pages with tracebacks, plain HTTP, loopback engines reachable; off
# in production.
DEBUG = env_bool("DEBUG", default=True)
_DEV_SECRET = "dev-only-secret-key-not-for-production-0123456789abcdefghijklmnop"
# Django's signing secret, from which endpoint and judge secrets' encryption key is derived;
# required when DEBUG is off (a development key otherwise).
SECRET_KEY = env_str("SECRET_KEY") or ("" if not DEBUG else _DEV_SECRET)
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY: must be set when DEBUG is false")
# The host names this server answers to.
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"]
)
# Origins (https://host) allowed to post forms when a TLS proxy sits in front.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "searchtweak.errors.csrf_failure"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "csp",
    "axes",
    "audit",
    "searchtweak",
    "sso",
    "notifications",
    "evaluations",
    "judgments",
    "metrics",
    "judges",
    "schedules",
    "behaviour",
    "sharing",
    "guide",
    "monitoring",
]

MIDDLEWARE = [
    # First: its time covers every other middleware (monitoring.middleware).
    "monitoring.middleware.RequestMetricsMiddleware",
    # The client address on the audit rows a request's services write (audit.context).
    "audit.middleware.ClientAddressMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "searchtweak.middleware.QueryNulMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "searchtweak.middleware.NoStoreMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "searchtweak.errors.NotFoundPageMiddleware",
    # Last, as axes asks: it turns a login that its backend refused into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "searchtweak.urls"
WSGI_APPLICATION = "searchtweak.wsgi.application"

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
                "searchtweak.context_processors.team_context",
            ],
        },
    },
]

# SQLite: a transaction that reads and then writes while another process writes fails at
# once with "database is locked" (waiting could deadlock, so SQLite does not wait). Taking
# the write lock at BEGIN makes such transactions wait their turn, up to `timeout` seconds:
# the dev server's threads and a worker process share one file.
_SQLITE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE"}

# The database, postgres://user:password@host:5432/name; unset: the SQLite file db.sqlite3.
_database_url = env_url("DATABASE_URL", schemes=("postgres", "postgresql", "sqlite"))
if _database_url:
    # Health checks: a connection kept for reuse is tested (cheaply, only when reused)
    # before a request uses it, so a database restart or a cut connection costs a
    # reconnect instead of one 500 per worker.
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60,
                                                  conn_health_checks=True)}
    if _database_url.startswith("sqlite"):
        DATABASES["default"]["OPTIONS"] = dict(_SQLITE_OPTIONS)
    if _database_url.startswith("postgres"):
        options = DATABASES["default"].setdefault("OPTIONS", {})
        # The grading hot path's statements (searchtweak.sql) bind on the server and are
        # prepared once a connection has run them twice; Django's own client-binding
        # cursors never prepare. Turn off behind a pooler in transaction mode that cannot
        # keep them.
        # DATABASE_PREPARED_STATEMENTS: prepare them; false behind a transaction-mode pooler.
        if env_bool("DATABASE_PREPARED_STATEMENTS", True):
            options["prepare_threshold"] = 2
        # PostgreSQL compiles a statement to machine code (JIT) when its estimated cost
        # passes jit_above_cost. Ours are short; a judge's claim of 40 results, estimated by
        # statistics from before a large fetch, crossed it and spent 0.9 s compiling for
        # 1 ms of work, on every claim. Turn it back on with DATABASE_JIT; behind PgBouncer,
        # which refuses the startup option unless told to ignore it, turn JIT off in the
        # server's settings instead.
        # DATABASE_JIT: let PostgreSQL JIT-compile statements (off: connections set jit=off).
        if not env_bool("DATABASE_JIT", False):
            options["options"] = "-c jit=off"
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            # A file, not memory, so a worker process started by a test sees the same rows;
            # named after the checkout, so `pytest --reuse-db` finds it again next run and
            # two checkouts on one machine do not share one (xdist adds `_gw0`, ...).
            "TEST": {"NAME": Path(tempfile.gettempdir()) / (
                f"searchtweak-test-{hashlib.sha1(str(BASE_DIR).encode()).hexdigest()[:10]}"
                ".sqlite3")},
            "OPTIONS": dict(_SQLITE_OPTIONS),
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "searchtweak.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (searchtweak.login_throttle, django-axes): failures within the last
# LOGIN_LOCKOUT_MINUTES, counted per username + client address and per client address.
# `manage.py axes_reset` (or axes_reset_ip / axes_reset_username) lifts a lock at once.
# LOGIN_FAILURE_LIMIT: failed logins for one username from one client address that lock it out.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
# Failed logins from one client address, whatever the usernames, that lock it out.
LOGIN_FAILURE_LIMIT_PER_ADDRESS = env_int("LOGIN_FAILURE_LIMIT_PER_ADDRESS", 20, minimum=1)
# How long failures count and a lock lasts, in minutes.
LOGIN_LOCKOUT_MINUTES = env_int("LOGIN_LOCKOUT_MINUTES", 10, minimum=1)
# Reverse proxies in front of the app that append to X-Forwarded-For; 0 trusts none and
# takes the connection's address (behind a proxy that would be the proxy's, for everyone).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
# Passwords of SearchTweak's own; false leaves single sign-on only (superusers excepted).
LOCAL_LOGIN = env_bool("LOCAL_LOGIN", default=True)
AUTHENTICATION_BACKENDS = [
    "searchtweak.login_throttle.LoginThrottleBackend",
    # Django's password check, refusing everyone but superusers when LOCAL_LOGIN is false.
    "searchtweak.local_login.LocalPasswordBackend",
]

# Single sign-on through OpenID Connect (sso/, mozilla-django-oidc; docs/operations/
# production.md, "Single sign-on"). Off unless OIDC_DISCOVERY_URL is set; the provider's
# endpoints and keys are read from its discovery document when first needed.

# The provider's …/.well-known/openid-configuration; unset, single sign-on is off.
OIDC_DISCOVERY_URL = env_url("OIDC_DISCOVERY_URL", schemes=("https", "http"))
# The client id SearchTweak is registered under at the provider.
OIDC_RP_CLIENT_ID = env_str("OIDC_CLIENT_ID")
# The client's secret at the provider (confidential client).
OIDC_RP_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET")
# The scopes asked for; "email" must be among them (users are matched by e-mail).
OIDC_RP_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
# The claim (in the ID token or the userinfo answer) that lists the user's groups.
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
# group=team-id:role,…: a group's members get that role in that team at each sign-in.
OIDC_GROUP_ROLES = group_roles_parse(env_list("OIDC_GROUP_ROLES", default=[]))
# The provider's name on the login page's button ("Sign in with …").
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
if OIDC_DISCOVERY_URL:
    if not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "OIDC_CLIENT_ID and OIDC_CLIENT_SECRET: both must be set with OIDC_DISCOVERY_URL")
    AUTHENTICATION_BACKENDS.append("sso.backends.OidcBackend")
elif not LOCAL_LOGIN:
    raise ImproperlyConfigured(
        "LOCAL_LOGIN: false needs single sign-on (OIDC_DISCOVERY_URL), or only superusers "
        "could sign in")
# What mozilla-django-oidc reads: ID tokens signed with the provider's RSA keys (from its
# JWKS), a nonce and PKCE on every sign-in, bounded waits for the provider.
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "sso:callback"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = "searchtweak.login_throttle.failure_limit"
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_CALLABLE = "searchtweak.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "searchtweak.login_throttle.client_address"
# A failure while locked does not extend the lock: an attacker cannot keep a shared
# address locked past the cool-off by retrying.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Successes are not recorded (the failures are all the throttle needs), and a success
# does not clear the address's failures: one known password must not reset the count.
AXES_DISABLE_ACCESS_LOG = True
AXES_RESET_ON_SUCCESS = False
# Axes prints a banner on every start-up (each manage.py command, each worker): noise.
AXES_VERBOSE = False

# Mail (password reset links, invitations): EMAIL_URL names the server, e.g.
# smtp://user:pass@mail.example.com:587?tls=true (see searchtweak.envvars.env_email_url).
# Without it mail is printed on the console, where a developer finds a reset link.
# EMAIL_URL: the mail server, smtp://…, smtps://… or console://; unset prints mails.
_email = env_email_url("EMAIL_URL")
EMAIL_BACKEND = (_email.backend if _email else
                 "django.core.mail.backends.console.EmailBackend")
if _email:
    EMAIL_HOST = _email.host
    EMAIL_PORT = _email.port
    EMAIL_HOST_USER = _email.username
    EMAIL_HOST_PASSWORD = _email.password
    EMAIL_USE_TLS = _email.use_tls
    EMAIL_USE_SSL = _email.use_ssl
# A web request waits for the mail server this long at most.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
# The sender of password resets, invitations and notification mails.
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "SearchTweak <searchtweak@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LANGUAGE_CODE = "en-us"
# The server's time zone for logs and dates shown without a team's zone (stored times are UTC).
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves static files in every mode: collected ones from STATIC_ROOT (production
# runs `manage.py collectstatic --noinput` once, as the Dockerfile does, which also stores
# compressed copies), and otherwise straight from static/, so a server started with DEBUG
# off and nothing collected is still styled. /favicon.ico comes from static/root/.
WHITENOISE_USE_FINDERS = True
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

if not DEBUG:
    # Session and CSRF cookies only over HTTPS (with DEBUG off).
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# HTTPS in production: plain HTTP is redirected and browsers are told (HSTS) to use HTTPS
# only. Behind a TLS proxy that redirects and sends HSTS itself, set SECURE_SSL_REDIRECT=false
# and SECURE_HSTS_SECONDS=0; a proxy that only terminates TLS must then send
# X-Forwarded-Proto, or the redirect would loop. /healthz answers over plain HTTP for the
# load balancer's and docker-compose's checks.
# SECURE_SSL_REDIRECT: redirect plain HTTP to HTTPS (not /healthz).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# HSTS max-age in seconds; 0 sends no HSTS header (a TLS proxy that sends its own).
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
# HSTS's includeSubDomains: the browser uses HTTPS for every subdomain too.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
# Only allows a submission to the browsers' preload list; nothing is submitted by itself.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=True)
# Trust a TLS proxy's X-Forwarded-Proto: https (gunicorn's forwarded_allow_ips follows it).
if env_behind_tls_proxy():
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp), in development too so a violation shows at once:
# no inline script, handler or style anywhere (JS and CSS are files in static/; values a
# template must pass to CSS go in data-* attributes that static/js/app.js applies).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # The grading page and the keyword and Test pages show each result's image from
        # wherever the search engine says it lives, so any HTTPS host (and data: URLs,
        # which engines, the demo and Swagger UI use for small images). Plain http: only
        # in development, whose own pages are plain HTTP and whose engines often are too.
        "img-src": ["'self'", "data:", "https:", *(["http:"] if DEBUG else [])],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        # Redoc runs its search index in a worker it builds from a blob: URL.
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "searchtweak.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies through searchtweak.json_input: nesting, NUL and lone surrogates are
    # refused with a 400 that names the field instead of crashing the parser or renderer.
    "DEFAULT_PARSER_CLASSES": [
        "searchtweak.json_input.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "searchtweak.api_pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "searchtweak.api_schema.AutoSchema",
    "EXCEPTION_HANDLER": "searchtweak.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "SearchTweak API",
    "DESCRIPTION": (
        "Judge and measure search relevance. Authenticate with "
        "`Authorization: Token <key>`; every object belongs to one of your teams."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from the app's own static files, not a CDN: the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {"DuplicatePolicyEnum": "judgments.imports.DUPLICATE_POLICY_CHOICES",
                            "NotificationEventEnum": "notifications.models.Event",
                            "WebhookDeliveryStatusEnum":
                                "notifications.models.DeliveryStatus",
                            # The judge runs' keeps the name it had before webhook
                            # deliveries brought a second "status" choice set.
                            "StatusEnum": "judges.models.JudgeRun.Status"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "searchtweak.api_schema.add_error_components",
    ],
}

# Celery: without a broker the tasks run eagerly in the calling process, after commit.
# CELERY_BROKER_URL: the broker, redis://host:6379/0; unset runs tasks eagerly.
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", schemes=("redis", "rediss", "memory"))
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL == ""
if CELERY_TASK_ALWAYS_EAGER:
    # With its host named: kombu warns "No hostname was supplied" on every command else.
    CELERY_BROKER_URL = "memory://localhost/"
# Where Celery stores task results; by default the broker.
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or (
    "" if CELERY_TASK_ALWAYS_EAGER else CELERY_BROKER_URL
)
CELERY_TASK_EAGER_PROPAGATES = True
# Without a broker, the fetch or judge run a request starts runs on a background thread of
# the web process (searchtweak.background): the page answers at once and the
# progress bar moves. Tests turn it off to fetch synchronously (tests/conftest.py).
# EMBEDDED_TASKS_IN_BACKGROUND: without a broker, fetch on a thread instead of in the request.
EMBEDDED_TASKS_IN_BACKGROUND = env_bool("EMBEDDED_TASKS_IN_BACKGROUND",
                                        default=CELERY_TASK_ALWAYS_EAGER)
# The Celery queue of every task not routed to FETCH_QUEUE, JUDGES_QUEUE or NOTIFICATIONS_QUEUE.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Hard time limit of a task in seconds, unless the task sets its own.
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300, minimum=1)
# No global soft limit: Celery refuses to send a task whose own time_limit is below it.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker outage of any length is waited out: the default gives up after 100 tries.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# The worker's consumer reconnects even when closing the lost connection fails (a message
# was unacknowledged when Redis went away): see searchtweak.celery.Consumer.
CELERY_WORKER_CONSUMER = "searchtweak.celery:Consumer"
# Celery's Django fixup closes the database connection before and after every task unless
# this is set: each recompute run then opened a new PostgreSQL connection (about 5 a
# second under grading) and planned every statement afresh. It closes them every this
# many tasks instead; searchtweak.celery closes them as Django closes a request's (broken,
# or older than CONN_MAX_AGE) around each task.
CELERY_DB_REUSE_MAX = 1000
CELERY_RESULT_EXPIRES = 3600
# metrics.recompute_evaluation rebuilds a whole evaluation (recompute_metrics, new metrics).
RECOMPUTE_EVALUATION_TIME_LIMIT = 1800
# Keywords still dirty this long after a grade are re-enqueued by the periodic sweep.
RECOMPUTE_SWEEP_AFTER_SECONDS = env_int("RECOMPUTE_SWEEP_AFTER_SECONDS", 5, minimum=1)
# Delay before a keyword's recompute runs, so a burst of grades is read by one run; 0 (the
# default) runs at once: grades that land while a run is queued or running join it anyway.
# RECOMPUTE_DEBOUNCE_MS: milliseconds a keyword's recompute waits after a grade.
RECOMPUTE_DEBOUNCE_SECONDS = float(env_int("RECOMPUTE_DEBOUNCE_MS", 0, minimum=0)) / 1000
# While an evaluation is being graded, a worker starts its next run this long after the
# previous one ended (or after the debounce, if longer), so each run reads many grades.
# RECOMPUTE_BUSY_INTERVAL_MS: milliseconds between an evaluation's recompute runs.
RECOMPUTE_BUSY_INTERVAL_SECONDS = (
    float(env_int("RECOMPUTE_BUSY_INTERVAL_MS", 100, minimum=0)) / 1000)
# One history point per metric per this many seconds, however many grades arrive.
METRIC_HISTORY_INTERVAL_SECONDS = env_int("METRIC_HISTORY_INTERVAL_SECONDS", 60, minimum=0)
# How often schedules are looked at: by celery beat, or without a broker by a thread of the
# web server, which runs the bodies registered with searchtweak.background.periodic_register
# (PERIODIC_IN_WEB_PROCESS; started by searchtweak.wsgi, so by runserver and gunicorn).
# SCHEDULE_TICK_SECONDS: seconds between two looks at the schedules that are due.
SCHEDULE_TICK_SECONDS = env_int("SCHEDULE_TICK_SECONDS", 30, minimum=1)
# SCHEDULES_PER_TEAM: the schedules one team may have (each makes a run per due time).
SCHEDULES_PER_TEAM = env_int("SCHEDULES_PER_TEAM", 200, minimum=1)
# Run the periodic bodies (schedules' tick) on a thread of the web process; on without a broker.
PERIODIC_IN_WEB_PROCESS = env_bool("PERIODIC_IN_WEB_PROCESS",
                                    default=CELERY_TASK_ALWAYS_EAGER)
# WEBHOOK_SWEEP_EVERY_SECONDS: seconds between two looks for stalled webhook deliveries
# (beat, or the web process's thread without a broker).
WEBHOOK_SWEEP_EVERY_SECONDS = env_int("WEBHOOK_SWEEP_EVERY_SECONDS", 30, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-dirty-keywords": {
        "task": "metrics.sweep_dirty_keywords",
        # How often the sweep re-enqueues keywords left dirty (RECOMPUTE_SWEEP_AFTER_SECONDS).
        "schedule": float(env_int("RECOMPUTE_SWEEP_EVERY_SECONDS", 5, minimum=1)),
    },
    # Re-queues keywords whose fetch claim lapsed (FETCH_CLAIM_MARGIN_SECONDS), so a
    # killed worker delays a fetch by about a lease, not by the broker's timeout.
    "sweep-stalled-fetches": {
        "task": "evaluations.sweep_stalled_fetches",
        # How often the sweep looks for lapsed fetch claims, in seconds.
        "schedule": float(env_int("FETCH_SWEEP_EVERY_SECONDS", 15, minimum=1)),
    },
    # Fires due schedules (one run per due time, whoever else ticks) and finishes runs
    # past their grading deadline.
    "tick-schedules": {
        "task": "evaluations.schedules_tick",
        "schedule": float(SCHEDULE_TICK_SECONDS),
    },
    # Sends on webhook deliveries whose attempt's worker died or whose message was lost
    # (notifications.delivery.webhook_deliveries_stalled).
    "sweep-stalled-webhook-deliveries": {
        "task": "searchtweak.sweep_stalled_webhook_deliveries",
        "schedule": float(WEBHOOK_SWEEP_EVERY_SECONDS),
    },
    # Restarts judge runs whose lanes died with their worker (judges.lanes.runs_stalled).
    "sweep-stalled-judge-runs": {
        "task": "judges.sweep_stalled_runs",
        # How often the sweep looks for stalled judge runs, in seconds.
        "schedule": float(env_int("JUDGE_SWEEP_EVERY_SECONDS", 15, minimum=1)),
    },
}
# LLM judges (judges.tasks): a lane works through a run's batches this long, then hands
# over to a new message; its hard limit must outlast a lane plus its last call
# (judges.calls.call_deadline_seconds). A run with work pending and nothing claimed for
# JUDGE_STALL_SECONDS gets a new lane from the sweep.
# JUDGE_LANE_SECONDS: seconds a judge lane works before handing over to a new message.
JUDGE_LANE_SECONDS = env_int("JUDGE_LANE_SECONDS", 50, minimum=1)
# Calls one lane holds in flight at once (threads of its worker process); a judge allowed
# more concurrent requests gets more lanes (judges.runs.lane_count).
JUDGE_LANE_CALLS = env_int("JUDGE_LANE_CALLS", 8, minimum=1)
# Hard time limit of a judge lane's task in seconds: a lane plus its last call.
JUDGE_LANE_TIME_LIMIT = env_int("JUDGE_LANE_TIME_LIMIT", 1800, minimum=120)
# A judge run with work pending and nothing claimed this long gets a new lane from the sweep.
JUDGE_STALL_SECONDS = env_int("JUDGE_STALL_SECONDS", 120, minimum=1)
# Lane crashes in a row (no batch ending well between them) that pause a judge run.
JUDGE_MAX_CRASH_STREAK = env_int("JUDGE_MAX_CRASH_STREAK", 3, minimum=1)

# The most keywords an evaluation or query set version holds, however they arrive (typed,
# uploaded, API). A keyword file (TXT/CSV) bigger than MAX_KEYWORDS keywords of 500
# characters (Keyword.text's max_length) plus their line ends cannot be a valid list, so it
# is refused before it is read: 100,000 keywords make about 48 MB.
# MAX_KEYWORDS: the most keywords an evaluation or query set version holds.
MAX_KEYWORDS = env_int("MAX_KEYWORDS", 100_000, minimum=1)
# A keyword file larger than this many bytes is refused before it is read.
KEYWORD_UPLOAD_MAX_BYTES = env_int("KEYWORD_UPLOAD_MAX_BYTES", MAX_KEYWORDS * 501,
                                   minimum=1024)
# The largest body Django reads into memory (a JSON body, a form): Django's 2.5 MB refused
# a list of 100,000 keywords sent to the API or typed in a form. A body that holds the
# largest keyword file's text (UTF-8, unescaped) plus 1 MB for the rest of the request
# fits; a bigger one answers 413 naming this setting (searchtweak.errors.bad_request,
# pages and API alike).
# DATA_UPLOAD_MAX_MEMORY_SIZE: the largest request body read, in bytes.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE",
                                      KEYWORD_UPLOAD_MAX_BYTES + 2**20, minimum=2_621_440)

# An offline model's run file (or its topic mapping) larger than this many bytes is refused
# before a line is read, on the page and over the API: a run is streamed into the
# database (bounded memory), but the upload itself lands on the server's disk first, and
# a run of MAX_KEYWORDS keywords x 100 results with 40-character document ids takes about
# 0.7 GB as TREC lines.
# OFFLINE_RUN_MAX_BYTES: the largest run file (or topic mapping) accepted, in bytes.
OFFLINE_RUN_MAX_BYTES = env_int("OFFLINE_RUN_MAX_BYTES", 2**30, minimum=1024)

# Fetching snapshots (evaluations.tasks): at most this many requests in flight to one
# endpoint per worker process (the endpoint's own limits hold over all workers),
# keywords per task, and the limits of one response.
# FETCH_CONCURRENCY_PER_ENDPOINT: requests in flight to one endpoint per worker process.
FETCH_CONCURRENCY_PER_ENDPOINT = env_int("FETCH_CONCURRENCY_PER_ENDPOINT", 16, minimum=1)
# 500 keywords a task, not 100: each task ends with its last requests alone in flight and
# pays its own setup, which cost a third of the time at 1,000 keywords (bench/fetch.py);
# a crash still loses only the keywords in flight (their claims lapse, the sweep re-queues).
# FETCH_BATCH_SIZE: keywords one fetch task takes.
FETCH_BATCH_SIZE = env_int("FETCH_BATCH_SIZE", 500, minimum=1)
# A larger fetch is cut into at most this many tasks, each then above FETCH_BATCH_SIZE
# (up to 4 times; fetching.dispatch.fetch_batch_size): a task's fixed cost (its claim, its
# last requests alone in flight, its last store) was 5-10 % of a 500-keyword task at
# 20 ms, paid 200 times at 100,000 keywords. 64 tasks still keep 32 worker processes
# busy to the end (bench/fetch.py --processes).
# FETCH_MAX_BATCHES: the most tasks one fetch is cut into.
FETCH_MAX_BATCHES = env_int("FETCH_MAX_BATCHES", 64, minimum=1)
# The largest search response read, in bytes; a larger one fails the keyword.
FETCH_MAX_RESPONSE_BYTES = env_int("FETCH_MAX_RESPONSE_BYTES", 10 * 1024 * 1024, minimum=1024)
# Retries of a search request after a connection error or a 5xx answer.
FETCH_RETRIES = env_int("FETCH_RETRIES", 3, minimum=0)
# The first retry's wait in milliseconds, doubling with each retry.
FETCH_RETRY_BACKOFF_MS = env_int("FETCH_RETRY_BACKOFF_MS", 500, minimum=0)
# The most results stored per keyword (the top of the engine's answer).
FETCH_MAX_RESULTS = env_int("FETCH_MAX_RESULTS", 100, minimum=1)
# A keyword's fetch claim lapses once its task has gone this much longer than the endpoint's
# requests can take (evaluations.fetching.search_requests.fetch_claim_lease_seconds): its
# worker died.
# FETCH_CLAIM_MARGIN_SECONDS: seconds past the requests' longest time before a claim lapses.
FETCH_CLAIM_MARGIN_SECONDS = env_int("FETCH_CLAIM_MARGIN_SECONDS", 30, minimum=0)
# A fetching evaluation whose pending keywords no task has claimed this long after their
# tasks were sent gets them sent again by the sweep: the broker refused the send (it was
# down) or the process died between its commit and the send. A task still queued behind
# others then finds them claimed or done and stops: a copy costs one UPDATE.
FETCH_RESEND_AFTER_SECONDS = env_int("FETCH_RESEND_AFTER_SECONDS", 300, minimum=1)
# A fetch task stops (soft limit: the keywords it has not stored are recorded as failed)
# and is killed a minute later.
# FETCH_TASK_TIME_LIMIT: a fetch task's soft time limit, in seconds.
FETCH_TASK_TIME_LIMIT = env_int("FETCH_TASK_TIME_LIMIT", 1800, minimum=60)
# Tasks are acknowledged late (CELERY_TASK_ACKS_LATE): Redis hands a message whose worker
# vanished to another one after this timeout. It must outlast the longest task, or a task
# still running would run twice; it need not be longer, and the sweeps repair before it.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": max(FETCH_TASK_TIME_LIMIT, CELERY_TASK_TIME_LIMIT,
                              RECOMPUTE_EVALUATION_TIME_LIMIT, JUDGE_LANE_TIME_LIMIT) + 60,
    # A connection idle this long is checked before use, and TCP keepalive finds one the
    # network dropped without a word: a Redis restart is seen as a lost connection and
    # reconnected, not waited on.
    "health_check_interval": 25,
    "socket_keepalive": True,
}
# Every outbound request (fetching, Test, judges) goes through searchtweak.outbound, which
# checks the address each connection actually reaches, redirect hops included. Denied
# networks win; a non-empty allow list admits only its networks. Any signed-in user may
# own a team and point an endpoint anywhere, so by default nothing inside the deployment
# is reachable: loopback, unspecified ("this host"), private (RFC 1918, ULA), link-local
# (cloud metadata at 169.254.169.254), CGNAT (Alibaba's metadata 100.100.100.200),
# reserved and multicast. An operator opens what the teams really use by setting
# OUTBOUND_DENY_NETWORKS (`check --deploy` names what the override opens). With DEBUG on
# loopback stays open, and the unspecified addresses that reach it (`make run HOST=0.0.0.0`
# points the demo endpoint there): `make run`'s demo engine and the tests' servers live there.
OUTBOUND_PRODUCTION_DENY_NETWORKS = [
    "127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128", "10.0.0.0/8", "172.16.0.0/12",
    "192.168.0.0/16", "fc00::/7", "169.254.0.0/16", "fe80::/10", "100.64.0.0/10",
    "240.0.0.0/4", "224.0.0.0/4", "ff00::/8"]
# Networks no outbound request may connect to (the list above; loopback open with DEBUG on).
OUTBOUND_DENY_NETWORKS = env_networks("OUTBOUND_DENY_NETWORKS", [
    network for network in OUTBOUND_PRODUCTION_DENY_NETWORKS
    if not (DEBUG and network in ("127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128"))])
# When set, the only networks outbound requests may reach (denied ones still win).
OUTBOUND_ALLOW_NETWORKS = env_networks("OUTBOUND_ALLOW_NETWORKS", [])
# Redirects followed per outbound request.
OUTBOUND_MAX_REDIRECTS = env_int("OUTBOUND_MAX_REDIRECTS", 5, minimum=0)
# gunicorn.conf.py kills a web request after WEB_TIMEOUT seconds; Test runs in the request,
# so its whole deadline (connect, redirects, read) ends this margin earlier, leaving time
# to render the answer.
# WEB_TIMEOUT: seconds a web request may take before gunicorn kills its worker.
WEB_TIMEOUT_SECONDS = env_int("WEB_TIMEOUT", 30, minimum=2)
OUTBOUND_TEST_DEADLINE_SECONDS = float(max(1, WEB_TIMEOUT_SECONDS - min(
    5, WEB_TIMEOUT_SECONDS // 4)))
# Per-endpoint limits (Endpoint.max_concurrent_requests, requests_per_minute) are shared
# by all processes through this Redis (default: the broker's, when it is Redis); with
# none, they hold within each process. A request waits at most this long for its turn.
# OUTBOUND_LIMITS_REDIS_URL: the Redis that shares endpoints' request limits between workers.
OUTBOUND_LIMITS_REDIS_URL = env_url("OUTBOUND_LIMITS_REDIS_URL", schemes=("redis", "rediss")) or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "")
# How long a fetch request waits for its turn under an endpoint's limits before failing.
OUTBOUND_LIMIT_WAIT_SECONDS = env_int("OUTBOUND_LIMIT_WAIT_SECONDS", 300, minimum=1)
# A Test (search model, endpoint form, judge) holds a web worker while the engine answers:
# at most this many run at once per team (counted like the limits above), so a hanging
# engine cannot take every worker and stall the site.
# OUTBOUND_TESTS_PER_TEAM: Tests one team may run at once over all web processes.
OUTBOUND_TESTS_PER_TEAM = env_int("OUTBOUND_TESTS_PER_TEAM", 2, minimum=1)
# And at most this many over the whole site, since anyone may create teams: by default
# half of gunicorn's workers (WEB_CONCURRENCY, else two per CPU, as gunicorn.conf.py
# counts them), so Tests against silent engines leave the other half serving pages.
_WEB_WORKERS = env_int("WEB_CONCURRENCY", 0, minimum=0) or 2 * (
    len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
# OUTBOUND_TESTS_SITE_WIDE: Tests the whole site may run at once (default half the workers).
OUTBOUND_TESTS_SITE_WIDE = env_int("OUTBOUND_TESTS_SITE_WIDE", max(1, _WEB_WORKERS // 2),
                                   minimum=1)
# LLM judges (judges.calls): the first retry's backoff (doubling, with jitter), and the
# longest Retry-After a call waits for before giving its pairs back to the queue.
# JUDGE_RETRY_BACKOFF_MS: a judge call's first retry wait, in milliseconds.
JUDGE_RETRY_BACKOFF_MS = env_int("JUDGE_RETRY_BACKOFF_MS", 1000, minimum=0)
# The longest Retry-After a judge call waits for before giving its pairs back to the queue.
JUDGE_MAX_RETRY_AFTER_SECONDS = env_int("JUDGE_MAX_RETRY_AFTER_SECONDS", 120, minimum=0)
# The largest result image fetched for a judge that takes images inline (Ollama; the
# others fetch an image's URL themselves): judges.images.
# JUDGE_IMAGE_MAX_BYTES: the largest image fetched for a judge, in bytes.
JUDGE_IMAGE_MAX_BYTES = env_int("JUDGE_IMAGE_MAX_BYTES", 5 * 1024 * 1024, minimum=1)
# Who may create a team (and so own its endpoints and judges): "anyone" signed in, or
# only "staff" (User.is_staff), who then invite the others.
# TEAM_CREATION: who may create a team, anyone or staff.
TEAM_CREATION = env_str("TEAM_CREATION", "anyone").lower()
# The teams one person (not staff) may own: each team has its own caps (Tests, schedules),
# so teams without end would be caps without end.
TEAMS_PER_USER = env_int("TEAMS_PER_USER", 10, minimum=1)
if TEAM_CREATION not in ("anyone", "staff"):
    raise ImproperlyConfigured(f"TEAM_CREATION: {TEAM_CREATION!r} is not 'anyone' or 'staff'")
# Notifications (notifications.services): links in mails start with SITE_URL; a
# webhook delivery is tried up to WEBHOOK_MAX_ATTEMPTS times, the first retry after
# WEBHOOK_RETRY_BACKOFF_MS (doubling, at most 5 minutes), each attempt bounded by
# WEBHOOK_TIMEOUT_SECONDS.
# SITE_URL: the address people open the app at, for links in mails and webhook bodies.
SITE_URL = env_str("SITE_URL", "http://localhost:8000").rstrip("/")
# Attempts of one webhook delivery (connection failure, timeout, 408/425/429/5xx retry).
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5, minimum=1)
# A webhook's first retry wait in milliseconds (doubling, at most 5 minutes, never less
# than Retry-After).
WEBHOOK_RETRY_BACKOFF_MS = env_int("WEBHOOK_RETRY_BACKOFF_MS", 2000, minimum=0)
# Each webhook attempt's timeout in seconds.
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# A due attempt no worker has taken this long after its time is sent on by the sweep (its
# message was lost); an attempt whose worker died is, once its claim lapses (about
# 2 x WEBHOOK_TIMEOUT_SECONDS + 30 s).
WEBHOOK_SWEEP_AFTER_SECONDS = env_int("WEBHOOK_SWEEP_AFTER_SECONDS", 120, minimum=1)
# With NOTIFICATIONS_QUEUE set, webhook deliveries and notification mails go to that Celery
# queue (run a worker for it: `celery -A searchtweak worker -Q <queue>`), so receivers
# that time out never hold the workers that recompute; unset, they share the default one
# (a retry waits as a countdown, holding no worker, but each attempt holds one).
# NOTIFICATIONS_QUEUE: the Celery queue of webhook deliveries and notification mails.
NOTIFICATIONS_QUEUE = env_str("NOTIFICATIONS_QUEUE")
# With FETCH_QUEUE / JUDGES_QUEUE set, fetching and judge lanes go to their own queues, so
# each kind of work scales with its own workers (docker-compose.yml: worker-fetch,
# worker-judges) and a slow engine or LLM provider never holds the workers that recompute.
# FETCH_QUEUE: the Celery queue of fetching.
FETCH_QUEUE = env_str("FETCH_QUEUE")
# JUDGES_QUEUE: the Celery queue of judge lanes.
JUDGES_QUEUE = env_str("JUDGES_QUEUE")
TASK_QUEUES = {
    "searchtweak.webhook_deliver": NOTIFICATIONS_QUEUE,
    "searchtweak.notification_mail": NOTIFICATIONS_QUEUE,
    "evaluations.fetch_keywords": FETCH_QUEUE,
    "judges.run_lane": JUDGES_QUEUE,
}
CELERY_TASK_ROUTES = {task: {"queue": queue} for task, queue in TASK_QUEUES.items() if queue}
# Every queue some worker must consume. Beat sends each a heartbeat task every
# WORKER_HEARTBEAT_SECONDS; the worker that runs it stamps the queue in Redis, and
# /healthz reports a queue whose stamp is older than WORKER_HEARTBEAT_STALE_SECONDS: its
# workers stopped consuming (searchtweak.healthz).
WORKER_QUEUES = [CELERY_TASK_DEFAULT_QUEUE,
                 *sorted({queue for queue in TASK_QUEUES.values() if queue}
                         - {CELERY_TASK_DEFAULT_QUEUE})]
# WORKER_HEARTBEAT_SECONDS: seconds between two heartbeats beat sends each queue.
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 30, minimum=1)
# WORKER_HEARTBEAT_STALE_SECONDS: age of a queue's last heartbeat at which /healthz fails.
WORKER_HEARTBEAT_STALE_SECONDS = env_int("WORKER_HEARTBEAT_STALE_SECONDS",
                                         4 * WORKER_HEARTBEAT_SECONDS, minimum=1)
CELERY_BEAT_SCHEDULE.update({
    f"worker-heartbeat-{queue}": {
        "task": "searchtweak.worker_heartbeat", "args": (queue,),
        "schedule": float(WORKER_HEARTBEAT_SECONDS),
        # A heartbeat no worker took before the next one is worth nothing: the queue of a
        # stopped worker does not fill with them.
        "options": {"queue": queue, "expires": float(WORKER_HEARTBEAT_SECONDS)},
    }
    for queue in WORKER_QUEUES
})
# The audit trail's retention (docs/decisions/0027): beat deletes older events once a day
# (audit.prune_expired; `manage.py audit_prune` does the same by hand or from cron). The
# default keeps every event: what a company must keep is its own rule, and a deleted event
# cannot come back.
# AUDIT_RETENTION_DAYS: days an audit event is kept; 0 keeps every event.
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 0, minimum=0)
CELERY_BEAT_SCHEDULE["prune-audit-trail"] = {
    "task": "audit.prune_expired", "schedule": 24 * 3600.0,
}
# Queues the rows of the last 7 and 30 days of behaviour sources a lost task left behind
# (behaviour.tasks.last_days_sweep); a collector's next batch would too, if one comes.
CELERY_BEAT_SCHEDULE["sweep-behaviour-last-days"] = {
    "task": "behaviour.last_days_sweep", "schedule": 300.0,
}
# Where seed_demo points the demo endpoint: the address `make run` serves on.
DEMO_SEARCH_URL = env_str("DEMO_SEARCH_URL", "http://127.0.0.1:8000/demo/search")

# The operators' metrics at /metrics (Prometheus's text format, docs/operations/metrics.md):
# answered to a caller sending this bearer token, or in a network of METRICS_ALLOW; with
# neither, off.
# METRICS_TOKEN: the bearer token a Prometheus scrape sends to /metrics.
METRICS_TOKEN = env_str("METRICS_TOKEN")
# METRICS_ALLOW: networks (CIDRs) whose connecting address may read /metrics without a token.
METRICS_ALLOW = env_networks("METRICS_ALLOW", [])

# The behaviour collector (behaviour.collector, POST .../behaviour-sources/<id>/events/):
# what one batch may hold, how often a caller may send one, and how long a source
# remembers the searches and event ids it counted (docs/decisions/0023).
# BEHAVIOUR_COLLECTOR_MAX_BYTES: the largest collector batch body, in bytes.
BEHAVIOUR_COLLECTOR_MAX_BYTES = env_int("BEHAVIOUR_COLLECTOR_MAX_BYTES", 1024 * 1024,
                                        minimum=1024)
# BEHAVIOUR_COLLECTOR_MAX_ITEMS: the most queries plus events in one collector batch.
BEHAVIOUR_COLLECTOR_MAX_ITEMS = env_int("BEHAVIOUR_COLLECTOR_MAX_ITEMS", 1000, minimum=1)
# BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE: collector batches one API user may send a minute.
BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE = env_int("BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE",
                                                 120, minimum=1)
# BEHAVIOUR_COLLECTOR_RETENTION_HOURS: how long the collector remembers a counted search.
BEHAVIOUR_COLLECTOR_RETENTION_HOURS = env_int("BEHAVIOUR_COLLECTOR_RETENTION_HOURS", 48,
                                              minimum=1)
# BEHAVIOUR_UPLOAD_MAX_BYTES: the largest behaviour log file a page upload accepts, in bytes
# (a CSV, or each of a UBI log's two files). The page imports while the request waits, well
# inside WEB_TIMEOUT (a 50 MB CSV took 21 s); larger logs go through
# `manage.py import_behaviour`, which reads any size from disk.
BEHAVIOUR_UPLOAD_MAX_BYTES = env_int("BEHAVIOUR_UPLOAD_MAX_BYTES", 20_000_000,
                                     minimum=1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # The log level of everything printed: DEBUG, INFO, WARNING, ERROR.
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
    # Django's own "django" logger has a console handler in DEBUG and also propagates to
    # the root's: every line came out twice. Only the root prints. ("django.server", the
    # dev server's request lines, keeps Django's handler and does not propagate.)
    "loggers": {"django": {"handlers": [], "propagate": True}},
}
