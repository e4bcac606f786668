"""The installed package's import graph (DESIGN "Repository layout"): no cycles among
module-level imports, and every import — module-level or inside a function — points down
the dependency order

    spec  ←  storage  ←  interp, compiler  ←  verify  ←  sparsefold (front end)
          ←  benchmarks  ←  sparsefold.cli (the command line, which registers every package's
                                            subcommand)

``interp`` and ``compiler`` never import each other. ``verify`` reaches the front end only
through its public API (``import sparsefold``/``from sparsefold import <name in __all__>``),
inside the functions that need it; those places are listed in :data:`VERIFY_USES_FRONT_END`
so that a new one fails here until it is looked at.

Inside the compiler, the phases (``compiler/plan``, ``lower``, ``emit``, ``run``; DESIGN §3)
are ordered too: ``emit`` (the loop IR and its printer) and ``plan`` (typed plans from the
spec) import no other phase, ``lower`` reads plans and builds the IR (``plan``, ``emit``),
``run`` may import all three, and the compiler's top-level modules (``pipeline``, ``kernel``,
``aot``) everything. No phase imports a top-level module, and no compiler module imports
another one inside a function: the compiler's import graph is what its module headers say,
and it has no cycles.

The graph is read with ``ast`` from the files the installed package imports (the
``package-dir`` mapping), not from import side effects.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import sparsefold

LAYERS = {"spec": 0, "storage": 1, "interp": 2, "compiler": 2, "verify": 3, "frontend": 4,
          "benchmarks": 5, "cli": 6}
SUBPACKAGES = ("spec", "storage", "interp", "compiler", "verify", "benchmarks")
COMMAND_LINE = {"sparsefold.cli"}

# verify → front end, each inside a function, through the public API only
VERIFY_USES_FRONT_END = {
    "sparsefold.verify.cli",            # prove --kernel compiles the user's expression (sf.jit)
    "sparsefold.verify.differential",   # runs sf.jit and the interpreter on the user's fn
    "sparsefold.verify.fuzz_cases",     # runs the fuzzer's programs through sf.jit
    "sparsefold.verify.random_programs",  # random programs are front-end arrays
    "sparsefold.verify.language",       # a row per public form: built with sf's functions
    "sparsefold.verify.program_fuzz",   # generated programs run through sf.jit
    "sparsefold.verify.rewrite",        # rewrite(LazyArray) returns a LazyArray
    "sparsefold.verify.rules",          # rule(...) written with front-end arrays
}

# the compiler's phases, each with the phases it may import (itself included)
PHASE_IMPORTS = {
    "emit": {"emit"},
    "plan": {"plan"},
    "lower": {"lower", "plan", "emit"},
    "run": {"run", "lower", "plan", "emit"},
}
# our modules a compiler module imports inside a function, each for a stated reason
COMPILER_LAZY_IMPORTS = {
    # the rule catalog is only read when a program is rewritten: `import sparsefold` skips it
    ("sparsefold.compiler.plan.optimize", "sparsefold.spec.catalog"),
}


def _files() -> dict[str, Path]:
    """Module name -> source file, for every module of the installed package."""
    out = {}
    root = Path(sparsefold.__file__).parent
    for path in root.glob("*.py"):
        name = "sparsefold" if path.stem == "__init__" else f"sparsefold.{path.stem}"
        out[name] = path
    # the front end's Dask layer (optional extra) and its array API namespace
    for sub in ("dask", "array_api"):
        for path in (root / sub).glob("*.py"):
            name = f"sparsefold.{sub}" if path.stem == "__init__" \
                else f"sparsefold.{sub}.{path.stem}"
            out[name] = path
    for pkg in SUBPACKAGES:
        spec = importlib.util.find_spec(f"sparsefold.{pkg}")
        (location,) = spec.submodule_search_locations
        for path in Path(location).glob("*.py"):
            name = f"sparsefold.{pkg}" if path.stem == "__init__" \
                else f"sparsefold.{pkg}.{path.stem}"
            out[name] = path
        for path in Path(location).glob("*/*.py"):  # a package's own subpackages
            sub = f"sparsefold.{pkg}.{path.parent.name}"
            out[sub if path.stem == "__init__" else f"{sub}.{path.stem}"] = path
    return out


FILES = _files()


def _layer(module: str) -> tuple[int, str]:
    """(rank in the dependency order, package) of one of our modules."""
    if module in COMMAND_LINE:
        return LAYERS["cli"], "cli"
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return LAYERS[parts[1]], parts[1]
    return LAYERS["frontend"], "frontend"


def _target(node: ast.AST) -> list[tuple[str, tuple[str, ...]]]:
    """(module imported, names taken from it) for one import statement; ours only."""
    if isinstance(node, ast.Import):
        return [(a.name, ()) for a in node.names if a.name.split(".")[0] == "sparsefold"]
    assert node.level == 0, "relative imports are not used"
    if not node.module or node.module.split(".")[0] != "sparsefold":
        return []
    out = []
    names = []
    for a in node.names:
        sub = f"{node.module}.{a.name}"
        if sub in FILES:        # `from sparsefold.spec import sizes`: the module itself
            out.append((sub, ()))
        else:
            names.append(a.name)
    if names:
        out.append((node.module, tuple(names)))
    return out


def _imports(path: Path) -> tuple[list, list]:
    """(module-level imports, imports inside functions), each as (module, names, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, local = [], []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                where = local if in_function else top
                where += [(m, names, child.lineno) for m, names in _target(child)]
            walk(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    walk(tree, False)
    return top, local


IMPORTS = {name: _imports(path) for name, path in FILES.items()}


def test_the_package_is_found():
    packages = {_layer(m)[1] for m in FILES}
    assert packages == set(SUBPACKAGES) | {"frontend", "cli"}
    for top, local in IMPORTS.values():
        for module, _, line in top + local:
            assert module in FILES, f"an import names {module}, which is not one of our modules"


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of ``graph`` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in graph.get(m, ()):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def _violations(imports: dict, local: bool) -> list[str]:
    bad = []
    for module, (top, inner) in imports.items():
        rank, package = _layer(module)
        for target, names, line in (inner if local else top):
            t_rank, t_package = _layer(target)
            if t_package == package:
                continue
            if (local and module in VERIFY_USES_FRONT_END and target == "sparsefold"
                    and all(n in sparsefold.__all__ for n in names)):
                continue
            if t_rank >= rank:
                bad.append(f"{module}:{line} imports {target} ({package} -> {t_package})")
    return bad


def test_no_cycles_among_module_level_imports():
    graph = {m: sorted({t for t, _, _ in IMPORTS[m][0]}) for m in FILES}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_module_level_imports_point_down_the_layers():
    assert _violations(IMPORTS, local=False) == []


def test_imports_inside_functions_point_down_the_layers_too():
    assert _violations(IMPORTS, local=True) == []


def test_the_verify_exceptions_are_still_needed():
    """Each listed verify module does import the front end (else drop it from the list)."""
    for module in VERIFY_USES_FRONT_END:
        top, inner = IMPORTS[module]
        assert any(t == "sparsefold" for t, _, _ in inner), module
        assert not any(_layer(t)[1] == "frontend" for t, _, _ in top), module


def test_the_checks_catch_what_they_are_for():
    """The checkers themselves, on made-up import graphs."""
    assert _cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert _cycle({"a": ["b"], "b": [], "c": ["a"]}) is None
    made_up = {
        "sparsefold.interp.x": ([("sparsefold.compiler.y", (), 1)], []),         # sideways
        "sparsefold.compiler.x": ([], [("sparsefold.verify.rules", (), 2)]),     # upward
        "sparsefold.storage.x": ([("sparsefold.spec.ir", (), 3)], []),            # fine
        "sparsefold.verify.rules": ([("sparsefold", ("LazyArray",), 4)],         # at top
                                    [("sparsefold", ("lazy",), 5)]),             # private
    }
    top = _violations(made_up, local=False)
    inner = _violations(made_up, local=True)
    assert [v.split(" ")[0] for v in top] == ["sparsefold.interp.x:1",
                                              "sparsefold.verify.rules:4"]
    assert [v.split(" ")[0] for v in inner] == ["sparsefold.compiler.x:2",
                                                "sparsefold.verify.rules:5"]


def test_the_fallback_reads_the_language_and_storage_only():
    """``compiler/fallback`` is an independent reading of the language (it is tested against
    the compiled kernels): it imports ``spec``, ``storage`` and itself, none of the
    compiler's passes."""
    modules = [m for m in FILES if m.startswith("sparsefold.compiler.fallback")]
    assert "sparsefold.compiler.fallback.plan" in modules
    for module in modules:
        top, inner = IMPORTS[module]
        for target, _, line in top + inner:
            assert target.startswith(("sparsefold.spec", "sparsefold.storage",
                                      "sparsefold.compiler.fallback")), \
                f"{module}:{line} imports {target}"


def _phase(module: str) -> str | None:
    """The compiler phase of one of our modules: ``plan``, ``lower``, ``emit``, ``run``,
    ``fallback``, or ``top`` (the compiler's own modules outside the phases); None outside
    the compiler."""
    parts = module.split(".")
    if parts[:2] != ["sparsefold", "compiler"]:
        return None
    if len(parts) > 2 and (parts[2] in PHASE_IMPORTS or parts[2] == "fallback"):
        return parts[2]
    return "top"


def _phase_violations(imports: dict) -> list[str]:
    """Imports inside the compiler, module-level or in a function, against the phase order."""
    bad = []
    for module, (top, inner) in imports.items():
        phase = _phase(module)
        if phase not in PHASE_IMPORTS:
            continue
        for target, _, line in top + inner:
            t_phase = _phase(target)
            if t_phase is not None and t_phase not in PHASE_IMPORTS[phase]:
                bad.append(f"{module}:{line} imports {target} ({phase} -> {t_phase})")
    return bad


def _local_imports(imports: dict) -> list[str]:
    """Our modules a compiler module imports inside a function (but the listed ones)."""
    return [f"{module}:{line} imports {target} inside a function"
            for module, (_, inner) in imports.items() if _phase(module) is not None
            for target, _, line in inner
            if (module, target) not in COMPILER_LAZY_IMPORTS]


def test_the_compiler_phases_are_found():
    phases = {_phase(m) for m in FILES} - {None}
    assert phases == set(PHASE_IMPORTS) | {"fallback", "top"}
    for phase in PHASE_IMPORTS:
        assert f"sparsefold.compiler.{phase}" in FILES, phase  # a package of its own


def test_each_compiler_phase_imports_only_the_phases_below_it():
    assert _phase_violations(IMPORTS) == []


def test_no_compiler_module_imports_ours_inside_a_function():
    assert _local_imports(IMPORTS) == []


def test_the_compiler_lazy_imports_are_still_needed():
    """Each listed lazy import is still made inside a function (else drop it from the list)."""
    for module, target in COMPILER_LAZY_IMPORTS:
        top, inner = IMPORTS[module]
        assert any(t == target for t, _, _ in inner), (module, target)
        assert not any(t == target for t, _, _ in top), (module, target)


def test_no_cycles_in_the_compiler_counting_imports_in_functions():
    """The old cycles held open by function-local imports (``build`` <-> ``cache``,
    ``planner`` <-> ``contract``, ``kernel`` <-> ``fastcall``, ``lower_stream`` <->
    ``row_blocks``) stay closed: the compiler's whole import graph has no cycle."""
    compiler = [m for m in FILES if _phase(m) is not None]
    graph = {m: sorted({t for t, _, _ in IMPORTS[m][0] + IMPORTS[m][1]
                        if _phase(t) is not None}) for m in compiler}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_phase_checks_catch_what_they_are_for():
    """The phase checkers, on a made-up import graph."""
    made_up = {
        "sparsefold.compiler.plan.x": ([("sparsefold.compiler.lower.y", (), 1)], []),    # up
        "sparsefold.compiler.emit.x": ([], [("sparsefold.compiler.plan.y", (), 2)]),     # aside
        "sparsefold.compiler.lower.x": ([("sparsefold.compiler.plan.y", (), 3),          # fine
                                         ("sparsefold.compiler.emit.y", (), 4)],         # fine
                                        [("sparsefold.compiler.kernel", (), 5)]),         # top
        "sparsefold.compiler.run.x": ([("sparsefold.compiler.lower.y", (), 6),           # fine
                                       ("sparsefold.spec.ir", (), 7)], []),               # fine
        "sparsefold.compiler.kernel": ([("sparsefold.compiler.run.x", (), 8)], []),       # fine
    }
    assert [v.split(" ")[0] for v in _phase_violations(made_up)] == [
        "sparsefold.compiler.plan.x:1", "sparsefold.compiler.emit.x:2",
        "sparsefold.compiler.lower.x:5"]
    assert [v.split(" ")[0] for v in _local_imports(made_up)] == [
        "sparsefold.compiler.emit.x:2", "sparsefold.compiler.lower.x:5"]
