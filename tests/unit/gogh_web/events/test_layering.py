"""The event stream carries the apps' events and imports none of them: each app builds its own
kinds (`<app>/live.py`, named in settings.GOGH_LIVE_KINDS), so the apps stand on the stream and
never the other way round (an import back would close a circle through the apps' services)."""
import ast
from pathlib import Path

import gogh_web.events

APPS = {"catalog", "telemetry", "scheduler"}


def _imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_the_event_stream_imports_no_app_not_even_inside_a_function():
    root = Path(gogh_web.events.__file__).parent
    modules = [path for path in root.rglob("*.py") if "migrations" not in path.parts]
    assert len(modules) > 10  # the walk found the package
    found = {
        f"{path.relative_to(root)}: {name}"
        for path in modules
        for name in _imported_modules(path)
        if name.split(".")[0] in APPS
    }
    assert found == set()
