"""Claims about the code base that the code can check (ARCHITECTURE.md), and about the test suite itself."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Hides Playwright (and the axe plugin on top of it) the way a minimal install lacks it: the import fails with
# ModuleNotFoundError, as it does when the package is not installed.
_HIDE_PLAYWRIGHT = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('playwright', 'axe_playwright_python'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.slow  # collects the whole suite in a subprocess
def test_the_fast_subset_collects_without_playwright():
    r = subprocess.run([sys.executable, "-c", _HIDE_PLAYWRIGHT, "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-m", "not slow and not browser and not mpi", "tests"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    summary = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0 and "error" not in summary, r.stdout[-3000:] + r.stderr[-2000:]
    skipped = [line for line in r.stdout.splitlines() if "could not import 'playwright.sync_api'" in line]
    assert len(skipped) >= 3, "the browser modules are skipped whole, not collected with an import error"


def test_a_pool_built_in_a_test_draws_from_the_test_s_own_seeded_stream(request, tmp_path):
    """tests/conftest.py::seeded_pool_draws: a pool made in a test not marked secret_seeds takes its sides and pair
    ids (and queue seed, gold draws) from a stream seeded by the test's node id, so a failure replays as it was seen
    and a test's draws do not depend on the tests run before it (a CI run failed on a rare draw)."""
    from draws import made_pairs, seed_of, seeded_draws

    made = made_pairs(tmp_path / "one.db", 40)
    with seeded_draws(seed_of(request.node.nodeid)):  # the stream as it began for this test
        assert made_pairs(tmp_path / "two.db", 40) == made
    assert {side for _, side in made} == {"A", "B"}


# --- ARCHITECTURE.md's claims, checked over evalkit/ ---------------------------------------------------------------

import ast  # noqa: E402
import re  # noqa: E402

PKG = ROOT / "evalkit"
HEAVY = {"torch", "transformers", "pandas", "gradio", "matplotlib"}
WRITE_SQL = re.compile(r"^\s*(INSERT\s+(OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                       r"(CREATE|DROP)\s+(TEMP\w*\s+)?(TABLE|INDEX|VIEW|TRIGGER)|ALTER\s+TABLE|VACUUM|ATTACH)\b", re.I)
ANY_SQL = re.compile(r"^\s*(SELECT|WITH|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA)\b[\s\S]*\b(FROM|INTO|SET|TABLE|INDEX|VIEW|TRIGGER|\w+\s*=)",
                     re.I)


