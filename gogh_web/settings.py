"""Django settings for GOGH.

Everything an operator changes comes from the environment (see docs/configuration.md); the
defaults run the whole control plane on one machine with no server to install: SQLite under
var/, a filesystem Celery broker consumed by a real worker process, an in-process channel layer.
"""
import os

import dj_database_url
from celery.schedules import crontab
from kombu import Exchange, Queue

from . import env
from .cache_config import cache_config
from .celery_config import EMBEDDED_BROKER, TASK_QUEUES, TASK_ROUTES, broker_config
from .security import proxy_networks

BASE_DIR = env.BASE_DIR
VAR_DIR = env.var_dir()

SECRET_KEY = env.secret_key(VAR_DIR)
DEBUG = env.flag("GOGH_DEBUG")
ALLOWED_HOSTS = env.csv_list("GOGH_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env.csv_list("GOGH_CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000")

# --- Deployment hardening (docs/configuration.md, "Production behind a TLS proxy"): off by
# default, so that the demo works on plain http://127.0.0.1. GOGH_HTTPS=1 when the site is
# served over HTTPS: the redirect, secure cookies and HSTS. X-Forwarded-For and
# X-Forwarded-Proto count only from GOGH_TRUSTED_PROXIES (gogh_web/security.py), which must set both.
GOGH_TRUSTED_PROXIES = proxy_networks(os.environ.get("GOGH_TRUSTED_PROXIES", ""))
if GOGH_TRUSTED_PROXIES:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
GOGH_HTTPS = env.flag("GOGH_HTTPS")
SECURE_SSL_REDIRECT = GOGH_HTTPS
SESSION_COOKIE_SECURE = GOGH_HTTPS
CSRF_COOKIE_SECURE = GOGH_HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("GOGH_HSTS_SECONDS", "3600")) if GOGH_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.flag("GOGH_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env.flag("GOGH_HSTS_PRELOAD")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "gogh_web",
    "catalog",
    "telemetry",
    "scheduler",
    "gogh_web.events",
    "gogh_web.dashboard",
    "gogh_web.outbox",
]

MIDDLEWARE = [
    "gogh_web.security.SecurityHeadersMiddleware",  # first: drops proxy headers from untrusted peers
    "django.middleware.security.SecurityMiddleware",
    "gogh_web.api.poison.PoisonQueryMiddleware",  # a NUL in a path or query string: 400, never the database
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Bounded work per process, else 503 + Retry-After. Here, not first: below the sync-only
    # middlewares above, it runs async under daphne (it waits in the event loop).
    "gogh_web.api.overload.OverloadMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gogh_web.urls"
ASGI_APPLICATION = "gogh_web.asgi.application"
WSGI_APPLICATION = "gogh_web.wsgi.application"

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

# --- Database: SQLite under var/ unless DATABASE_URL names another (PostgreSQL in production).
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'gogh.sqlite3'}",
        conn_max_age=int(os.environ.get("GOGH_DB_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not :memory:, so that a Celery worker process started by a test sees the test
    # database; a busy timeout and WAL so that web, worker and beat can share one file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_gogh.sqlite3")}
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
FORMAT_MODULE_PATH = ["gogh_web.formats"]  # times with seconds in the admin (gogh_web/formats/en)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Plotly's JS bundle comes from the installed plotly package (no CDN, no 4 MB copy in the repo).
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "gogh_web.dashboard.staticfiles.PlotlyFinder",
]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:cluster"

# API tokens (gogh_web/api/authentication.py): a person's expires this many days after it was
# made, an agent's after GOGH_AGENT_TOKEN_TTL_DAYS; 0 = never.
GOGH_API_TOKEN_TTL_DAYS = float(os.environ.get("GOGH_API_TOKEN_TTL_DAYS", "30"))
GOGH_AGENT_TOKEN_TTL_DAYS = float(os.environ.get("GOGH_AGENT_TOKEN_TTL_DAYS", "0"))

# Request bodies larger than this are refused with 400 before parsing (API and forms alike).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("GOGH_MAX_BODY_BYTES", 1024 * 1024))

# --- REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "gogh_web.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["gogh_web.api.parsers.BoundedJSONParser"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "gogh_web.api.filters.StrictOrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "gogh_web.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "gogh_web.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "gogh_web.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GOGH control plane API",
    "DESCRIPTION": "Submit and follow GPU jobs, register nodes, read and report measurements.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from our own static files: clusters often have no internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One section of /api/docs/ per resource, in this order (gogh_web/api/schema.py tags them).
    "TAGS": [
        {"name": "index", "description": "What the API holds: version, resources and their URLs (no token needed)."},
        {"name": "jobs", "description": "Submit, list, follow and cancel jobs."},
        {"name": "services", "description": "Inference services with a P99 latency SLO: create, list, follow and "
         "stop; their replicas are jobs whose T_min follows the traffic (docs/services.md)."},
        {"name": "solve", "description": "Run a scheduling round now (staff)."},
        {"name": "tenants", "description": "Tenants' quotas, shares, usage and energy bill (staff change them), "
         "and the fair-share half-life."},
        {"name": "nodes", "description": "Nodes with their GPUs. Agents register, heartbeat, report failed GPUs "
         "and read their assignments; staff approve, drain and revoke."},
        {"name": "gpus", "description": "Every GPU of the cluster."},
        {"name": "telemetry", "description": "Node agents report GPU samples and their jobs' progress."},
        {"name": "live", "description": "The snapshot a live page starts from before it follows /ws/live/."},
        {"name": "gpu-types", "description": "The catalog's GPU types (staff change them)."},
        {"name": "workloads", "description": "The catalog's workloads (staff change them)."},
        {"name": "measurements", "description": "Measured throughput, power and memory; agents and staff report."},
        {"name": "profiling-campaigns", "description": "Runs of GOGH's benchmark suite on a GPU type (staff start one "
         "at /api/gpu-types/{name}/profile/)."},
        {"name": "auth", "description": "Replace your own API token."},
        {"name": "tradeoff", "description": "The console's trade-off page: sweeps, preview and apply."},
    ],
    "ENUM_NAME_OVERRIDES": {
        "JobStateEnum": "scheduler.models.jobs.JOB_STATE_CHOICES",
        "ServiceStateEnum": "scheduler.models.services.ServiceState",
        "NodeStateEnum": "telemetry.models.nodes.NodeState",
        "GpuStateEnum": "telemetry.models.gpus.GpuState",
    },
}

