"""Imports flow one way: api, collectors and optimizers use brain; brain uses none of them."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE_BRAIN = {"api", "collectors", "optimizers"}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _imported_packages(path: Path) -> set[str]:
    return {module.split(".")[0] for module in _imported_modules(path)}


def test_brain_never_imports_api_collectors_or_optimizers():
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & OUTSIDE_BRAIN)
        for path in (ROOT / "brain").rglob("*.py")
        if _imported_packages(path) & OUTSIDE_BRAIN
    }
    assert offenders == {}


# Optimizers are pure: no database, no global settings, no network.
IMPURE_PACKAGES = {"api", "collectors", "sqlalchemy", "psycopg", "httpx", "prometheus_api_client"}
IMPURE_BRAIN_MODULES = (
    "brain.config",
    "brain.db",
    "brain.history",
    "brain.portraits",
    "brain.services",
    "brain.summaries",
)


def test_optimizers_are_pure():
    for path in (ROOT / "optimizers").rglob("*.py"):
        modules = _imported_modules(path)
        assert not _imported_packages(path) & IMPURE_PACKAGES, path
        assert not [m for m in modules if m.startswith(IMPURE_BRAIN_MODULES)], path


# --- optimizers propose; the stage combines and bounds ------------------------------------

# What the stage runs after its optimizers. An optimizer sizes with the role arithmetic
# (brain.optimizing.roles) and leaves bounding to the stage: one that ran the bounds
# itself would see its plan bounded twice, or depend on the chain's order.
STAGE_MACHINERY = (
    "brain.optimizing.bounds",
    "brain.optimizing.combine",
    "brain.optimizing.pipeline",
)


def stage_machinery_in_optimizers(root: Path) -> list[str]:
    """Imports (also inside functions, also ``from brain.optimizing import bounds``) of
    the stage's machinery in the ``optimizers`` package."""
    found = []
    for path in sorted((root / "optimizers").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        named = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                named |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        found += [
            f"{where} imports {module}"
            for module in sorted(named)
            if any(module == m or module.startswith(f"{m}.") for m in STAGE_MACHINERY)
        ]
    return found


def test_optimizers_do_not_import_the_stage_machinery():
    assert stage_machinery_in_optimizers(ROOT) == []


def test_the_machinery_check_finds_an_optimizer_that_bounds_its_own_plan(tmp_path):
    (tmp_path / "optimizers").mkdir()
    (tmp_path / "optimizers" / "greedy.py").write_text(
        "from brain.optimizing.roles import current_role\n"
        "from brain.optimizing import bounds\n"
        "def propose(context, settings):\n"
        "    from brain.optimizing.bounds.chain import run_chain\n"
    )
    assert stage_machinery_in_optimizers(tmp_path) == [
        "optimizers/greedy.py imports brain.optimizing.bounds",
        "optimizers/greedy.py imports brain.optimizing.bounds.chain",
        "optimizers/greedy.py imports brain.optimizing.bounds.chain.run_chain",
    ]


def _brain_part(path: Path) -> str:
    """The subpackage (or top-level module) of ``brain`` that a file belongs to."""
    return path.relative_to(ROOT / "brain").parts[0].removesuffix(".py")


def brain_dependencies() -> dict[str, dict[str, set[str]]]:
    """``{part: {imported part: files importing it}}`` between parts of ``brain``,
    counting every import (also inside functions) except those of a part's own modules."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in (ROOT / "brain").rglob("*.py"):
        if path.parent == ROOT / "brain" and path.name == "__init__.py":
            continue
        source = _brain_part(path)
        graph.setdefault(source, {})
        for module in _imported_modules(path):
            parts = module.split(".")
            if parts[0] == "brain" and len(parts) > 1 and parts[1] != source:
                graph[source].setdefault(parts[1], set()).add(str(path.relative_to(ROOT)))
    return graph


def find_cycle(graph: dict[str, dict[str, set[str]]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or ``None`` if the graph has none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(part: str) -> list[str] | None:
        if part in path:
            return [*path[path.index(part) :], part]
        if part in done:
            return None
        path.append(part)
        for imported in sorted(graph.get(part, {})):
            cycle = visit(imported)
            if cycle:
                return cycle
        path.pop()
        done.add(part)
        return None

    for part in sorted(graph):
        cycle = visit(part)
        if cycle:
            return cycle
    return None


def test_no_import_cycle_between_brain_subpackages():
    graph = brain_dependencies()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})" for a, b in pairwise(cycle)]
        raise AssertionError("import cycle inside brain:\n" + "\n".join(steps))


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    chain = {"a": {"b": {"f"}}, "b": {"c": {"f"}}, "c": {}}
    assert find_cycle(chain) is None
    chain["c"] = {"a": {"f"}}
    assert find_cycle(chain) == ["a", "b", "c", "a"]


# --- what brain serve runs is put together in one place ----------------------------------

COMPOSITION_ROOT = "api/server.py"
# The functions that start a part of brain serve, by the module that defines them.
PART_STARTERS = {
    "brain.summaries.refresher": {"start_refresher"},
    "brain.retraining.service": {"start_learned_models"},
    "api.dlrover.server": {"start"},
    "collectors.service": {"CollectorService"},
}
# `brain collect` runs the collector on its own.
ALSO_STARTS = {"collectors/cli.py": {"collectors.service"}}
# Where the app's state is created and typed; everyone else goes through server_state().
STATE_OWNERS = {"api/app.py", "api/state.py"}
OWN_PACKAGES = ("api", "brain", "collectors", "optimizers")
# Entry point groups that are for third-party plugins only.
PLUGIN_GROUPS = ("brain.app_hooks", "brain.commands", "brain.app_factory")


def _is_app(node: ast.expr) -> bool:
    """``app``, ``<x>.app`` or ``scope["app"]``."""
    if isinstance(node, ast.Name):
        return node.id == "app"
    if isinstance(node, ast.Attribute):
        return node.attr == "app"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "app"
    return False


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (names used only as types)."""
    nodes: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            todo += node.orelse
            continue
        todo += ast.iter_child_nodes(node)
    return nodes


def wiring_outside_the_root(root: Path) -> list[str]:
    """Places other than the composition root that start a part of brain serve, and
    reads or writes of ``app.state.<attribute>`` outside the state's owners."""
    found = []
    for package in OWN_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            for node in _runtime_nodes(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and node.module in PART_STARTERS:
                    starters = {a.name for a in node.names} & PART_STARTERS[node.module]
                    allowed = where == COMPOSITION_ROOT or node.module in ALSO_STARTS.get(where, ())
                    if starters and not allowed:
                        found.append(f"{where} imports {sorted(starters)} from {node.module}")
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "state"
                    and _is_app(node.value.value)
                    and where not in STATE_OWNERS
                ):
                    found.append(f"{where}:{node.lineno} uses app.state.{node.attr}")
    return sorted(found)


def own_parts_in_plugin_groups(pyproject: Path) -> list[str]:
    """Entry points of the plugin groups that name one of Brain's own packages."""
    groups = tomllib.loads(pyproject.read_text())["project"].get("entry-points", {})
    return [
        f"{group}: {name} = {target}"
        for group in PLUGIN_GROUPS
        for name, target in groups.get(group, {}).items()
        if target.split(":")[0].split(".")[0] in OWN_PACKAGES
    ]


def test_brain_serve_is_put_together_only_in_the_composition_root():
    assert wiring_outside_the_root(ROOT) == []
    assert own_parts_in_plugin_groups(ROOT / "pyproject.toml") == []


def test_the_wiring_check_finds_a_part_started_elsewhere(tmp_path):
    (tmp_path / "api" / "routers").mkdir(parents=True)
    (tmp_path / "api" / "server.py").write_text(
        "from brain.summaries.refresher import start_refresher\n"
    )
    (tmp_path / "api" / "routers" / "jobs.py").write_text(
        "from brain.summaries.refresher import start_refresher, refresh_once\n"
        "def handler(request):\n"
        "    return request.app.state.engine\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n'
        '[project.entry-points."brain.app_hooks"]\n'
        'refresher = "brain.summaries.refresher:attach"\n'
        'theirs = "acme.hooks:attach"\n'
    )
    assert wiring_outside_the_root(tmp_path) == [
        "api/routers/jobs.py imports ['start_refresher'] from brain.summaries.refresher",
        "api/routers/jobs.py:3 uses app.state.engine",
    ]
    assert own_parts_in_plugin_groups(tmp_path / "pyproject.toml") == [
        "brain.app_hooks: refresher = brain.summaries.refresher:attach"
    ]


# --- routers and the gRPC servicer run no queries ----------------------------------------

# A handler may name the session (and its factory) as a type; statements belong to
# brain.services.
HANDLER_SQLALCHEMY_NAMES = {"Session", "sessionmaker"}
# The gRPC servicer is as thin as a router: it reads a request, calls a service, answers.
HANDLERS = ("api/routers/*.py", "api/dlrover/servicer.py")


def queries_in_handlers(root: Path) -> list[str]:
    """Imports in the routers and the gRPC servicer of SQLAlchemy statement constructs or
    ORM tables."""
    found = []
    for path in sorted(p for pattern in HANDLERS for p in root.glob(pattern)):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [f"{where}: import {a.name}" for a in node.names if a.name == "sqlalchemy"]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = {a.name for a in node.names}
                if node.module.split(".")[0] == "sqlalchemy":
                    found += [
                        f"{where}: {name} from {node.module}"
                        for name in sorted(names - HANDLER_SQLALCHEMY_NAMES)
                    ]
                elif node.module == "brain.db.models":
                    found += [f"{where}: {name} from brain.db.models" for name in sorted(names)]
    return found


def test_routers_and_the_servicer_run_no_queries():
    assert queries_in_handlers(ROOT) == []


def test_the_handler_check_finds_a_query(tmp_path):
    (tmp_path / "api" / "routers").mkdir(parents=True)
    (tmp_path / "api" / "dlrover").mkdir(parents=True)
    (tmp_path / "api" / "routers" / "plans.py").write_text(
        "from sqlalchemy import select, text\n"
        "from sqlalchemy.orm import Session\n"
        "from brain.db.models import NodeRow\n"
    )
    (tmp_path / "api" / "dlrover" / "servicer.py").write_text(
        "from sqlalchemy.orm import Session, sessionmaker\n"
        "from brain.db.models import ScalePlanRow\n"
    )
    assert queries_in_handlers(tmp_path) == [
        "api/dlrover/servicer.py: ScalePlanRow from brain.db.models",
        "api/routers/plans.py: select from sqlalchemy",
        "api/routers/plans.py: text from sqlalchemy",
        "api/routers/plans.py: NodeRow from brain.db.models",
    ]


# --- DLRover lives in its adapter --------------------------------------------------------

ADAPTER = "api/dlrover"
# DLRover's generated stubs, the gRPC runtime that serves them and the Kubernetes client
# that reads its ElasticJobs.
DLROVER_PACKAGES = {"dlrover", "grpc", "grpc_health", "kubernetes"}
# Who uses the adapter: the composition root starts it (and the state types it), and the
# plan pages render the ScalePlan object through it.
ADAPTER_USERS = {"api/server.py", "api/state.py", "api/routers/plans.py", "api/console/pages.py"}


def dlrover_outside_its_adapter(root: Path) -> list[str]:
    """Imports of DLRover's packages outside the adapter, and of the adapter by anyone
    but its users (``brain``, ``collectors`` and ``optimizers`` never)."""
    found = []
    for package in OWN_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where.startswith(f"{ADAPTER}/"):
                continue
            for module in sorted(_imported_modules(path)):
                dlrover_package = module.split(".")[0] in DLROVER_PACKAGES
                adapter = module == "api.dlrover" or module.startswith("api.dlrover.")
                if dlrover_package or (adapter and where not in ADAPTER_USERS):
                    found.append(f"{where} imports {module}")
    return found


def test_dlrover_lives_in_its_adapter():
    assert dlrover_outside_its_adapter(ROOT) == []


def test_the_adapter_check_finds_dlrover_elsewhere(tmp_path):
    for module, source in {
        "api/dlrover/servicer.py": "import grpc\nfrom dlrover.proto import brain_pb2\n",
        "api/routers/plans.py": "from api.dlrover.scaleplan import scaleplan\n",
        "api/routers/jobs.py": "from api.dlrover.stages import translate\n",
        "brain/services/plans.py": "from api.dlrover.ps_hosts import ps_hosts\n",
        "collectors/service.py": "import grpc\n",
    }.items():
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(source)
    (tmp_path / "optimizers").mkdir()
    assert dlrover_outside_its_adapter(tmp_path) == [
        "api/routers/jobs.py imports api.dlrover.stages",
        "brain/services/plans.py imports api.dlrover.ps_hosts",
        "collectors/service.py imports grpc",
    ]


# --- read handlers are given a read session --------------------------------------------

READ_ROUTE_METHODS = {"get", "head"}
# The session dependency a handler that may write asks for.
WRITING_SESSION = "SessionDep"


def writing_sessions_in_read_handlers(root: Path) -> list[str]:
    """GET and HEAD handlers of ``api`` that ask for a writing session (``SessionDep``)
    rather than ``ReadSessionDep``, which the type checker keeps from writing."""
    found = []
    for path in sorted((root / "api").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            reads = any(
                isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr in READ_ROUTE_METHODS
                for d in node.decorator_list
            )
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            found += [
                f"{where}: {node.name}({a.arg})"
                for a in arguments
                if reads and getattr(a.annotation, "id", None) == WRITING_SESSION
            ]
    return found


def test_read_handlers_are_given_a_read_session():
    assert writing_sessions_in_read_handlers(ROOT) == []


def test_the_read_session_check_finds_a_writing_session_in_a_get(tmp_path):
    (tmp_path / "api" / "routers").mkdir(parents=True)
    (tmp_path / "api" / "routers" / "jobs.py").write_text(
        "@router.get('/{uid}')\n"
        "def get_job(uid: str, session: ReadSessionDep): ...\n"
        "@router.put('/{uid}')\n"
        "def put_job(uid: str, session: SessionDep): ...\n"
    )
    assert writing_sessions_in_read_handlers(tmp_path) == []
    (tmp_path / "api" / "routers" / "plans.py").write_text(
        "@router.get('/plans')\nasync def list_plans(session: SessionDep): ...\n"
    )
    assert writing_sessions_in_read_handlers(tmp_path) == [
        "api/routers/plans.py: list_plans(session)"
    ]


# --- brain serve without the offline tools -----------------------------------------------

SERVE_ENTRIES = ("api.server", "api.workers")
LAB = "brain.lab"
# The program's command table names the lab's commands; nothing else outside the lab does.
NAMES_THE_LAB_COMMANDS = {"brain/cli.py"}


def _is_lab(module: str) -> bool:
    return module == LAB or module.startswith(f"{LAB}.")


def _module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.exists():
            return path
    return None


def _own_imports(root: Path, module: str, path: Path) -> set[str]:
    """The modules of our packages ``path`` imports anywhere (also inside functions),
    with their parent packages."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            named |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            named |= {base} | {f"{base}.{a.name}" for a in node.names}
    found = set()
    for name in named:
        parts = name.split(".")
        if parts[0] in OWN_PACKAGES:
            found |= {
                ".".join(parts[:i])
                for i in range(1, len(parts) + 1)
                if _module_file(root, ".".join(parts[:i]))
            }
    return found


def lab_modules_served(root: Path) -> list[str]:
    """Modules of ``brain.lab`` that brain serve's modules import, directly or through
    others, anywhere in them (also inside functions)."""
    seen: set[str] = set()
    todo = list(SERVE_ENTRIES)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _module_file(root, module)
        if path is not None:
            todo += _own_imports(root, module, path) - seen
    return sorted(m for m in seen if _is_lab(m))


def lab_modules_loaded(root: Path) -> list[str]:
    """Modules of ``brain.lab`` loaded by importing brain serve's entry modules, in a
    fresh interpreter on the packages under ``root``."""
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r})\n"
        f"import {', '.join(SERVE_ENTRIES)}\n"
        f"print(sorted(m for m in sys.modules if m == {LAB!r} or m.startswith({LAB + '.'!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return ast.literal_eval(result.stdout.splitlines()[-1])


def lab_imports_outside_the_lab(root: Path) -> list[str]:
    """Imports of ``brain.lab`` (anywhere in a file, type-only ones too) by our modules
    outside it, other than the command table's."""
    found = []
    for package in OWN_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where.startswith("brain/lab/") or where in NAMES_THE_LAB_COMMANDS:
                continue
            found += [f"{where}: {m}" for m in sorted(_imported_modules(path)) if _is_lab(m)]
    return found


def test_brain_serve_imports_no_lab_module():
    assert lab_modules_served(ROOT) == []
    assert lab_modules_loaded(ROOT) == []


def test_only_the_command_table_outside_the_lab_imports_it():
    assert lab_imports_outside_the_lab(ROOT) == []


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for module, source in files.items():
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        (root / module).write_text(source)


def test_the_lab_checks_find_a_lab_module_in_serve(tmp_path):
    _write_tree(
        tmp_path,
        {
            "api/__init__.py": "",
            "api/server.py": "from brain.replay import harness\n",
            "api/workers.py": "from api import server\n",
            "brain/__init__.py": "",
            "brain/cli.py": "from brain.lab.simulation import run\n",
            "brain/replay/__init__.py": "",
            "brain/replay/harness.py": "",
            "brain/lab/__init__.py": "",
            "brain/lab/simulation/__init__.py": "",
            "brain/lab/simulation/run.py": "from brain.replay import harness\n",
        },
    )
    assert lab_modules_served(tmp_path) == []
    assert lab_modules_loaded(tmp_path) == []
    assert lab_imports_outside_the_lab(tmp_path) == []
    (tmp_path / "brain" / "replay" / "harness.py").write_text(
        "def lazily():\n    from brain.lab.simulation import run\n"
    )
    assert lab_modules_served(tmp_path) == [
        "brain.lab",
        "brain.lab.simulation",
        "brain.lab.simulation.run",
    ]
    assert lab_imports_outside_the_lab(tmp_path) == [
        "brain/replay/harness.py: brain.lab.simulation"
    ]
    (tmp_path / "api" / "workers.py").write_text("import brain.lab.simulation.run\n")
    assert lab_modules_loaded(tmp_path) == [
        "brain.lab",
        "brain.lab.simulation",
        "brain.lab.simulation.run",
    ]


# --- what runs where is declared by the optimizers, not listed in the core --------------

# Where a list of plugins would decide what runs: the settings' defaults, the stage
# machinery and the DLRover stage mapping.
PIPELINE_DECIDERS = ("brain/config.py", "brain/optimizing", "api/dlrover")


def plugin_names(pyproject: Path) -> set[str]:
    entry_points = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    return set(entry_points.get("brain.optimizers", {}))


def plugins_named_in_the_core(root: Path) -> list[str]:
    """String constants naming one of our optimizers where the pipeline is decided."""
    names = plugin_names(root / "pyproject.toml")
    found = []
    for place in PIPELINE_DECIDERS:
        paths = [root / place] if place.endswith(".py") else sorted((root / place).rglob("*.py"))
        for path in paths:
            if not path.exists():
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in names:
                    found.append(f"{path.relative_to(root).as_posix()} names {node.value}")
    return found


def test_no_plugin_is_named_where_the_pipeline_is_decided():
    # a renamed place would leave nothing to check
    assert [place for place in PIPELINE_DECIDERS if not (ROOT / place).exists()] == []
    assert plugins_named_in_the_core(ROOT) == []


def test_the_plugin_name_check_finds_a_listed_plugin(tmp_path):
    _write_tree(
        tmp_path,
        {
            "pyproject.toml": '[project.entry-points."brain.optimizers"]\n'
            'hot_ps = "optimizers.hot_ps:HotPsOptimizer"\n',
            "brain/config.py": 'DEFAULTS = {"running": ["hot_ps"]}\n',
            "brain/optimizing/pipeline.py": '"""Runs hot_ps and others."""\nSTAGE = "running"\n',
            "api/dlrover/stages.py": 'PS_SIDE = frozenset({"hot_ps"})\n',
            "api/routers/plans.py": 'EXAMPLE = "hot_ps"\n',
        },
    )
    assert plugins_named_in_the_core(tmp_path) == [
        "brain/config.py names hot_ps",
        "api/dlrover/stages.py names hot_ps",
    ]
