"""``sf.jit`` on Dask arrays: trace once, lay the program out in blocks, emit a Dask graph.

1. **Trace** the function once on the arrays' concrete shapes (``JitFunction._trace``):
   one spec program over inputs ``a0, a1, ...``.
2. **Lay out** every node in blocks (``chunking.Layouts``) and pick the reductions to
   *materialize* (reduced axes in several blocks, or a result several blocks would each
   recompute).
3. **Pull back** every block of every region — the root, and the operand of each
   materialized reduction — to a block program over leaf boxes (``pullback.Puller``).
4. **Rechunk** the user's arrays where a leaf box does not fall on chunk boundaries
   (dask's own ``rechunk``, to the blocks' boundaries).
5. **Emit** one task per block (``worker.run_block``: one fused kernel over that block's
   chunks), and for each materialized reduction one task per partial block plus a tree of
   combine tasks (``split_every`` partials per combine). Each distinct block program is
   traced and planned here once, so an unsupported program fails now, not on a worker.

Nothing is computed: the result is a lazy ``dask.array.Array``.
"""

from __future__ import annotations

import math
import warnings
from itertools import product

import numpy as np

from sparsefold.dask.chunking import Layouts, RechunkWarning, from_offsets, ints, offsets
from sparsefold.dask.nodes import chunk_input_name, flatten, rebuild, token_of
from sparsefold.dask.pullback import Box, Puller, extents
from sparsefold.dask.worker import (
    COMBINERS,
    BlockTask,
    CombineTask,
    block_jit,
    run_block,
    run_combine,
)
from sparsefold.interop import ArrayInfo, describe, is_pydata_sparse
from sparsefold.jit import JitFunction, _default_out, _is_scalar
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.errors import IllFormedProgram, InternalError, InvalidData
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Slice
from sparsefold.spec.printer import show_program, topological

__all__ = ["call", "plan"]

_MAX_ROUNDS = 16


def call(fn, *args, split_every: int = 4):
    """``fn`` (an ``sf.jit`` function or a plain function of arrays) on Dask arrays (and
    NumPy / scipy / pydata arrays or scalars): a lazy ``dask.array.Array``."""
    return plan(fn, *args, split_every=split_every).array


def plan(fn, *args, split_every: int = 4) -> _Plan:
    """The graph :func:`call` returns, with what was decided on the way (for tests)."""
    import dask.array as da
    if getattr(da, "array_expr_enabled", lambda: False)():
        raise NotImplementedError(
            "sparsefold.dask builds dask.array graphs directly, which dask's query-planning "
            "mode (array.query-planning = True) does not accept yet; turn it off before "
            "importing dask.array: dask.config.set({'array.query-planning': False})")
    if not isinstance(split_every, int) or split_every < 2:
        raise IllFormedProgram(f"split_every must be an integer >= 2, found {split_every!r}")
    jf = fn if isinstance(fn, JitFunction) else JitFunction(fn)
    return _Plan(jf, args, split_every)


def _as_dask(a):
    import dask.array as da
    if isinstance(a, da.Array):
        return a
    describe(a)  # InvalidData for anything that is not an array we read
    return da.from_array(a, chunks=tuple(a.shape), asarray=False)


def _info(arr) -> ArrayInfo:
    shape = arr.shape
    if any(isinstance(n, float) and math.isnan(n) for n in shape):
        raise InvalidData(f"a dask array with unknown chunk sizes {arr.chunks}; call "
                          f"compute_chunk_sizes() on it first")
    meta = describe(arr._meta)
    fmt = meta.format if meta.format in ("dense", "coo") or len(shape) in (1, 2) else "coo"
    return ArrayInfo(tuple(int(n) for n in shape), np.dtype(arr.dtype), fmt, meta.library)


