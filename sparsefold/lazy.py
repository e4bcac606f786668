"""Lazy arrays: a program (an IR node) plus the user arrays bound to its inputs.

Nothing is computed until :meth:`LazyArray.interpret` (the reference interpreter) or
:meth:`LazyArray.compute` (one compiled kernel) is called, or until Python needs a value now:
a conversion to a Python scalar (``bool``, ``int``, ``float``, ``complex``,
``operator.index`` of a 0-d array), ``__array__`` and ``__dlpack__``. Those materialize the
program with the engine its size calls for (``sparsefold.materialize``). ``x[key] = value``
and the in-place operators (``x += y``) make ``x`` a new program; no array is written.
``x.__array_namespace__()`` is ``sparsefold.array_api``, the array API standard's
namespace over these arrays (docs/array_api.md).
``sf.asarray`` wraps an array *without copying it*; ``sf.symbol`` makes an input with
symbolic sizes for the verifier.

Inputs are named by position: wherever a program is shown, interpreted or compiled, the arrays
bound by ``sf.asarray`` are ``a0, a1, ...`` in the order the program first uses them
(:func:`canonical`), so the same program built from fresh wrappers prints the same and
reuses the same compiled kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal
from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.fills import filled, prepare
from sparsefold.spec.indexing import getitem
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import substitute_program
from sparsefold.storage.describe import describe
from sparsefold.storage.fills import readable, split_fill

__all__ = ["LazyArray", "asarray", "symbol", "lift", "canonical", "rebound"]

# unique per process, so merging two programs' bindings never confuses two arrays; never
# shown: canonical() renames them by position. Their own namespace, ``bound<n>``: a jit
# trace names its arguments ``a<p>`` (an index array bound inside the trace must not take
# an argument's name) and ``symbol`` refuses ``bound<n>``.
_names = itertools.count()
BOUND_PREFIX = "bound"
_BOUND_NAME = re.compile(r"bound[0-9]+")


def _bound_name() -> str:
    return f"{BOUND_PREFIX}{next(_names)}"


class LazyArray:
    """An array-valued program. Supports NumPy-style operators, indexing and methods; every
    operation builds IR and checks it immediately (ill-formed programs fail here)."""

    __slots__ = ("node", "bindings", "_value", "_base")
    __array_priority__ = 1000  # NumPy defers to our operators (and __array_ufunc__ below)
    __hash__ = None  # == builds a comparison, so arrays are not hashable (like NumPy's)

    def __init__(self, node: Node, bindings: Mapping[str, Any] | None = None):
        self.node = node
        self.bindings = dict(bindings or {})
        self._value = None  # (node, value) once materialized (sparsefold.materialize)
        self._base = None   # (array, its node, key) for x[i, j, ...]: read off x's value

    # --- description ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """Sizes: ints where known, size expressions (``I``, ``I*J``) where symbolic."""
        return tuple(sz.const_value(n) if sz.is_const(n) else n for n in self.node.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return self.node.ndim

    @property
    def size(self):
        n = sz.product(self.node.shape)
        return sz.const_value(n) if sz.is_const(n) else n

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d array")
        n = self.shape[0]
        if not isinstance(n, int):
            raise TypeError(f"len() of an array whose first size is symbolic ({n})")
        return n

    def __repr__(self) -> str:
        head = f"<sparsefold.LazyArray shape={self.shape} dtype={self.dtype}>"
        return head + "\n" + repr(canonical(self)[0])

    # --- conversions to Python scalars: computed now (sparsefold.materialize) --------------
    def _scalar(self, what: str):
        if self.ndim:
            raise TypeError(f"the truth value of a lazy array of shape {self.shape} is "
                            f"ambiguous" if what == "bool" else
                            f"only 0-d arrays can be converted to Python {what}; this one "
                            f"has shape {self.shape}")
        from sparsefold.materialize import has_data, scalar
        if self._base is None and not has_data(self):
            raise TypeError(f"the {what} value of a lazy array over symbolic inputs is "
                            f"unknown until they are bound; call .interpret(...) first")
        return scalar(self)

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __int__(self) -> int:
        if self.dtype.kind == "c":
            raise TypeError("int() of a complex array; take .real or abs() first")
        return int(self._scalar("int"))

    def __float__(self) -> float:
        if self.dtype.kind == "c":
            raise TypeError("float() of a complex array; take .real or abs() first")
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, found {self.dtype}")
        return int(self._scalar("int"))

    # --- the array API standard's array attributes and protocols ---------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None):
        """The array API namespace of these arrays: ``sparsefold.array_api``."""
        from sparsefold import array_api
        return array_api._namespace(api_version)

    @property
    def device(self):
        """Where the array lives: the host CPU (the only device)."""
        from sparsefold.array_api._info import CPU
        return CPU

    def to_device(self, device, /, *, stream=None) -> LazyArray:
        from sparsefold.array_api._info import check_device
        check_device(device)
        if stream is not None:
            raise ValueError("to_device: sparsefold has no streams; pass stream=None")
        return self

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The computed array's DLPack capsule (a dense NumPy array: DLPack has no sparse
        layout), by NumPy's own ``__dlpack__``."""
        from sparsefold.materialize import dense_value
        if stream is not None:
            raise BufferError("__dlpack__: sparsefold has no streams; pass stream=None")
        kwargs = {} if max_version is None else {"max_version": max_version}
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return dense_value(self).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def __setitem__(self, key, value) -> None:
        """``x[key] = value``. When ``x`` is a writeable NumPy array wrapped as it is (no
        program), the value is computed and written into that array, as NumPy does — every
        array sharing it (``asarray(x, copy=False)``) sees the write. Otherwise ``x``
        becomes the program that places ``value`` (cast to ``x``'s dtype, broadcast to the
        region) into ``x``'s region ``key`` — basic indexing (``spec.ops_place``) or a
        boolean mask (``where``); no sparse or foreign array is written."""
        target = self._writeable()
        if target is not None:
            from sparsefold.materialize import dense_value
            v = dense_value(value) if isinstance(value, LazyArray) else value
            k = _plain_key(key)
            k = tuple(dense_value(i) if isinstance(i, LazyArray) else i for i in k) \
                if isinstance(k, tuple) else (dense_value(k) if isinstance(k, LazyArray) else k)
            target[k] = v
            from sparsefold.materialize import written
            written()  # values computed from this array are out of date
            return
        from sparsefold.index_keys import place
        node, bindings = place(self, key, value)
        self._become(node, bindings)

    def _writeable(self) -> np.ndarray | None:
        """The NumPy array this array is, when it is one bound as it is and writeable."""
        node = self.node
        if isinstance(node, Input) and node.format.is_dense:
            arr = self.bindings.get(node.name)
            if isinstance(arr, np.ndarray) and arr.flags.writeable:
                return arr
        return None

    def _become(self, node: Node, bindings) -> None:
        self.node = node
        self.bindings = dict(bindings)
        self._value = self._base = None

    # --- evaluation ----------------------------------------------------------------------
    def interpret(self, **inputs: Any) -> np.ndarray:
        """Evaluate with the reference interpreter; ``inputs`` bind symbolic inputs by name."""
        from sparsefold.interp import evaluate
        program, values = canonical(self)
        return evaluate(program, {**values, **inputs})

    def compute(self, out: str | None = None, wait: bool | None = None, *,
                allow_dense_work: bool = False):
        """Run the program as one compiled kernel; ``out`` names the result format ("csr",
        "csc", "coo", "dcsr", "dense"; default: dense when the result is dense-valued — a
        reduction, ``A @ x``, ``A + 1`` — else the first sparse input's format). ``wait``:
        as ``sf.jit``'s — True waits for the kernel; False answers on the fallback while
        the kernel builds (tiered); None: tiered unless ``$SPARSEFOLD_TIERED`` is ``0``.
        ``allow_dense_work``: run a plan that visits a product of extents while its inputs
        and output are sparse, whatever the size (``sf.jit``'s keyword)."""
        from sparsefold.jit import compute
        return compute(self, out, wait, allow_dense_work=allow_dense_work)

    def __array__(self, dtype=None, copy=None):
        """The computed array, dense (``sparsefold.materialize``: the interpreter for small
        programs, a compiled kernel above ``SPARSEFOLD_INTERPRET_MAX``)."""
        from sparsefold.materialize import dense_value
        out = dense_value(self)
        if copy is False and dtype is not None and np.dtype(dtype) != out.dtype:
            raise ValueError("__array__: copy=False, but the dtype asks for a copy")
        return out if dtype is None else out.astype(dtype)

    # NumPy functions and ufuncs on lazy arrays build programs (sparsefold/numpy_protocol.py)
    def __array_function__(self, func, types, args, kwargs):
        from sparsefold.numpy_protocol import array_function
        return array_function(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from sparsefold.numpy_protocol import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    # --- methods mirroring NumPy ---------------------------------------------------------
    @property
    def T(self) -> LazyArray:
        return _f().permute_dims(self, tuple(reversed(range(self.ndim))))

    def reshape(self, *shape, order="C", copy=None) -> LazyArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _f().reshape(self, shape, order=order, copy=copy)

    def __getitem__(self, key) -> LazyArray:
        # a string index over data must name a size the data binds (else it could never be
        # bound); over symbolic inputs (sf.symbol, what verify proves) it may be a new size
        from sparsefold.spec.printer import topological
        key = _plain_key(key)
        if _is_0d_mask(key):  # x[True] is x[None][[0]], x[False] is x[None][[]]
            keep = np.nonzero(np.atleast_1d(_mask_value(key)))[0]
            return self[None][keep]
        bound = all(n.name in self.bindings for n in topological(self.node)
                    if isinstance(n, Input))
        from sparsefold.index_keys import has_arrays, lift_key
        if has_arrays(key):  # advanced indexing: index arrays become inputs
            key, more = lift_key(self, key)
            return LazyArray(getitem(self.node, key, strict=bound),
                             merge_bindings(self.bindings, more))
        out = LazyArray(getitem(self.node, key, strict=bound), self.bindings)
        if bound and not out.ndim and _all_ints(key):
            # one element: when it is computed, it can be read off this array's value (one
            # evaluation for every element a loop reads; sparsefold.materialize)
            out._base = (self, self.node, key)
            from sparsefold.materialize import known_element
            known_element(out)
        return out

    @property
    def mT(self) -> LazyArray:
        return _f().matrix_transpose(self)

    def transpose(self, *axes) -> LazyArray:
        """NumPy's method: no argument reverses the axes; else an order (or one tuple)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _f().transpose(self, axes or None)

    def astype(self, dtype, copy=True) -> LazyArray:
        return _e().astype(self, dtype, copy=copy)

    def flatten(self) -> LazyArray:
        return _f().reshape(self, (-1,))

    def ravel(self) -> LazyArray:
        return _f().reshape(self, (-1,))

    def squeeze(self, axis=None) -> LazyArray:
        return _f().squeeze(self, axis)

    def swapaxes(self, axis1, axis2) -> LazyArray:
        return _f().swapaxes(self, axis1, axis2)

    def diagonal(self, offset=0, axis1=0, axis2=1) -> LazyArray:
        return _f().diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def conj(self) -> LazyArray:
        return _e().ELEMENTWISE["conj"](self)

    conjugate = conj

    @property
    def real(self) -> LazyArray:
        return _e().ELEMENTWISE["real"](self)

    @property
    def imag(self) -> LazyArray:
        return _e().ELEMENTWISE["imag"](self)

    def round(self, decimals=0) -> LazyArray:
        return _e().round(self, decimals)

    def clip(self, min=None, max=None) -> LazyArray:  # noqa: A002 - NumPy's names
        return _e().clip(self, min, max)

    def dot(self, other) -> LazyArray:
        return _f().dot(self, other)

    def nonzero(self):
        return _f().nonzero(self)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return _f().sum(self, axis=axis, dtype=dtype, keepdims=keepdims, out=out)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return _f().prod(self, axis=axis, dtype=dtype, keepdims=keepdims, out=out)

    def max(self, axis=None, out=None, keepdims=False, *, explicit=False):
        return _f().max(self, axis=axis, keepdims=keepdims, out=out, explicit=explicit)

    def min(self, axis=None, out=None, keepdims=False, *, explicit=False):
        return _f().min(self, axis=axis, keepdims=keepdims, out=out, explicit=explicit)

    def any(self, axis=None, out=None, keepdims=False):
        return _f().any(self, axis=axis, keepdims=keepdims, out=out)

    def all(self, axis=None, out=None, keepdims=False):
        return _f().all(self, axis=axis, keepdims=keepdims, out=out)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return _r().mean(self, axis=axis, dtype=dtype, keepdims=keepdims, out=out)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
        return _r().var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, out=out,
                        correction=correction)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
        return _r().std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, out=out,
                        correction=correction)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _r().argmax(self, axis=axis, keepdims=keepdims, out=out)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _r().argmin(self, axis=axis, keepdims=keepdims, out=out)

    def count_nonzero(self, axis=None, *, keepdims=False):
        return _r().count_nonzero(self, axis=axis, keepdims=keepdims)

    # --- operators (NumPy broadcasting and promotion) -------------------------------------
    def __add__(self, o): return _f().add(self, o)
    def __radd__(self, o): return _f().add(o, self)
    def __sub__(self, o): return _f().subtract(self, o)
    def __rsub__(self, o): return _f().subtract(o, self)
    def __mul__(self, o): return _f().multiply(self, o)
    def __rmul__(self, o): return _f().multiply(o, self)
    def __truediv__(self, o): return _f().divide(self, o)
    def __rtruediv__(self, o): return _f().divide(o, self)
    def __floordiv__(self, o): return _f().apply("floor_divide", self, o)
    def __rfloordiv__(self, o): return _f().apply("floor_divide", o, self)
    def __mod__(self, o): return _f().apply("remainder", self, o)
    def __rmod__(self, o): return _f().apply("remainder", o, self)
    def __pow__(self, o): return _f().pow(self, o)
    def __rpow__(self, o): return _f().pow(o, self)
    def __matmul__(self, o): return _f().matmul(self, o)
    def __rmatmul__(self, o): return _f().matmul(o, self)
    def __neg__(self): return _f().negative(self)
    def __pos__(self): return _f().apply("positive", self)
    def __abs__(self): return _f().abs(self)
    def __invert__(self): return _f().apply("bitwise_invert", self)
    def __lt__(self, o): return _f().less(self, o)
    def __le__(self, o): return _f().less_equal(self, o)
    def __gt__(self, o): return _f().greater(self, o)
    def __ge__(self, o): return _f().greater_equal(self, o)
    def __eq__(self, o): return _f().equal(self, o)  # type: ignore[override]
    def __ne__(self, o): return _f().not_equal(self, o)  # type: ignore[override]
    def __and__(self, o): return _f().apply("bitwise_and", self, o)
    def __rand__(self, o): return _f().apply("bitwise_and", o, self)
    def __or__(self, o): return _f().apply("bitwise_or", self, o)
    def __ror__(self, o): return _f().apply("bitwise_or", o, self)
    def __xor__(self, o): return _f().apply("bitwise_xor", self, o)
    def __rxor__(self, o): return _f().apply("bitwise_xor", o, self)
    def __lshift__(self, o): return _f().apply("bitwise_left_shift", self, o)
    def __rlshift__(self, o): return _f().apply("bitwise_left_shift", o, self)
    def __rshift__(self, o): return _f().apply("bitwise_right_shift", self, o)
    def __rrshift__(self, o): return _f().apply("bitwise_right_shift", o, self)

    # --- in-place operators: x becomes the program x op y, in x's dtype --------------------
    def _inplace(self, result: LazyArray) -> LazyArray:
        if result.shape != self.shape:
            raise IllFormedProgram(f"in-place operation: the result has shape {result.shape}, "
                                   f"the array {self.shape}; it cannot change shape")
        if result.dtype != self.dtype:
            if not np.can_cast(result.dtype, self.dtype, casting="same_kind"):
                raise IllFormedProgram(f"in-place operation: cannot store the {result.dtype} "
                                       f"result in an array of {self.dtype} (same_kind "
                                       f"casting)")
            result = result.astype(self.dtype)
        target = self._writeable()
        if target is not None:  # NumPy's in-place update of the array itself
            from sparsefold.materialize import dense_value
            np.copyto(target, dense_value(result))
            from sparsefold.materialize import written
            written()
            return self
        self._become(result.node, result.bindings)
        return self

    def __iadd__(self, o): return self._inplace(self + o)
    def __isub__(self, o): return self._inplace(self - o)
    def __imul__(self, o): return self._inplace(self * o)
    def __itruediv__(self, o): return self._inplace(self / o)
    def __ifloordiv__(self, o): return self._inplace(self // o)
    def __imod__(self, o): return self._inplace(self % o)
    def __ipow__(self, o): return self._inplace(self ** o)
    def __imatmul__(self, o): return self._inplace(self @ o)
    def __iand__(self, o): return self._inplace(self & o)
    def __ior__(self, o): return self._inplace(self | o)
    def __ixor__(self, o): return self._inplace(self ^ o)
    def __ilshift__(self, o): return self._inplace(self << o)
    def __irshift__(self, o): return self._inplace(self >> o)


def _plain_key(key):
    """``key`` with 0-d integer arrays — entries and slice bounds — read as Python ints (the
    standard's ``__index__``: computed now, when they have data)."""
    def bound(b):
        return b if b is None or isinstance(b, (int, str)) or not hasattr(b, "__index__") \
            else b.__index__()
    def one(k):
        if isinstance(k, slice):
            return slice(bound(k.start), bound(k.stop), bound(k.step))
        if isinstance(k, (LazyArray, np.ndarray)) and k.ndim == 0 and k.dtype.kind in "iu":
            if isinstance(k, np.ndarray):
                return int(k)
            from sparsefold.materialize import has_data
            if k._base is not None or has_data(k):
                return k.__index__()  # a 0-d integer index is an integer (computed now)
        return k
    return tuple(one(k) for k in key) if isinstance(key, tuple) else one(key)


def _all_ints(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))
               for k in keys)


