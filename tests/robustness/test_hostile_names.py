"""Generated-code hygiene (issue #6 §5): nothing a user names reaches a kernel's source
unvalidated.

Every user-named thing that could reach generated Cython — input names, size symbol names,
registered elementwise function names and their declared C expressions, user-defined shape
operators (class name, parameters, the size symbols their pieces mention), jit argument
names — is tried with hostile values (quotes, newlines, ``"); import os; os.system(...)``,
``__import__``, non-ASCII, empty, very long, C/Cython keywords and our own variable names,
``*/``, backslashes). Each must give either a kernel that builds and agrees with NumPy /
scipy, or a clear :class:`IllFormedProgram` (a ValueError-type error for a string Python
cannot encode) — and never run the hostile text: a sentinel file in ``tmp_path`` that the
payloads would create must not exist, and the hostile text may appear in the source only on
comment lines.

The C-expression payload ``_EXPLOIT`` did run its command before ``check_c_expr`` existed
(spec/functions.py; compiler_failures.md §20): the test can fail.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.spec import sizes as sz
from sparsefold.spec.functions import FUNCTIONS
from sparsefold.spec.ir import Node, Piece, ShapeOp

pytestmark = pytest.mark.cython

MARK = "zqx"  # in every hostile value, so the source can be searched for it


def hostile(sentinel) -> list[str]:
    """Hostile strings, each containing MARK; the command ones would create ``sentinel``."""
    touch = f"touch {sentinel}"
    return [
        f'a"{MARK}', f"{MARK}\ny", f'"); import os; os.system("{touch}")#{MARK}',
        f"__import__('os').system('{touch}') or {MARK}", f"ünï{MARK}", f"{MARK}-" * 2000,
        f"*/ {MARK} /*", f"{MARK}\\", f"\\\n{MARK}", f"'''{MARK}", f'"""{MARK}',
        f"{MARK}\r\nimport os\r\nos.system('{touch}')", f"{MARK}\x00", f"{MARK}\u2028x",
        f"{{0}}{MARK}{{", f"%s{MARK}", f"{MARK}??/", f"{MARK} -- ; DROP",
    ]


# Not identifiers (IllFormedProgram expected), besides everything in hostile().
NOT_IDENTIFIERS = ["", " ", "1abc", "a-b", "a b", "é", "x\n", "_leading"]

# Identifiers that are keywords of C, Cython or Python, or names the generated code itself
# uses; they are valid names and must give correct kernels.
KEYWORDS = ["int", "double", "cdef", "nogil", "with", "NULL", "run", "S_n0", "range",
            "sizeof", "memcpy", "NAN", "None", "object", "n", "r", "cur", "q0", "v_1",
            "a0_val", "k" * 1000]


def _A(seed=0, shape=(7, 5)):
    rng = np.random.default_rng(seed)
    return sp.random_array(shape, density=0.5, format="csr", rng=rng,
                           data_sampler=lambda size: rng.uniform(-2.0, 2.0, size))


def _dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def _code_lines(source: str) -> list[str]:
    """The lines of a generated source that are not comments."""
    return [line for line in source.splitlines() if not line.lstrip().startswith("#")]


def _assert_only_in_comments(source: str, text: str = MARK) -> None:
    leaked = [line for line in _code_lines(source) if text in line]
    assert not leaked, f"{text!r} reached code lines: {leaked[:3]}"


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "a hostile name ran a command"


@pytest.fixture
def registry():
    """Functions registered by a test are removed afterwards (the registry is global)."""
    before = set(FUNCTIONS)
    yield
    for name in set(FUNCTIONS) - before:
        del FUNCTIONS[name]


def _bound(name: str, array, shape=None) -> sf.LazyArray:
    """An input named ``name`` bound to ``array`` (the public way to choose an input's name:
    a symbol plus bindings)."""
    fmt = "csr" if sp.issparse(array) else "dense"
    node = sf.symbol(name, shape or array.shape, dtype=array.dtype, format=fmt).node
    return sf.LazyArray(node, {name: array})