def _meta(out: str, library: str, ndim: int, dtype):
    """An empty array of the chunk type a kernel returns for ``out`` and ``library``
    ("pydata", else scipy; NumPy when ``out`` is dense)."""
    empty = (0,) * ndim
    if out == "dense" or ndim == 0:
        return np.empty(empty, dtype)
    if library == "pydata":
        import sparse
        return sparse.COO.from_numpy(np.empty(empty, dtype))
    import scipy.sparse as sp
    if ndim > 2:
        return sp.coo_array(empty, dtype=dtype)
    cls = {"csc": sp.csc_array, "coo": sp.coo_array, "dcsc": sp.csc_array}.get(out, sp.csr_array)
    return cls(empty, dtype=dtype)


def _fake(meta, shape, dtype):
    """A stand-in chunk of ``meta``'s type (nothing allocated) for tracing on the client."""
    if isinstance(meta, np.ndarray):
        return np.broadcast_to(np.zeros((), dtype), shape)
    if is_pydata_sparse(meta):
        import sparse
        return sparse.zeros(shape, dtype=dtype, format="coo")
    import scipy.sparse as sp
    if len(shape) > 2:
        return sp.coo_array(shape, dtype=dtype)
    cls = type(meta) if len(shape) == 2 or type(meta) in (sp.csr_array, sp.coo_array) \
        else sp.csr_array
    return cls(shape, dtype=dtype)


class _Leaf:
    """A dask array block programs read: a user's input or a materialized reduction."""

    def __init__(self, array, user: bool):
        self.array, self.user = array, user