def _is_0d_mask(key) -> bool:
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    return isinstance(k, (LazyArray, np.ndarray, np.bool_)) and k.ndim == 0 and \
        k.dtype == np.bool_


def _mask_value(key) -> bool:
    k = key[0] if isinstance(key, tuple) else key
    return bool(k)


def _f():
    from sparsefold import functions
    return functions


def _e():
    from sparsefold import elementwise
    return elementwise


def _r():
    from sparsefold import reductions
    return reductions


def asarray(a: Any) -> LazyArray:
    """Wrap a NumPy, scipy.sparse (any format) or pydata/sparse array as a program input.
    No data is copied; the array is read when the program runs. A pydata array with a
    non-zero ``fill_value`` becomes ``where(present, stored, fill)`` over its one storage
    (``spec/fills.py``); a pydata ``DOK`` is converted to ``COO``."""
    if isinstance(a, LazyArray):
        return a
    if isinstance(a, (bool, int, float, complex, np.generic, list, tuple)):
        a = np.asarray(a)
    a = readable(a)  # a pydata DOK: converted to COO once, here
    info = describe(a)
    name = _bound_name()
    node = Input(name, info.shape, info.dtype, info.format)
    if info.fill is not None:  # where(present, stored, fill): spec/fills.py
        stored, present = split_fill(a)
        mask = _bound_name()
        node = filled(node, Input(mask, info.shape, np.dtype(bool), info.format), info.fill)
        return LazyArray(node, {name: stored, mask: present})
    return LazyArray(node, {name: a})


