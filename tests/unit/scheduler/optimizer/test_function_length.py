"""No function or method of the optimiser is longer than MAX_LINES: the densest logic of the
project stays in pieces that are named for what they do and can be tested alone."""
import ast
from pathlib import Path

import scheduler.optimizer

MAX_LINES = 80
PACKAGE = Path(scheduler.optimizer.__file__).parent


def long_functions(root: Path, limit: int) -> list[str]:
    """'module:line name (N lines)' of every function or method (nested ones too) over `limit`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_of_the_optimiser_is_over_80_lines():
    assert long_functions(PACKAGE, MAX_LINES) == []


def test_the_walk_finds_long_functions_and_methods(tmp_path):
    body = "".join(f"        x{n} = {n}\n" for n in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}")
    assert long_functions(tmp_path, MAX_LINES) == [f"m.py:6 long ({MAX_LINES + 1} lines)"]