class _Plan:
    def __init__(self, jf: JitFunction, args, split_every: int):
        import dask.array as da
        self.split_every = split_every
        inputs, infos, trace_args = {}, [], []
        for p, a in enumerate(args):
            if _is_scalar(a):
                infos.append(None)
                trace_args.append(a)
                continue
            arr = _as_dask(a)
            inputs[f"a{p}"] = arr
            infos.append(_info(arr))
            trace_args.append(arr)
        if not inputs:
            raise IllFormedProgram("sparsefold.dask: expected at least one array argument")
        self.program, _ = jf._trace(trace_args, infos, "concrete")
        self.library = "pydata" if any(i is not None and i.library == "pydata"
                                       for i in infos) else "scipy"
        self.root_out, self.kind = self._root_format(jf.out or _default_out(infos, self.program))
        self.leaves: dict[int, _Leaf] = {}
        by_name = {n.name: n for n in topological(self.program) if isinstance(n, Input)}
        for name, node in by_name.items():
            self.leaves[id(node)] = _Leaf(inputs[name], True)
        self._lay_out({name: inputs[name].chunks for name in by_name})
        self._rechunk_inputs()
        self.tokens: dict[str, BlockTask] = {}
        self.checked: dict[str, str] = {}     # token -> the out format its kernel has
        self.tasks = 0                        # kernel tasks (block programs and combines)
        self.aliases = 0                      # result blocks that are an input's chunk
        self._name = "sparsefold-" + _tokenize(show_program(self.program),
                                               [a.name for a in inputs.values()],
                                               [a.chunks for a in inputs.values()],
                                               self.root_out, self.kind, split_every)
        for head in self.materialized:
            self.leaves[id(head)] = _Leaf(self._materialize(head), False)
        if id(self.program) in self.chains:
            self.array = self.leaves[id(self.program)].array
        else:
            self.array = self._region_array(self.program, "result", self.root_out, self.kind)
        if not isinstance(self.array, da.Array):
            raise InternalError("sparsefold.dask did not build a dask array")

    def _root_format(self, out: str) -> tuple[str, str]:
        nd = self.program.ndim
        if out == "dense" or nd == 0 or (self.library == "scipy" and nd == 1):
            return "dense", "numpy"  # dask cannot concatenate 1-d scipy arrays
        if self.library == "scipy" and nd > 2:
            raise IllFormedProgram(
                f"sparsefold.dask: a {nd}-d sparse result of scipy chunks cannot be assembled "
                f"by dask (it concatenates scipy arrays along axes 0 and 1 only); use "
                f"pydata/sparse chunks or out='dense'")
        return out, self.library

    # --- layouts and block programs --------------------------------------------------------
    def _lay_out(self, leaf_chunks) -> None:
        materialize: set[int] = set()
        for _ in range(_MAX_ROUNDS):
            self.layouts = Layouts(self.program, leaf_chunks, materialize)
            self.chains = _heads(self.program, [n for n in topological(self.program)
                                                if self.layouts.is_materialized(n)])
            self.materialized = [n for n in topological(self.program) if id(n) in self.chains]
            stops = set(self.chains) | {
                id(n) for n in topological(self.program) if isinstance(n, Input)}
            self.puller = Puller(self.layouts, lambda n: id(n) in stops)
            self.blocks: dict[int, dict[tuple, Node]] = {}
            for head in self.materialized:
                self.blocks[id(head)] = self._pull_region(self.chains[id(head)][0].arg)
            if id(self.program) not in self.chains:
                self.blocks[id(self.program)] = self._pull_region(self.program)
            more = self.puller.duplicated() - materialize
            if not more:
                break
            materialize |= more
        else:  # pragma: no cover - each round materializes at least one more reduction
            raise InternalError("sparsefold.dask: block layout did not settle")
        for text in dict.fromkeys(self.layouts.warnings):
            warnings.warn(RechunkWarning(text), stacklevel=6)  # the sf.jit call

    def _pull_region(self, node: Node) -> dict[tuple, Node]:
        chunks = self.layouts[node].chunks
        out = {}
        for idx in product(*(range(len(c)) for c in chunks)):
            out[idx] = self.puller.block(node, _box(chunks, idx))
        return out

    def _rechunk_inputs(self) -> None:
        """Rechunk a user's array when a block reads part of one of its chunks: to exactly
        the blocks' boundaries, so that each block reads whole chunks (one, unless blocks
        overlap). Chunks finer than the blocks are left alone: a block concatenates them
        inside its kernel, which costs less than dask merging them first."""
        wanted: dict[int, list[set]] = {}
        for leaf, box in self.puller.refs.values():
            if id(leaf) in self.leaves and self.leaves[id(leaf)].user:
                bounds = wanted.setdefault(id(leaf), [set() for _ in box])
                for d, (lo, hi) in enumerate(box):
                    if hi > lo:
                        bounds[d] |= {lo, hi}
        for lid, bounds in wanted.items():
            arr = self.leaves[lid].array
            if all(b <= set(offsets(c)) for c, b in zip(arr.chunks, bounds)):
                continue
            new = tuple(from_offsets(b, n) for b, n in zip(bounds, arr.shape))
            self.leaves[lid] = _Leaf(arr.rechunk(new), True)

    # --- tasks ---------------------------------------------------------------------------
    def _resolve(self, template: Node) -> tuple[Node, list, list]:
        """The block program over chunk inputs ``a0, a1, ...``, their keys, and stand-ins."""
        keys, fakes, position = [], [], {}

        def chunk(leaf: _Leaf, idx: tuple) -> Node:
            arr = leaf.array
            key = (arr.name,) + idx
            shape = tuple(arr.chunks[d][j] for d, j in enumerate(idx))
            if key not in position:
                position[key] = len(keys)
                keys.append(key)
                fakes.append(_fake(arr._meta, shape, arr.dtype))
            fmt = describe(fakes[position[key]]).format
            return Input(chunk_input_name(position[key]), shape, arr.dtype, fmt)

        def replace(node: Node):
            if isinstance(node, Input) and node.name in self.puller.refs:
                leaf, box = self.puller.refs[node.name]
                return _cover(self.leaves[id(leaf)], box, chunk)
            return None
        return rebuild(template, replace), keys, fakes

    def _task(self, program: Node, keys: list, fakes: list, out: str | None,
              kind: str | None) -> tuple:
        """The task computing a resolved block program, and its result format."""
        flat = flatten(program)
        token = token_of(flat, out, kind)
        task = self.tokens.get(token)
        if task is None:
            task = self.tokens[token] = BlockTask(token, flat, out, kind)
            self.checked[token] = self._check(task, fakes)
        self.tasks += 1
        return (run_block, task) + tuple(keys), self.checked[token]

    def _check(self, task: BlockTask, fakes) -> str:
        """Trace and plan the block program here (not on a worker) so that an unsupported
        one fails at graph construction; returns its result format."""
        jf = block_jit(task)
        jf.kernel_for(*fakes)  # the trace and kernel a worker's call runs
        return jf.trace(*fakes).out

    def _region_array(self, node: Node, what: str, out, kind):
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph
        name = f"{self._name}-{what}"
        layer, deps, meta = {}, {}, None
        for idx, template in self.blocks[id(node)].items():
            program, keys, fakes = self._resolve(template)
            if isinstance(program, Input) and _passes_as(fakes[0], out, kind):
                layer[(name,) + idx] = keys[0]  # the chunk itself: no task, no copy
                deps[keys[0][0]] = True
                self.aliases += 1
                continue
            task, made = self._task(program, keys, fakes, out, kind)
            layer[(name,) + idx] = task
            meta = meta if meta is not None else self._result_meta(made, fakes, node)
            for key in task[2:]:
                deps[key[0]] = True
        arrays = [leaf.array for leaf in self.leaves.values() if leaf.array.name in deps]
        graph = HighLevelGraph.from_collections(name, layer, dependencies=arrays)
        meta = meta if kind is None else _meta(out, kind, node.ndim, node.dtype)
        return da.Array(graph, name, self.layouts[node].chunks, meta=meta)

    def _result_meta(self, out: str, fakes, node: Node):
        library = "pydata" if any(is_pydata_sparse(f) for f in fakes) else "scipy"
        return _meta(out, library, node.ndim, node.dtype)

    def _materialize(self, head: Node):
        """Partial reductions per operand block (with the head's axis operations applied:
        they commute with an elementwise combine), then a tree of combines over the reduced
        axes' blocks; the root's format and chunk type when the head is the result."""
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph
        chain = self.chains[id(head)]
        node = chain[0]
        root = head is self.program
        out, kind = (self.root_out, self.kind) if root else (None, None)
        # partials of a 0-d or 1-d result are dense (a vector per block, like the result);
        # others keep the operand's sparse format
        inner = "dense" if head.ndim <= 1 else None
        kept_axes = [d for d in range(node.arg.ndim) if d not in node.axes]
        if node.monoid.name not in COMBINERS:
            raise IllFormedProgram(f"not supported yet by sparsefold.dask: a {node.monoid.name} "
                                   f"reduction across blocks (partials combine for "
                                   f"{', '.join(COMBINERS)})")
        name = f"{self._name}-reduce{self.materialized.index(head)}"
        groups: dict[tuple, list] = {}
        layer, deps, meta = {}, {}, None
        for idx in self.blocks[id(head)]:
            kept = _carry_index(chain, tuple(idx[d] for d in kept_axes))
            groups.setdefault(kept, []).append(idx)
        for kept, members in groups.items():
            single = len(members) == 1
            keys = []
            for idx in members:
                partial = Reduce(self.blocks[id(head)][idx], node.axes, node.monoid,
                                 node.dtype_request)
                partial = rebuild(head, lambda n, p=partial: p if n is node else None)
                program, keys_in, fakes = self._resolve(partial)
                task, made = self._task(program, keys_in, fakes, out if single else inner,
                                        kind if single else None)
                key = (name,) + kept if single else (f"{name}-partial",) + idx
                layer[key] = task
                keys.append(key)
                meta = meta if meta is not None else self._result_meta(made, fakes, head)
                for k in task[2:]:
                    deps[k[0]] = True
            level = 0
            while len(keys) > 1:
                last = len(keys) <= self.split_every
                step = CombineTask(node.monoid.name, inner, out if last else None,
                                   kind if last else None)
                grouped = [keys[i:i + self.split_every]
                           for i in range(0, len(keys), self.split_every)]
                keys = []
                for g, members_keys in enumerate(grouped):
                    key = (name,) + kept if last else (f"{name}-combine{level}",) + kept + (g,)
                    layer[key] = (run_combine, step) + tuple(members_keys)
                    keys.append(key)
                    self.tasks += 1
                level += 1
        arrays = [leaf.array for leaf in self.leaves.values() if leaf.array.name in deps]
        graph = HighLevelGraph.from_collections(name, layer, dependencies=arrays)
        if kind is not None:
            meta = _meta(out, kind, head.ndim, head.dtype)
        return da.Array(graph, name, self.layouts[head].chunks, meta=meta)