def symbol(name: str, shape, dtype: Any = "float64", format: str = "dense") -> LazyArray:
    """An input with (possibly symbolic) sizes: ``symbol("A", shape=("I", "J"))``. Bind data
    later with ``.interpret(A=array)``."""
    if isinstance(shape, (str, int)):
        shape = (shape,)
    if isinstance(name, str) and _BOUND_NAME.fullmatch(name):
        raise IllFormedProgram(f"input name {name!r} is reserved (the arrays sf.asarray binds "
                               f"are named bound<n>)")
    # Input checks the dtype itself, so a bad one is IllFormedProgram, not numpy's TypeError
    return LazyArray(Input(name, tuple(shape), dtype, format))


def lift(x: Any) -> tuple[Node, dict[str, Any]]:
    """The node for an operand and the bindings it brings: arrays become inputs, Python
    scalars weak literals, NumPy scalars strong literals."""
    if isinstance(x, LazyArray):
        return x.node, x.bindings
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return Literal(x), {}
    try:
        arr = asarray(x)
    except InvalidData as exc:
        raise IllFormedProgram(f"cannot use {type(x).__name__} as an array: {exc}") from None
    return arr.node, arr.bindings


def canonical(x: LazyArray) -> tuple[Node, dict[str, Any]]:
    """``x``'s program with the arrays ``sf.asarray`` bound renamed ``a0, a1, ...`` in
    first-use order, and the array bound to each new name. Inputs made with ``sf.symbol``
    keep their names (and the new names skip them). Equal programs from different wrappers
    come out equal, so they print alike and share a compiled kernel."""
    root = prepare(x.node)  # filled inputs: their where above shape operators
    leaves = [n for n in topological(root) if isinstance(n, Input)]
    taken = {n.name for n in leaves if n.name not in x.bindings}
    fresh = (f"a{k}" for k in itertools.count() if f"a{k}" not in taken)
    renamed: dict[str, Input] = {}
    values: dict[str, Any] = {}
    for n in leaves:
        if n.name in x.bindings and n.name not in renamed:
            new = next(fresh)
            renamed[n.name] = dataclasses.replace(n, name=new)
            values[new] = x.bindings[n.name]
    if all(new.name == old for old, new in renamed.items()):
        return root, values
    return substitute_program(root, inputs=renamed), values


def rebound(x: LazyArray, convert) -> LazyArray:
    """``x``'s program over fresh inputs bound to ``convert(array)`` of each array it reads
    (``asarray(x, copy=True)``: the copies must not share names with the originals, or a
    program reading both would bind one name twice)."""
    from sparsefold.index_keys import is_key_array
    renamed, values = {}, {}
    for n in topological(x.node):
        if isinstance(n, Input) and n.name in x.bindings and n.name not in renamed:
            new = _bound_name()
            renamed[n.name] = dataclasses.replace(n, name=new)
            held = x.bindings[n.name]
            # an index key's array is already a private copy, and must stay one jit knows
            # (a copy of it inside a trace was "captured from the enclosing scope")
            values[new] = held if is_key_array(held) else convert(held)
    return LazyArray(substitute_program(x.node, inputs=renamed), values)


def merge_bindings(*bindings: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b in bindings:
        for k, v in b.items():
            if k in out and out[k] is not v:
                raise IllFormedProgram(f"input name {k!r} is bound to two different arrays")
            out[k] = v
    return out