# -- input names and size symbols ------------------------------------------------------

def test_hostile_input_names_are_rejected(sentinel):
    for name in hostile(sentinel) + NOT_IDENTIFIERS:
        with pytest.raises(sf.IllFormedProgram, match="input name must be an identifier"):
            sf.symbol(name, (3, 3))


def test_hostile_size_symbols_are_rejected(sentinel):
    for name in hostile(sentinel) + NOT_IDENTIFIERS:
        with pytest.raises(sf.IllFormedProgram, match="size symbol must be an identifier"):
            sf.symbol("A", (name, 3))
        with pytest.raises(sf.IllFormedProgram, match="size symbol must be an identifier"):
            sf.symbol("A", (3, 3)).reshape(name, -1)


def test_keyword_input_names_give_correct_kernels():
    # one program whose inputs carry every keyword-like name: one kernel build
    arrays = [_A(seed) for seed in range(len(KEYWORDS))]
    total = _bound(KEYWORDS[0], arrays[0])
    for name, array in zip(KEYWORDS[1:], arrays[1:]):
        total = total + _bound(name, array) * 2
    want = arrays[0].toarray() + 2 * sum(a.toarray() for a in arrays[1:])
    np.testing.assert_allclose(_dense(total.compute(out="csr")), want)
    # .compute() and sf.show name bound inputs by position (a0, a1, ...); the compiler
    # itself is handed the keyword names, so they really reach the code, prefixed
    from sparsefold.jit import compile_program
    source = compile_program(total.node, "csr").source_for(total.bindings)
    assert f"{KEYWORDS[-1]}_val" in source


@pytest.mark.parametrize("name", ["out", "p_out"])
def test_input_named_like_the_output_gives_a_correct_kernel(name):
    a = _A(1)
    np.testing.assert_allclose(_dense((_bound(name, a) * 2).compute(out="csr")),
                               2 * a.toarray())


def test_keyword_size_symbols_give_correct_kernels():
    a = _A(2)
    x = _bound("A", a, shape=("for", "int"))
    np.testing.assert_allclose(_dense((x * 3).compute(out="csr")), 3 * a.toarray())
    assert "S_for" in sf.show(x * 3)


def test_jit_argument_names_do_not_reach_the_source():
    # jit traces on inputs it names itself (a0, a1, ...): Python parameter names, even
    # 'out' or non-ASCII ones, never reach the kernel
    def f(ünï, out):
        return sf.concat([ünï, out], axis=1) * 2
    a, b = _A(3), _A(4)
    np.testing.assert_allclose(_dense(sf.jit(f, out="csr")(a, b)),
                               2 * np.hstack([a.toarray(), b.toarray()]))
    source = sf.show(sf.jit(f, out="csr"), a, b)
    assert "ünï" not in source and "double_restrict out_val," in source


# -- registered elementwise functions: names and declared C expressions -------------------

def test_hostile_function_names_are_rejected(sentinel, registry):
    for name in hostile(sentinel) + NOT_IDENTIFIERS:
        with pytest.raises(sf.IllFormedProgram, match="function name must be an identifier"):
            sf.register_function(name, 1, np.negative, c_expr="(-{0})")
        assert name not in FUNCTIONS


_INDENT = " " * 16  # the depth of a map's value line in a csr stream kernel (sf.show)
# Closes the value expression, runs a command with the GIL, reopens an assignment: with the
# c_expr pasted unchecked, calling the kernel ran the command (compiler_failures.md §20).
_EXPLOIT = ("-{0}))\n" + _INDENT + "with gil:\n" + _INDENT +
            "    __import__('os').system('touch {path}')\n" + _INDENT + "v_1 = ((0")


