"""Storage formats: a list of levels in storage order plus a mode ordering (DESIGN §1).

Levels are capability objects (STYLE 11): the compiler asks what a level can do and never
branches on a format's name. Math signatures, for a level storing coordinates of mode ``m``
under a parent position ``p``:

* :class:`Dense` — coordinates ``0 .. N-1``; child position ``p*N + i``. Full, ordered,
  unique; can *locate* (random access) and iterate.
* :class:`Compressed` — ``pos[p] .. pos[p+1]`` index ``crd``; child position is the index
  into ``crd``. Can iterate and append; ``ordered``/``unique`` are flags (COO's first level
  is compressed-nonunique).
* :class:`Singleton` — exactly one coordinate ``crd[p]`` per parent position (COO's trailing
  levels); can iterate and append.

A format with levels ``L`` and ``mode_order`` ``m`` stores logical mode ``m[l]`` at level
``l`` (CSC = CSR's levels with ``mode_order=(1, 0)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparsefold.spec.errors import IllFormedProgram

__all__ = ["Level", "Dense", "Compressed", "Singleton", "Format", "named_format", "FORMAT_NAMES"]


@dataclass(frozen=True, slots=True)
class Level:
    """Base of level kinds. Capabilities are class-level facts; flags are per instance."""

    ordered: bool = True
    unique: bool = True

    full = False        # stores every coordinate of its mode
    locate = False      # random access to a coordinate
    iterate = True      # can enumerate its stored coordinates
    append = False      # can be written in coordinate order
    has_pos = False     # carries a pos (segment) array
    has_crd = False     # carries a crd (coordinate) array


@dataclass(frozen=True, slots=True)
class Dense(Level):
    """Every coordinate 0..N-1 is stored; child position p*N + i."""

    full = True
    locate = True
    append = True

    def __str__(self) -> str:
        return "dense"


@dataclass(frozen=True, slots=True)
class Compressed(Level):
    """Segments pos[p]..pos[p+1] of a crd array."""

    append = True
    has_pos = True
    has_crd = True

    def __str__(self) -> str:
        flags = ("" if self.ordered else "¬ordered,") + ("" if self.unique else "¬unique")
        return f"compressed({flags.rstrip(',')})" if flags else "compressed"


@dataclass(frozen=True, slots=True)
class Singleton(Level):
    """One coordinate crd[p] per parent position (COO's trailing levels)."""

    append = True
    has_crd = True

    def __str__(self) -> str:
        flags = ("" if self.ordered else "¬ordered,") + ("" if self.unique else "¬unique")
        return f"singleton({flags.rstrip(',')})" if flags else "singleton"


@dataclass(frozen=True, slots=True)
class Format:
    """Levels in storage order and the logical mode each one stores."""

    levels: tuple[Level, ...]
    mode_order: tuple[int, ...]
    name: str = ""
    is_dense: bool = field(init=False, compare=False, repr=False, default=False)
    # what each level can do, as lowering asks it: "full" (dense), "pos" (pos + crd arrays)
    # or "one" (a crd array only: singleton)
    kinds: tuple[str, ...] = field(init=False, compare=False, repr=False, default=())

    def __post_init__(self):
        n = len(self.levels)
        if sorted(self.mode_order) != list(range(n)):
            raise IllFormedProgram(
                f"mode_order must be a permutation of 0..{n - 1}, found {self.mode_order}")
        for lv in self.levels:
            if not isinstance(lv, Level):
                raise IllFormedProgram(f"levels must be Level objects, found {lv!r}")
        object.__setattr__(self, "is_dense", all(lv.full for lv in self.levels))
        object.__setattr__(self, "kinds", tuple(
            "full" if lv.full else "pos" if lv.has_pos else "one" for lv in self.levels))

    @property
    def ndim(self) -> int:
        return len(self.levels)

    def __str__(self) -> str:
        if self.name:
            return self.name
        return "format(" + ", ".join(map(str, self.levels)) + f"; order={self.mode_order})"


def _coo(ndim: int) -> Format:
    if ndim == 0:
        return Format((), (), "coo")
    levels = (Compressed(unique=ndim == 1),) + tuple(
        Singleton(unique=d == ndim - 1) for d in range(1, ndim))
    return Format(levels, tuple(range(ndim)), "coo")


def _need(name: str, ndim: int, allowed: tuple[int, ...]) -> None:
    if ndim not in allowed:
        want = " or ".join(f"{d}-d" for d in allowed)
        raise IllFormedProgram(f"format {name!r} stores {want} arrays, found a {ndim}-d array")


def named_format(name: str, ndim: int) -> Format:
    """The format called ``name`` for an ``ndim``-dimensional array."""
    if isinstance(name, Format):
        if name.ndim != ndim:
            raise IllFormedProgram(f"format {name} has {name.ndim} levels, array is {ndim}-d")
        return name
    if name == "dense":
        return Format(tuple(Dense() for _ in range(ndim)), tuple(range(ndim)), "dense")
    if name == "coo":
        return _coo(ndim)
    if name in ("csr", "csc"):
        _need(name, ndim, (1, 2))
        if ndim == 1:  # a compressed sparse vector (scipy's 1-d csr_array)
            return Format((Compressed(),), (0,), name)
        return Format((Dense(), Compressed()), (0, 1) if name == "csr" else (1, 0), name)
    if name in ("dcsr", "dcsc"):
        _need(name, ndim, (2,))
        return Format((Compressed(), Compressed()), (0, 1) if name == "dcsr" else (1, 0), name)
    if name == "csf":
        return Format(tuple(Compressed() for _ in range(ndim)), tuple(range(ndim)), "csf")
    if name == "sparse_vector":
        _need(name, ndim, (1,))
        return Format((Compressed(),), (0,), "sparse_vector")
    raise IllFormedProgram(f"unknown format {name!r}; known: {', '.join(FORMAT_NAMES)}")


FORMAT_NAMES = ("dense", "csr", "csc", "coo", "dcsr", "dcsc", "csf", "sparse_vector")
