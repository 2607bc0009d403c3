"""Before any test runs: do PostgreSQL and Redis answer on the URLs the tests use, is Chromium
there for the browser tests, and does the local Slurm cluster answer for the Slurm executor's
tests (`sinfo` lists its three nodes)? `make test` runs this first (`python -m tests.preflight`).

Without it a missing server shows only after the unit tier's minutes, as a psycopg traceback per
test. Here a missing piece is started with `.ci/services` (what `make services` runs) when this
process may (root on Debian) and checked again; otherwise, or if it is still missing, the run
stops within seconds with one line that says what is missing and what to run. No Django: it
must answer before anything slow loads. tests/conftest.py reuses `postgres_problem` for runs
that skip this check.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
CONNECT_TIMEOUT_S = 2  # per attempt; loopback answers in milliseconds, a dead host must not cost 30 s
DEFAULT_CHROMIUM = "/usr/bin/chromium"  # tests/integration/test_dashboard_browser.py reads the same
#: The nodes of .ci/slurm's cluster, which tests/integration/test_slurm_executor.py drives.
SLURM_NODES = ("n-k80", "n-p100", "n-v100")
SLURM_TIMEOUT_S = 10  # sinfo answers from slurmctld in milliseconds; a hung one must not stall the run


def postgres_problem(url: str) -> str | None:
    """None when PostgreSQL at `url` accepts the login, else what is wrong, in a few words.
    A missing database is tolerated when the server's `postgres` database accepts the login:
    pytest-django creates its test database from there."""
    try:
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
        return None
    except psycopg.Error as exc:
        reason = _last_clause(str(exc).splitlines()[0], ": ")
        if "does not exist" not in reason:
            return f"PostgreSQL is not answering on {_where(url)} ({reason})"
    try:
        psycopg.connect(url, dbname="postgres", connect_timeout=CONNECT_TIMEOUT_S).close()
        return None
    except psycopg.Error:
        return f"PostgreSQL on {_where(url)} has no database {urlsplit(url).path.lstrip('/')!r} ({reason})"


def redis_problem(url: str) -> str | None:
    try:
        redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S).ping()
        return None
    except redis.RedisError as exc:
        return f"Redis is not answering on {_where(url)} ({_last_clause(str(exc), '. ').rstrip('.')})"


def chromium_problem(path: str) -> str | None:
    if os.access(path, os.X_OK):
        return None
    return f"Chromium is not installed at {path} (the browser tests drive it)"


def slurm_problem(sinfo: str = "sinfo", nodes: tuple[str, ...] = SLURM_NODES) -> str | None:
    """None when `sinfo` runs and lists every node of the test cluster, else what is wrong (the
    cluster has no variable to point elsewhere: .ci/services starts it)."""
    try:
        done = subprocess.run([sinfo, "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=SLURM_TIMEOUT_S)
    except FileNotFoundError:
        return f"Slurm is not installed ({sinfo} not found)"
    except subprocess.TimeoutExpired:
        return f"Slurm is not answering ({sinfo} ran past {SLURM_TIMEOUT_S} s)"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"Slurm is not answering ({_last_clause(said, ': ')})"
    missing = [node for node in nodes if node not in done.stdout.split()]
    if missing:
        return f"Slurm does not list the test nodes {', '.join(missing)}"
    return None


def problems(database_url: str, redis_url: str, chromium: str, sinfo: str = "sinfo") -> list[tuple[str, str]]:
    """[(what is wrong, the variable that points elsewhere, or "")] for each missing piece."""
    found = [(postgres_problem(database_url), "TEST_DATABASE_URL"), (redis_problem(redis_url), "TEST_REDIS_URL"),
             (chromium_problem(chromium), "GOGH_CHROMIUM"), (slurm_problem(sinfo), "")]
    return [(problem, variable) for problem, variable in found if problem]


def one_line(found: list[tuple[str, str]], *, after_services: bool) -> str:
    what = "; ".join(problem for problem, _ in found)
    variables = " or ".join(variable for _, variable in found if variable)
    if after_services:
        return f"{what}, even after `make services` (its output is above): fix that" + (
            f", or set {variables}" if variables else "")
    return f"{what}: run `make services` (`bash .ci/services`, needs root)" + (
        f" or set {variables}" if variables else "")


def may_start_services() -> bool:
    """`.ci/services` installs with apt and starts servers as root: Debian and root only."""
    return os.geteuid() == 0 and Path("/etc/debian_version").exists() and shutil.which("apt-get") is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="PostgreSQL URL of the integration tier.")
    parser.add_argument("--redis", required=True, help="Redis URL of the integration tier.")
    parser.add_argument("--chromium", default=os.environ.get("GOGH_CHROMIUM", DEFAULT_CHROMIUM))
    parser.add_argument("--sinfo", default="sinfo", help="Slurm's sinfo (the test cluster's, from .ci/services).")
    parser.add_argument("--no-start", action="store_true", help="Never run `make services`; only report.")
    args = parser.parse_args(argv)
    found = problems(args.database, args.redis, args.chromium, args.sinfo)
    if found and not args.no_start and may_start_services():
        print(f"preflight: {'; '.join(problem for problem, _ in found)}: running `make services`", flush=True)
        subprocess.run(["bash", str(ROOT / ".ci" / "services")], check=False)
        found = problems(args.database, args.redis, args.chromium, args.sinfo)
        if found:
            print(one_line(found, after_services=True), file=sys.stderr)
            return 1
    elif found:
        print(one_line(found, after_services=False), file=sys.stderr)
        return 1
    print(f"preflight: PostgreSQL on {_where(args.database)}, Redis on {_where(args.redis)}, Chromium and Slurm "
          f"({', '.join(SLURM_NODES)}) are ready")
    return 0


def _where(url: str) -> str:
    """host:port of a URL, without its credentials."""
    parts = urlsplit(url)
    default_port = 6379 if parts.scheme.startswith("redis") else 5432
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or default_port}"


def _last_clause(message: str, separator: str) -> str:
    """libpq and redis-py end their messages with the reason: 'connection ... failed: Connection refused'."""
    return message.rsplit(separator, 1)[-1].strip()


if __name__ == "__main__":
    sys.exit(main())