def test_the_c_expression_exploit_is_rejected_and_does_not_run(sentinel, registry):
    payload = _EXPLOIT.replace("{path}", str(sentinel))
    try:
        sf.register_function("negx", 1, np.negative, c_expr=payload, annihilates=(0,),
                             annihilation_needs_finite=False)
    except sf.IllFormedProgram as exc:
        rejected = exc
    else:  # accepted: build and call its kernel, which must still not run the command
        rejected = None
        try:
            sf.jit(lambda a: sf.apply("negx", a), out="csr")(_A(11))
        except Exception:  # noqa: BLE001 - only the sentinel matters here
            pass
    assert not sentinel.exists(), "the declared C expression ran a command"
    assert rejected is not None and "c_expr of 'negx' must be a one-line expression" in \
        str(rejected)
    assert "negx" not in FUNCTIONS


def _bad_c_exprs(sentinel) -> list:
    touch = f"touch {sentinel}"
    return hostile(sentinel) + [
        "", "{0}\n", "({0}\n)", "{0} # comment", "{0}; {0}", "{0}.real", "{0}[0]",
        "{0}[-100000000]", "{1}", "{x}", "{0!r}", "{0:>3}", "{0.__class__}", "{", "}",
        "<double>{0}", "int({0})", "system({0})", "memcpy({0}, {0}, 8)",
        "_sf_address({0}, 8, 1)", "abs(x={0})", "(lambda: {0})()", "[{0}]", "'{0}'",
        "b'x'", "{0} if {0} else None", "1j * {0}", "{0} := 1", "*{0}", "...",
        f"__import__('os').system('{touch}')", "globals()", "{0}\\\n+ 1", "é + {0}",
        5, b"{0}",
    ]


def test_hostile_c_expressions_are_rejected(sentinel, registry):
    for n, text in enumerate(_bad_c_exprs(sentinel)):
        with pytest.raises(sf.IllFormedProgram, match=rf"c_expr of 'bad{n}' must be"):
            sf.register_function(f"bad{n}", 1, np.negative, c_expr=text, annihilates=(0,),
                                 annihilation_needs_finite=False)
        assert f"bad{n}" not in FUNCTIONS


def test_elementwise_function_constructed_directly_is_checked_too():
    from sparsefold.spec.functions import ElementwiseFunction
    with pytest.raises(sf.IllFormedProgram, match="must be a one-line expression"):
        ElementwiseFunction("direct", 1, np.negative, c_expr="{0})\nimport os\n(")


def test_valid_c_expressions_and_keyword_names_give_correct_kernels(registry, sentinel):
    # (every built-in c_expr passes the same check: they are checked at import)
    long_name = "f" * 3000
    sf.register_function("with", 1, lambda x: np.where(x > 0, x * x, 0.0),
                         c_expr="({0} * {0} if {0} > 0 else 0.0)")
    sf.register_function("nogil", 1, lambda x: np.maximum(x, 0.5) - 0.5,
                         c_expr="(max({0}, 0.5) - 0.5)")
    sf.register_function(long_name, 1, lambda x: np.abs(x) * 2.0, c_expr="fabs({0}) * 2.0")
    sf.register_function("cdef", 2, lambda x, y: np.minimum(x, y) + 1.0,
                         c_expr="min({0}, {1}) + 1.0")
    sf.register_function("run", 1, lambda x: np.power(np.abs(x), 1.5),
                         c_expr="pow(fabs({0}), 1.5)")
    a, b = _A(5), _A(6)
    x, y = sf.asarray(a), sf.asarray(b)
    program = (sf.apply("with", x) + sf.apply("nogil", x) + sf.apply(long_name, y)
               + sf.apply("cdef", x, y) + sf.apply("run", y))
    da, db = a.toarray(), b.toarray()
    want = (np.where(da > 0, da * da, 0.0) + (np.maximum(da, 0.5) - 0.5) + np.abs(db) * 2.0
            + (np.minimum(da, db) + 1.0) + np.abs(db) ** 1.5)
    np.testing.assert_allclose(_dense(program.compute(out="dense")), want)


# -- user-defined shape operators ---------------------------------------------------------