# --- Celery: a filesystem broker under var/ by default (a real worker process consumes it; no
# server needed); CELERY_BROKER_URL=redis://... or amqp://... for several machines.
_celery = broker_config(
    os.environ.get("CELERY_BROKER_URL", EMBEDDED_BROKER), VAR_DIR, os.environ.get("CELERY_RESULT_BACKEND")
)
CELERY_BROKER_URL = _celery["broker_url"]
CELERY_RESULT_BACKEND = _celery["result_backend"]
CELERY_BROKER_TRANSPORT = _celery.get("broker_transport")
CELERY_BROKER_TRANSPORT_OPTIONS = _celery.get("broker_transport_options", {})
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Queues and routes (docs/architecture.md): rounds, predictions, maintenance and the default.
CELERY_TASK_QUEUES = [Queue(name, Exchange(name), routing_key=name) for name in TASK_QUEUES]
CELERY_TASK_ROUTES = TASK_ROUTES
# The outbox (gogh_web/outbox): tasks the broker could not take are sent again every
# GOGH_OUTBOX_DRAIN_S; P1 and round requests not acknowledged by their task within
# GOGH_OUTBOX_REDELIVER_S are taken as lost and sent again.
GOGH_OUTBOX_DRAIN_S = float(os.environ.get("GOGH_OUTBOX_DRAIN_S", "10"))
GOGH_OUTBOX_REDELIVER_S = float(os.environ.get("GOGH_OUTBOX_REDELIVER_S", "600"))
GOGH_NODE_HEARTBEAT_TIMEOUT_S = float(os.environ.get("GOGH_NODE_HEARTBEAT_TIMEOUT_S", "60"))
# How often beat runs the silence detector (telemetry.tasks.nodes_mark_silent_down); it also
# tells the detector how long a gap in its own runs means the control plane was away.
GOGH_NODE_SILENCE_CHECK_S = max(5.0, GOGH_NODE_HEARTBEAT_TIMEOUT_S / 4)
# Node admission (docs/inventory.md): host names (shell patterns, e.g. gpu-*.lab.example) whose
# nodes are approved as their agent registers them. A trust decision: any agent token may
# register a new node under a matching name, and that node receives tenants' jobs and secrets.
GOGH_AUTO_APPROVE_NODES = env.csv_list("GOGH_AUTO_APPROVE_NODES", "")
# Which catalog measurements an agent account may write is a rule of the scheduler (the jobs
# open on its nodes); the catalog, below it, finds it here.
GOGH_AGENT_MEASUREMENT_RULE = "scheduler.dispatch.measurement_rule.check_may_measure"
# Telemetry (docs/telemetry.md): raw GPU samples older than the retention are folded into
# per-minute aggregates every GOGH_TELEMETRY_DOWNSAMPLE_EVERY_S; a job's observed throughput
# becomes a catalog measurement at most once per GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S;
# /metrics shows a GPU's latest sample if it is newer than GOGH_TELEMETRY_METRICS_STALE_S.
GOGH_TELEMETRY_RAW_RETENTION_S = float(os.environ.get("GOGH_TELEMETRY_RAW_RETENTION_S", str(24 * 3600)))
GOGH_TELEMETRY_DOWNSAMPLE_EVERY_S = float(os.environ.get("GOGH_TELEMETRY_DOWNSAMPLE_EVERY_S", "300"))
# Profiling campaigns (docs/profiling.md, "Campaigns"): the interpreter campaign jobs run the
# suite with on a node, and flags added to its command (tests: "--tiny --device cpu").
GOGH_PROFILING_PYTHON = os.environ.get("GOGH_PROFILING_PYTHON", "python")
GOGH_PROFILING_SUITE_ARGS = os.environ.get("GOGH_PROFILING_SUITE_ARGS", "")
GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S = float(os.environ.get("GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S", "300"))
# Each GPU's own power curve and speed (docs/gpu_health.md): curves refitted every
# GOGH_POWER_CURVE_REFIT_S from the raw samples of the last GOGH_POWER_CURVE_WINDOW_S; speeds
# relearnt from the jobs' measurements every GOGH_GPU_SPEED_REFRESH_S.
GOGH_POWER_CURVE_REFIT_S = float(os.environ.get("GOGH_POWER_CURVE_REFIT_S", "3600"))
GOGH_POWER_CURVE_WINDOW_S = float(os.environ.get("GOGH_POWER_CURVE_WINDOW_S", str(6 * 3600)))
GOGH_GPU_SPEED_REFRESH_S = float(os.environ.get("GOGH_GPU_SPEED_REFRESH_S", "600"))
GOGH_TELEMETRY_METRICS_STALE_S = float(os.environ.get("GOGH_TELEMETRY_METRICS_STALE_S", "120"))
# Per-minute aggregates are kept GOGH_TELEMETRY_MINUTE_RETENTION_S (pruned by the downsampling
# task), so sample storage per GPU is bounded (docs/telemetry.md, "Storage").
GOGH_TELEMETRY_MINUTE_RETENTION_S = float(os.environ.get("GOGH_TELEMETRY_MINUTE_RETENTION_S", str(90 * 24 * 3600)))
# Overload (gogh_web/api/overload.py): per web process, at most GOGH_WEB_CONCURRENCY requests
# run at once (each holds a thread and a database connection), the rest wait up to
# GOGH_WEB_QUEUE_WAIT_S; sample uploads at most GOGH_INGEST_CONCURRENCY at once, waiting up to
# GOGH_INGEST_QUEUE_WAIT_S. Beyond: 503 with Retry-After GOGH_OVERLOAD_RETRY_AFTER_S (to twice it).
GOGH_WEB_CONCURRENCY = int(os.environ.get("GOGH_WEB_CONCURRENCY", "32"))
GOGH_WEB_QUEUE_WAIT_S = float(os.environ.get("GOGH_WEB_QUEUE_WAIT_S", "5"))
GOGH_INGEST_CONCURRENCY = int(os.environ.get("GOGH_INGEST_CONCURRENCY", "8"))
GOGH_INGEST_QUEUE_WAIT_S = float(os.environ.get("GOGH_INGEST_QUEUE_WAIT_S", "0.5"))
GOGH_OVERLOAD_RETRY_AFTER_S = float(os.environ.get("GOGH_OVERLOAD_RETRY_AFTER_S", "2"))
# Scheduling rounds (docs/optimization.md): one every GOGH_SCHEDULING_INTERVAL_S, and one after
# submissions, cancellations, finished jobs and node changes, bursts within
# GOGH_ROUND_DEBOUNCE_S folded into one.
GOGH_SCHEDULING_INTERVAL_S = max(5.0, float(os.environ.get("GOGH_SCHEDULING_INTERVAL_S", "30")))
GOGH_ROUND_DEBOUNCE_S = float(os.environ.get("GOGH_ROUND_DEBOUNCE_S", "2"))
# Every GOGH_PREDICTIONS_RECONCILE_S, P1 is asked (once per job) for active jobs that have no
# prediction while a predictor is active (docs/predictors.md).
GOGH_PREDICTIONS_RECONCILE_S = float(os.environ.get("GOGH_PREDICTIONS_RECONCILE_S", "60"))
# Accounting (docs/accounting.md): every GOGH_ACCOUNTING_EVERY_S, each allocation's share of its
# GPU's measured power and time is counted up to GOGH_ACCOUNTING_SETTLE_S ago (agents upload
# samples in batches; a sample arriving later than this is not counted), into jobs' and tenants'
# energy and the tenants' fair-share factors.
GOGH_ACCOUNTING_EVERY_S = float(os.environ.get("GOGH_ACCOUNTING_EVERY_S", "60"))
GOGH_ACCOUNTING_SETTLE_S = float(os.environ.get("GOGH_ACCOUNTING_SETTLE_S", "120"))
# Exploration (docs/exploration.md): probes of jobs the predictions call too slow everywhere;
# a bad value stops the start (env.exploration_environment).
_EXPLORATION = env.exploration_environment(os.environ)
GOGH_EXPLORATION_ENABLED = _EXPLORATION["enabled"]
GOGH_EXPLORATION_PROBE_S = _EXPLORATION["probe_s"]
GOGH_EXPLORATION_MIN_CHANCE = _EXPLORATION["min_chance"]
GOGH_EXPLORATION_MAX_PROBE_SHARE = _EXPLORATION["max_probe_share"]
GOGH_EXPLORATION_RETRY_AFTER_S = _EXPLORATION["retry_after_s"]
GOGH_EXPLORATION_MAX_PROBES_PER_JOB = _EXPLORATION["max_probes_per_job"]
# Executors (docs/executors.md): who runs the jobs. "agent" (the default): GOGH's node agents
# pull their assignments. "slurm": the rounds' decisions go to a Slurm cluster through its
# command-line tools, synced every GOGH_SLURM_SYNC_S; a bad value stops the start.
_EXECUTOR = env.executor_environment(os.environ, VAR_DIR)
GOGH_EXECUTOR = _EXECUTOR["executor"]
GOGH_SLURM = _EXECUTOR["slurm"]
# Predictors (docs/predictors.md): default architecture, catalog policy, retraining.
GOGH_PREDICTOR_ARCHITECTURE = os.environ.get("GOGH_PREDICTOR_ARCHITECTURE", "structured")
GOGH_PREDICTOR_WINDOW = int(os.environ.get("GOGH_PREDICTOR_WINDOW", "1000"))
GOGH_PREDICTOR_MIN_SAMPLES = int(os.environ.get("GOGH_PREDICTOR_MIN_SAMPLES", "3"))
GOGH_PREDICTOR_RETRAIN_AFTER_RECORDS = int(os.environ.get("GOGH_PREDICTOR_RETRAIN_AFTER_RECORDS", "1000"))
GOGH_PREDICTOR_RETRAIN_HOUR = int(os.environ.get("GOGH_PREDICTOR_RETRAIN_HOUR", "3"))
GOGH_PREDICTOR_RETRAIN_CHECK_S = float(os.environ.get("GOGH_PREDICTOR_RETRAIN_CHECK_S", "900"))
# Live updates (docs/live-updates.md): events kept GOGH_LIVE_EVENT_RETENTION_S for pages that
# reconnect (pruned every GOGH_LIVE_PRUNE_EVERY_S); each ASGI process looks for new events every
# GOGH_LIVE_POLL_S (the only relay with the embedded layer; a safety net with Redis); snapshots
# hold active jobs plus the newest GOGH_LIVE_ENDED_JOBS_KEPT ended ones and the newest
# GOGH_LIVE_SOLVE_RUNS_KEPT solve runs.
GOGH_LIVE_EVENT_RETENTION_S = float(os.environ.get("GOGH_LIVE_EVENT_RETENTION_S", "3600"))
GOGH_LIVE_PRUNE_EVERY_S = float(os.environ.get("GOGH_LIVE_PRUNE_EVERY_S", "300"))
GOGH_LIVE_POLL_S = float(os.environ.get("GOGH_LIVE_POLL_S", "2" if os.environ.get("REDIS_URL") else "0.2"))
GOGH_LIVE_ENDED_JOBS_KEPT = int(os.environ.get("GOGH_LIVE_ENDED_JOBS_KEPT", "500"))
GOGH_LIVE_SOLVE_RUNS_KEPT = int(os.environ.get("GOGH_LIVE_SOLVE_RUNS_KEPT", "50"))
# Each kind of live event is built by the app that owns it (<app>/live.py); gogh_web.events,
# which imports no app, finds here each kind's part of a snapshot (in snapshot order) and the
# tenant whose events a user sees.
GOGH_LIVE_KINDS = {
    "job": "scheduler.live.jobs_snapshot",
    "node": "telemetry.live.nodes_snapshot",
    "gpu": "telemetry.live.gpus_snapshot",
    "solve_run": "scheduler.live.solve_runs_snapshot",
    "solver_config": "scheduler.live.solver_config_snapshot",
    "tenant": "scheduler.tenancy.live.tenants_snapshot",
    "service": "scheduler.serving.live.services_snapshot",
    "predictor_version": "catalog.live.predictor_versions_snapshot",
    "gpu_type_profile": "scheduler.profiling.live.gpu_type_profiles_snapshot",
}
GOGH_LIVE_TENANT_OF = "scheduler.live.tenant_id_of"
# Dashboard (docs/dashboard.md): Trade-off previews (a solve in the web request) per user, DRF rate syntax.
GOGH_DASHBOARD_PREVIEW_RATE = os.environ.get("GOGH_DASHBOARD_PREVIEW_RATE", "10/min")
CELERY_BEAT_SCHEDULE = {
    "predictor-retrain-nightly": {
        "task": "catalog.tasks.predictor_retrain",
        "schedule": crontab(hour=GOGH_PREDICTOR_RETRAIN_HOUR, minute=0),
    },
    "predictor-retrain-if-due": {
        "task": "catalog.tasks.predictor_retrain_if_due",
        "schedule": GOGH_PREDICTOR_RETRAIN_CHECK_S,
    },
    "downsample-gpu-samples": {
        "task": "telemetry.tasks.gpu_samples_downsample",
        "schedule": GOGH_TELEMETRY_DOWNSAMPLE_EVERY_S,
    },
    "refit-gpu-power-curves": {
        "task": "telemetry.tasks.gpu_power_curves_refit",
        "schedule": GOGH_POWER_CURVE_REFIT_S,
        "options": {"expires": GOGH_POWER_CURVE_REFIT_S},
    },
    "refresh-gpu-speeds": {
        "task": "scheduler.tasks.gpu_speeds_refresh",
        "schedule": GOGH_GPU_SPEED_REFRESH_S,
        "options": {"expires": GOGH_GPU_SPEED_REFRESH_S},
    },
    "mark-silent-nodes-down": {
        "task": "telemetry.tasks.nodes_mark_silent_down",
        "schedule": GOGH_NODE_SILENCE_CHECK_S,
    },
    "prune-live-events": {
        "task": "gogh_web.events.tasks.events_prune",
        "schedule": GOGH_LIVE_PRUNE_EVERY_S,
    },
    "scheduling-round": {
        "task": "scheduler.tasks.scheduling_round",
        "schedule": GOGH_SCHEDULING_INTERVAL_S,
        "kwargs": {"trigger": "periodic"},
    },
    "outbox-drain": {
        "task": "gogh_web.outbox.tasks.outbox_drain",
        "schedule": GOGH_OUTBOX_DRAIN_S,
    },
    "predictions-reconcile": {
        "task": "scheduler.tasks.predictions_reconcile",
        "schedule": GOGH_PREDICTIONS_RECONCILE_S,
    },
    # A pass older than its interval is replaced by the next one (which counts from where the
    # last one stopped): a busy worker never piles them up.
    "accounting-pass": {
        "task": "scheduler.tasks.accounting_pass",
        "schedule": GOGH_ACCOUNTING_EVERY_S,
        "options": {"expires": GOGH_ACCOUNTING_EVERY_S},
    },
}
if GOGH_EXECUTOR == "slurm":
    # A sync older than its interval is replaced by the next one: a busy worker never piles them up.
    CELERY_BEAT_SCHEDULE["executor-sync"] = {
        "task": "scheduler.tasks.executor_sync",
        "schedule": GOGH_SLURM["sync_s"],
        "options": {"expires": GOGH_SLURM["sync_s"]},
    }

# --- Channels and the cache: in-process by default, Redis when REDIS_URL is set (several processes).
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# Django's cache (failed sign-ins, the preview throttle): shared through Redis when REDIS_URL is set.
CACHES = cache_config(REDIS_URL)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("GOGH_LOG_LEVEL", "INFO")},
    # What happens to jobs and nodes (gogh_web.activity), at INFO whatever the root level, through
    # a handler of its own: Celery replaces the root logger's handlers and format in its workers.
    "loggers": {"gogh.activity": {"handlers": ["console"], "level": "INFO", "propagate": False}},
}
