"""Settings inputs read from the environment, with defaults that work on one machine.

Kept apart from settings.py so the rules (what counts as true, where var/ is, how the secret
key is made once) are testable on their own.
"""
import os
import secrets
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

TRUE_WORDS = {"1", "true", "yes", "on"}


def flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in TRUE_WORDS


def var_dir() -> Path:
    """Where the embedded defaults keep their state (SQLite file, broker folders, secret key)."""
    path = Path(os.environ.get("GOGH_VAR_DIR", BASE_DIR / "var")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def secret_key(var: Path) -> str:
    """DJANGO_SECRET_KEY if given, else a key generated once into var/secret_key (mode 0600)."""
    given = os.environ.get("DJANGO_SECRET_KEY")
    if given:
        return given
    path = var / "secret_key"
    if not path.exists():
        # Written whole under a private name, then linked into place: processes started
        # together (daphne, worker, beat) all end up reading the one key that won.
        tmp = var / f".secret_key.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()


def csv_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
