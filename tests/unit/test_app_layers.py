"""The apps stack one way: gogh_web's shared kit < catalog < telemetry < scheduler < gogh_web's
console and assembly. A module imports only modules of its own layer or below, at the top of
the file or inside a function (a lazy import is still a dependency); migrations are left out
(they name models of other apps by string and history).

Run with -s to see the graph between layers, with how many module-to-module imports make
each edge; a failure prints it too, with every import that goes up."""
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("catalog", "telemetry", "scheduler", "gogh_web")

#: Module (or package prefix) -> layer, bottom to top. The longest prefix that matches decides,
#: so a module is classified by its most specific entry. Every gogh_web module must match an
#: entry other than the bare "gogh_web" package: a new one is placed here on purpose.
LAYERS = {
    # 0: gogh_web's shared kit, which imports no app: API plumbing, live events, the outbox,
    # settings and process configuration.
    "gogh_web": 0,
    "gogh_web.activity": 0,
    "gogh_web.admin_display": 0,
    "gogh_web.api": 0,
    "gogh_web.apps": 0,
    "gogh_web.cache_backend": 0,
    "gogh_web.cache_config": 0,
    "gogh_web.celery": 0,
    "gogh_web.celery_config": 0,
    "gogh_web.broker_transport": 0,
    "gogh_web.cli_args": 0,
    "gogh_web.env": 0,
    "gogh_web.events": 0,
    "gogh_web.formats": 0,
    "gogh_web.outbox": 0,
    "gogh_web.security": 0,
    "gogh_web.settings": 0,
    "gogh_web.supervisor": 0,
    # 1-3: the apps.
    "catalog": 1,
    # The benchmark suite runs as a job on GPU nodes: it reads power through the agent's NVML
    # backend and prints the job contract's lines, so it sits with telemetry; its case list is
    # catalog data that the control plane reads.
    "catalog.profiling": 2,
    "catalog.profiling.cases": 1,
    "telemetry": 2,
    "scheduler": 3,
    # 4: the console and what wires the apps together (routes, /metrics, entry points, commands).
    "gogh_web.asgi": 4,
    "gogh_web.dashboard": 4,
    "gogh_web.management": 4,
    "gogh_web.metrics": 4,
    "gogh_web.urls": 4,
    "gogh_web.views": 4,
    "gogh_web.wsgi": 4,
}
LAYER_NAMES = {0: "gogh_web kit", 1: "catalog", 2: "telemetry", 3: "scheduler", 4: "gogh_web console"}


def entry_of(module: str) -> str | None:
    """The entry of LAYERS that classifies `module` (None: not a module of the apps, e.g. django)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return prefix
    return None


def layer_of(module: str) -> int | None:
    entry = entry_of(module)
    return None if entry is None else LAYERS[entry]


def project_modules() -> dict[str, Path]:
    """Every module of the apps, migrations excluded, by dotted name."""
    modules = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts:
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that `module` imports, anywhere in its file. `from a import b` names
    a.b when that is a module, else a; relative imports are resolved against the package."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {name for name in found if name.split(".")[0] in APPS}


def test_a_module_imports_nothing_of_a_layer_above_its_own():
    modules = project_modules()
    known = set(modules)
    unclassified = sorted(module for module in modules if module != "gogh_web" and entry_of(module) == "gogh_web")
    edges, upward = Counter(), []
    for module, path in modules.items():
        mine = layer_of(module)
        for target in sorted(imports_of(module, path, known)):
            theirs = layer_of(target)
            if theirs is None or target == module:
                continue
            if theirs != mine:
                edges[(mine, theirs)] += 1
            if theirs > mine:
                upward.append(f"{module} ({LAYER_NAMES[mine]}) -> {target} ({LAYER_NAMES[theirs]})")
    graph = "\n".join(
        f"{'UP ' if b > a else '   '}{LAYER_NAMES[a]} -> {LAYER_NAMES[b]}: {count}"
        for (a, b), count in sorted(edges.items())
    )
    print(f"\nImports between layers (module-to-module counts):\n{graph}")
    assert not unclassified, f"gogh_web modules without a layer in LAYERS: {unclassified}"
    assert not upward, "Imports that go up a layer:\n" + "\n".join(upward) + f"\n\n{graph}"


def test_the_layer_walk_sees_function_level_and_relative_imports(tmp_path):
    """The walk counts what the rule is about: an import inside a function, and a relative one."""
    package = tmp_path / "telemetry"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "services.py"
    source.write_text("from . import models\n\ndef later():\n    from scheduler.models import Job\n")
    found = imports_of("telemetry.services", source, {"telemetry.models", "scheduler.models"})
    assert found == {"telemetry.models", "scheduler.models"}
    assert layer_of("scheduler.models") > layer_of("telemetry.services")