def modules():
    """(dotted name, path, parsed tree) of every module of the package."""
    out = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), p, ast.parse(p.read_text(encoding="utf-8"), str(p))))
    return out


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def imported(name: str, node, is_pkg: bool) -> list[str]:
    """Absolute module names an Import/ImportFrom node refers to (a from-import's names included, as they may be
    modules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def top_level_imports(tree):
    """Import nodes that run when the module is imported: not inside a function, not under `if TYPE_CHECKING`."""
    def walk(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from walk(node.orelse)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                yield from walk(node.body)
                yield from walk(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    yield from walk(h.body)
                yield from walk(getattr(node, "finalbody", []))
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body)
    return list(walk(tree.body))


def strings(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        elif isinstance(node, ast.JoinedStr):  # an f-string's literal parts, joined
            yield ast.Constant("".join(v.value for v in node.values if isinstance(v, ast.Constant)), lineno=node.lineno)


def test_heavy_imports_stay_inside_functions():
    found = []
    for name, path, tree in modules():
        for node in top_level_imports(tree):
            for mod in imported(name, node, path.name == "__init__.py"):
                if mod.split(".")[0] in HEAVY:
                    found.append(f"{rel(path)}:{node.lineno} imports {mod} at import time")
    assert not found, "\n".join(sorted(set(found)))


def test_only_the_store_writes():
    """No SQL that writes, no write transaction and no sqlite-utils write outside evalkit/store/."""
    found = []
    for name, path, tree in modules():
        if name.startswith("evalkit.store"):
            continue
        for s in strings(tree):
            if WRITE_SQL.match(s.value):
                found.append(f"{rel(path)}:{s.lineno} SQL that writes: {s.value.strip()[:60]!r}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "write_transaction":
                found.append(f"{rel(path)}:{node.lineno} opens a write transaction")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {
                    "insert", "insert_all", "upsert", "upsert_all", "delete_where", "executescript", "commit",
                    "backup"}:
                target = ast.unparse(node.func.value)
                if re.search(r"\bdb\b|conn|\btable\b|\]$", target):
                    found.append(f"{rel(path)}:{node.lineno} {ast.unparse(node.func)}(...)")
    assert not found, "\n".join(found)


def test_no_sql_in_the_ui():
    found = [f"{rel(path)}:{s.lineno} {s.value.strip()[:60]!r}" for name, path, tree in modules()
             if name.startswith("evalkit.ui") for s in strings(tree) if ANY_SQL.match(s.value)]
    assert not found, "\n".join(found)


def _mentions(node, *words) -> bool:
    text = ast.unparse(node).lower()
    return any(w in text for w in words)


def test_speed_up_identical_share_and_acceptance_only_in_speed():
    """Outside generation/speed.py (and the statistics it calls), nothing divides one path's seconds by another's, compares
    two outputs' token hashes or divides accepted draft tokens."""
    allowed = {"evalkit.generation.speed", "evalkit.stats.speedup"}
    found = []
    for name, path, tree in modules():
        if name in allowed:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                if _mentions(node.left, "second") and _mentions(node.right, "second"):
                    found.append(f"{rel(path)}:{node.lineno} divides seconds: {ast.unparse(node)[:80]}")
                if _mentions(node.left, "accepted"):
                    found.append(f"{rel(path)}:{node.lineno} an acceptance rate: {ast.unparse(node)[:80]}")
            if isinstance(node, ast.Compare) and _mentions(node.left, "token_hash") and any(
                    _mentions(c, "token_hash") for c in node.comparators):
                found.append(f"{rel(path)}:{node.lineno} compares token hashes: {ast.unparse(node)[:80]}")
        for s in strings(tree):
            if re.search(r"\w+\.token_hash\s*=\s*\w+\.token_hash", s.value):
                found.append(f"{rel(path)}:{s.lineno} compares token hashes in SQL")
    assert not found, "\n".join(found)


DEMO_ENTRY = "evalkit.generation.models"


def test_the_demo_pair_is_reached_through_one_entry():
    found = []
    for name, path, tree in modules():
        if name.startswith("evalkit.demo") or name == DEMO_ENTRY:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for mod in imported(name, node, path.name == "__init__.py"):
                    if mod == "evalkit.demo" or mod.startswith("evalkit.demo."):
                        found.append(f"{rel(path)}:{node.lineno} imports {mod}")
    assert not found, "\n".join(sorted(set(found)))


# The floors, lowest first: a module imports (at import time) only from its own floor or below.
FLOORS = [
    ["evalkit.errors", "evalkit.locations", "evalkit.progress", "evalkit.resources"],
    ["evalkit.records", "evalkit.stats"],
    ["evalkit.config", "evalkit.task"],
    ["evalkit.store"],
    ["evalkit.demo", "evalkit.generation"],
    ["evalkit.study"],
    ["evalkit.rating"],
    ["evalkit.aggregate"],
    ["evalkit.publish"],
    ["evalkit.ui"],
    ["evalkit.cli", "evalkit", "evalkit.__main__"],
]