def _heads(program: Node, reductions: list[Node]) -> dict[int, list[Node]]:
    """Each materialized reduction with the axis operations (squeeze, expand_dims,
    permute_dims) that are its only consumers, up to the last: ``{id(head): [reduce, ...,
    head]}``. ``A @ x`` is ``squeeze(sum(...))``: the squeeze then runs in the partial
    kernels instead of in a task of its own."""
    uses: dict[int, list[Node]] = {}
    for n in topological(program):
        for o in n.operands():
            uses.setdefault(id(o), []).append(n)
    chains = {}
    for r in reductions:
        chain = [r]
        while len(uses.get(id(chain[-1]), ())) == 1 and isinstance(
                uses[id(chain[-1])][0], (Squeeze, ExpandDims, PermuteDims)):
            chain.append(uses[id(chain[-1])][0])
        chains[id(chain[-1])] = chain
    return chains


def _carry_index(chain: list[Node], idx: tuple) -> tuple:
    """A reduction's block index through its head's axis operations."""
    for n in chain[1:]:
        if isinstance(n, Squeeze):
            drop = {a % n.arg.ndim for a in n.axes}
            idx = tuple(j for d, j in enumerate(idx) if d not in drop)
        elif isinstance(n, ExpandDims):
            a = n.axis % n.ndim
            idx = idx[:a] + (0,) + idx[a:]
        else:
            idx = tuple(idx[p] for p in n.perm)
    return idx