@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Labelled(ShapeOp):
    """np.flip on axis 0, with a free-text parameter (printed in the kernel's header)."""

    arg: Node
    label: str = ""

    def operands(self):
        return (self.arg,)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (s,) = shapes
        k, i = sz.out_coords(len(s)), sz.in_coords(len(s))
        back = (sz.sub(sz.sub(s[0], 1), k[0]),) + k[1:]
        fwd = (sz.sub(sz.sub(s[0], 1), i[0]),) + i[1:]
        return (Piece(0, sz.TRUE, back, sz.TRUE, fwd),)


def _renamed(name: str) -> type:
    """A copy of Labelled whose class name (printed in the header) is ``name``."""
    cls = type("Renamed", (Labelled,), {"__slots__": ()})
    cls.__name__ = cls.__qualname__ = name
    return cls


def test_hostile_operator_names_and_parameters_stay_in_comments(sentinel):
    labels = hostile(sentinel)
    a = _A(7)

    def chain(x):
        for label in labels:  # len(labels) flips: even, so the identity
            x = sf.apply_operator(Labelled, x, label=label)
        x = sf.apply_operator(_renamed(f"Evil{MARK}\nimport os"), x, label="")
        return sf.apply_operator(_renamed(f"Flip*/{MARK}"), x, label=f"\\{MARK}") * 2
    assert len(labels) % 2 == 0
    f = sf.jit(chain, out="csr")
    np.testing.assert_array_equal(_dense(f(a)), 2 * a.toarray())
    source = sf.show(f, a)
    assert source.count(MARK) >= len(labels)  # the labels are there, as comments
    _assert_only_in_comments(source)
    _assert_only_in_comments(source, "os.system")


def test_unencodable_operator_parameter_is_a_value_error():
    # a lone surrogate cannot be written to a source file: a ValueError, no kernel
    f = sf.jit(lambda x: sf.apply_operator(Labelled, x, label="\ud800") * 2, out="csr")
    with pytest.raises(ValueError, match="surrogates not allowed"):
        f(_A(8))


@pytest.mark.parametrize("where", ["guard", "backward"])
def test_hostile_symbols_in_operator_pieces_are_rejected(sentinel, where):
    # sz.Sym does not check its name; a user operator's pieces can carry any string, and a
    # size symbol's name is pasted into the C text (the guard below reached it unchecked
    # before spec/sizes.to_c checked names; compiler_failures.md §20)
    payload = f"x\nimport os\nos.system('touch {sentinel}')\ndef _q():\n  y = 0"

    @dataclass(frozen=True, slots=True, eq=False, repr=False)
    class Sneaky(ShapeOp):
        arg: Node

        def operands(self):
            return (self.arg,)

        def shape_rule(self, shapes):
            return shapes[0]

        def pieces(self, shapes):
            (s,) = shapes
            k, i = sz.out_coords(len(s)), sz.in_coords(len(s))
            evil = sz.Sym(payload)
            if where == "guard":
                return (Piece(0, sz.lt(k[0], evil), k, sz.TRUE, i),)
            back = (sz.minimum(k[0], evil),) + k[1:]
            return (Piece(0, sz.TRUE, back, sz.TRUE, i),)

    f = sf.jit(lambda x: sf.apply_operator(Sneaky, x) * 2, out="csr")
    with pytest.raises(sf.IllFormedProgram, match="size symbol names must be identifiers"):
        f(_A(9))


def test_operator_pieces_with_raw_strings_are_checked(sentinel):
    @dataclass(frozen=True, slots=True, eq=False, repr=False)
    class RawString(ShapeOp):
        arg: Node

        def operands(self):
            return (self.arg,)

        def shape_rule(self, shapes):
            return shapes[0]

        def pieces(self, shapes):
            k, i = sz.out_coords(2), sz.in_coords(2)
            return (Piece(0, sz.TRUE, (k[0], sz.add(k[1], f'0) or os.system("{sentinel}"')),
                          sz.TRUE, i),)

    with pytest.raises(sf.IllFormedProgram, match="size symbol must be an identifier"):
        sf.jit(lambda x: sf.apply_operator(RawString, x), out="csr")(_A(10))