def floor(mod: str) -> int | None:
    best = None
    for i, prefixes in enumerate(FLOORS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return best[0] if best else None


def test_imports_run_down_the_floors_and_never_in_a_cycle():
    names = {n for n, _, _ in modules()}
    graph, up = {}, []
    for name, path, tree in modules():
        own = floor(name)
        assert own is not None, f"{rel(path)} is on no floor of FLOORS: add its package"
        deps = set()
        for node in top_level_imports(tree):
            for mod in imported(name, node, path.name == "__init__.py"):
                if mod in names and mod != name:
                    deps.add(mod)
        graph[name] = deps
        for d in deps:
            if floor(d) > own and not name.startswith(d + ".") and d != "evalkit":
                up.append(f"{name} (floor {own}) imports {d} (floor {floor(d)})")
    assert not up, "\n".join(sorted(up))
    # no cycle among modules, a package's __init__ re-exporting its own modules aside
    seen, stack, cycles = set(), [], []

    def visit(n):
        if n in stack:
            cycles.append(stack[stack.index(n):] + [n])
            return
        if n in seen:
            return
        seen.add(n)
        stack.append(n)
        for d in graph.get(n, ()):
            if not (d.startswith(n + ".") or n.startswith(d + ".")):
                visit(d)
        stack.pop()

    for n in sorted(graph):
        visit(n)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


# --- the README's command table against the CLI ----------------------------------------------------------------------

def _commands():
    import click

    from evalkit.cli import cli

    out = {}
    for name, cmd in cli.commands.items():
        if cmd.hidden:
            continue
        if isinstance(cmd, click.Group):
            for sub, c in cmd.commands.items():
                out[f"{name} {sub}"] = c
        else:
            out[name] = cmd
    return out


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _readme_rows():
    """The README's command table: {command: (its synopsis, its whole row)}. A row may name several commands
    (`evalkit raters list [--json]`, `revoke NAME`, `reissue NAME`): each gets its own synopsis and the row."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Commands"):]
    section = section[: section.index("\n## ", 5)]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `evalkit ([a-z-]+(?: (?:add|list|revoke|reissue|give-up))?)([^`]*)`", line)
        if m:
            rows[m.group(1)] = (m.group(2), line)
            rest_of_cell = re.split(r"(?<!\\)\|", line[m.end():])[0]  # a cell ends at an unescaped pipe (`\|` is text)
            for sub, synopsis in re.findall(r"`(revoke|reissue|list)((?: [^`]*)?)`", rest_of_cell):
                rows[f"raters {sub}"] = (synopsis, line)
    return rows


def _options(command) -> set[str]:
    """The options `evalkit COMMAND --help` lists."""
    return {o for p in command.params if not getattr(p, "hidden", False)
            for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])] if o.startswith("--")}


def test_the_readme_command_table_is_the_cli():
    """Every option the table names, in a synopsis (choice lists with `\\|` included) or in the text beside it, is an
    option of the command that row documents (of one of them, for a row of several)."""
    commands, rows = _commands(), _readme_rows()
    assert set(rows) == set(commands), (f"in the README only: {sorted(set(rows) - set(commands))}; "
                                        f"in the CLI only: {sorted(set(commands) - set(rows))}")
    wrong = []
    for name, (synopsis, _row) in rows.items():
        if unknown := set(OPTION.findall(synopsis)) - _options(commands[name]):
            wrong.append(f"`evalkit {name}` synopsis: {sorted(unknown)}")
    by_row: dict[str, set] = {}
    for name, (_synopsis, row) in rows.items():
        by_row.setdefault(row, set()).update(_options(commands[name]))
    for row, options in by_row.items():
        if unknown := set(OPTION.findall(row)) - options:
            wrong.append(f"row {row[:60]!r}…: {sorted(unknown)}")
    assert not wrong, "the README's command table names options its command does not have:\n" + "\n".join(wrong)


# --- each CLI command is one library call --------------------------------------------------------------------------

PRESENTATION = re.compile(r"^(format_|render_|as_text|to_json)")


def _library_calls(fn: ast.FunctionDef, module_names: dict) -> list[str]:
    """The library functions a command calls: names imported from evalkit outside cli/ (at module level or in the
    function), formatters (format_*) aside."""
    names = dict(module_names)
    for node in ast.walk(fn):
        if isinstance(node, ast.ImportFrom) and node.level and not (node.module or "").startswith("cli") and node.level >= 2:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    calls = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            root = f
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in names:
                called = ast.unparse(f)
                if not PRESENTATION.match(called.split(".")[-1]) and not called.endswith("Error"):  # raising is no call
                    calls.append(called)
    return calls


def test_each_cli_command_is_one_library_call():
    found = []
    for p in sorted((PKG / "cli").glob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        module_names = {a.asname or a.name: f"{n.module}.{a.name}" for n in tree.body if isinstance(n, ast.ImportFrom)
                        and n.level >= 2 for a in n.names}
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and any("command" in ast.unparse(d) for d in fn.decorator_list):
                calls = _library_calls(fn, module_names)
                if len(calls) > 1:
                    found.append(f"{rel(p)}:{fn.lineno} {fn.name} makes {len(calls)} library calls: {', '.join(calls)}")
    assert not found, "\n".join(found)