def _passes_as(chunk, out: str, kind: str) -> bool:
    """A chunk like ``chunk`` is already a result block of format ``out``, type ``kind``."""
    if kind == "numpy":
        return isinstance(chunk, np.ndarray)
    if kind == "scipy":
        return chunk.ndim == 2 and not isinstance(chunk, np.ndarray) and \
            not is_pydata_sparse(chunk) and describe(chunk).format == out
    import sparse
    return isinstance(chunk, sparse.COO) and out == "coo"


def _box(chunks, idx) -> Box:
    box = []
    for c, j in zip(chunks, idx):
        lo = sum(c[:j])
        box.append((lo, lo + c[j]))
    return tuple(box)


def _cover(leaf: _Leaf, box: Box, chunk) -> Node:
    """The chunks of ``leaf`` covering ``box``, concatenated, then sliced to it if they
    cover more (only a materialized reduction's chunks can: inputs were rechunked)."""
    arr = leaf.array
    picks, local = [], []
    for d, (lo, hi) in enumerate(box):
        b = offsets(arr.chunks[d])
        js = [j for j in range(len(arr.chunks[d])) if arr.chunks[d][j] and b[j] < hi
              and b[j + 1] > lo]
        if not js:  # an empty box: the chunk holding lo (or the axis's only chunk)
            js = [max([j for j in range(len(b) - 1) if b[j] <= lo] or [0])]
        picks.append(js)
        left, right = b[js[0]], b[js[-1] + 1]
        local.append((None, None, None) if (left, right) == (lo, hi)
                     else (lo - left, hi - left, 1))

    def nest(d: int, idx: tuple) -> Node:
        if d == len(box):
            return chunk(leaf, idx)
        parts = [nest(d + 1, idx + (j,)) for j in picks[d]]
        return parts[0] if len(parts) == 1 else Concat(tuple(parts), d)
    out = nest(0, ())
    if any(t != (None, None, None) for t in local):
        out = Slice(out, tuple(local))
    if extents(box) != ints(out.shape):
        raise InternalError(f"chunks of {arr.name} cover {out.shape}, wanted box {box}")
    return out


def _tokenize(*parts) -> str:
    from dask.base import tokenize
    return tokenize(*parts)
