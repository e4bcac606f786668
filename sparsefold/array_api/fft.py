"""The standard's ``fft`` extension.

A discrete Fourier transform of a sparse array is dense, and the language has no transform
node, so these compute at once with NumPy's ``numpy.fft`` on the materialized input and
return dense arrays (docs/array_api.md lists them among the deviations).
``fftfreq``/``rfftfreq`` are programs over the coordinate, like ``arange``;
``fftshift``/``ifftshift`` are ``roll`` (a shape operator: a sparse input stays sparse).
"""

from __future__ import annotations

import numpy as np

from sparsefold import functions as f
from sparsefold.array_api._info import check_device
from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec.errors import IllFormedProgram

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
           "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _call(name: str, x, **kwargs) -> LazyArray:
    from sparsefold.materialize import dense_value
    a = dense_value(asarray(x))
    out = getattr(np.fft, name)(a, **kwargs)
    # NumPy computes float32 input in float64; the standard keeps the precision
    want = {np.dtype(np.float32): np.complex64, np.dtype(np.complex64): np.complex64}
    if name in ("irfft", "irfftn", "hfft"):
        want = {np.dtype(np.complex64): np.float32, np.dtype(np.float32): np.float32}
    target = want.get(a.dtype)
    if target is not None:
        out = out.astype(target)
    return asarray(np.ascontiguousarray(out))


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("fft", x, n=n, axis=axis, norm=norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("ifft", x, n=n, axis=axis, norm=norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    return _call("fftn", x, s=s, axes=axes, norm=norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    return _call("ifftn", x, s=s, axes=axes, norm=norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("rfft", x, n=n, axis=axis, norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("irfft", x, n=n, axis=axis, norm=norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _call("rfftn", x, s=s, axes=axes, norm=norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _call("irfftn", x, s=s, axes=axes, norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("hfft", x, n=n, axis=axis, norm=norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _call("ihfft", x, n=n, axis=axis, norm=norm)


def _freq(n: int, d: float, dtype, device, real: bool) -> LazyArray:
    from sparsefold.array_api._creation import arange, full
    check_device(device)
    if n <= 0:
        raise IllFormedProgram(f"fftfreq: n must be positive, found {n}")
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if real:
        k = arange(0, n // 2 + 1, dtype=np.int64)
    else:  # 0, 1, ..., (n-1)//2, -(n//2), ..., -1: the coordinate minus n past the middle
        i = arange(0, n, dtype=np.int64)
        k = f.where(i <= (n - 1) // 2, i, i - n)
    del full
    return (k.astype(dt) / (n * float(d))).astype(dt)


def fftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> LazyArray:
    return _freq(n, d, dtype, device, real=False)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> LazyArray:
    return _freq(n, d, dtype, device, real=True)


def _shift(x, axes, sign: int) -> LazyArray:
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return f.roll(x, shifts, axis=tuple(axes))


def fftshift(x, /, *, axes=None) -> LazyArray:
    return _shift(x, axes, 1)


def ifftshift(x, /, *, axes=None) -> LazyArray:
    return _shift(x, axes, -1)
