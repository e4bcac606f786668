"""The C names elementwise functions' Cython readings may call, and what a kernel module
needs to declare for each (DESIGN §3.4: one place states them).

A function's C reading (``ElementwiseFunction.c_expr``) is an expression template; besides
arithmetic it may call the names below. The emitter declares exactly the names a module's
text uses (``declarations``), so a kernel that calls none of them is unchanged.

* **libc.math** and **libc.complex** functions, cimported from Cython's own ``.pxd`` files;
* **complex construction** (``CMPLX``/``CMPLXF``, C11) and the storage type of
  half-precision values (``sf_half`` is C's ``_Float16``, in which float16 arrays are read
  and written: kernels compute float16 in float, as NumPy does, and round each elementwise
  result to half as NumPy's loops do);
* **helpers**: small ``cdef inline`` functions for what is not one C expression — NumPy's
  floor division and remainder (Python's sign rules, IEEE results for a zero divisor, no
  trap on ``MIN // -1``), ``logaddexp``, integer ``power``, and complex ``*`` and ``/`` as
  NumPy computes them (C99's Annex G rules for infinities differ). Fused over the C types a
  kernel computes in, written once each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CName", "C_LIBRARY", "declarations", "MATH", "COMPLEX"]

MATH = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor",
        "ceil", "trunc", "rint", "fmod", "atan2", "hypot", "copysign", "nextafter",
        "nextafterf", "signbit", "isnan", "isinf", "isfinite", "exp2")
COMPLEX = ("cexp", "clog", "csqrt", "csin", "ccos", "ctan", "casin", "cacos", "catan",
           "csinh", "ccosh", "ctanh", "casinh", "cacosh", "catanh", "cpow", "creal", "cimag",
           "conj", "cabs")


@dataclass(frozen=True, slots=True)
class CName:
    """A name a Cython reading may use: where it comes from (``"libc.math"``,
    ``"libc.complex"``, ``"extern"``: a declaration in ``cdef extern from "<complex.h>"``,
    ``"type"``: a module-level ctypedef, ``"helper"``: module-level Cython text), the text
    that declares it, and the names that text itself uses."""

    name: str
    source: str
    text: str = ""
    uses: tuple[str, ...] = ()


_FUSED = {
    "sf_float": "ctypedef fused sf_float:\n    float\n    double",
    "sf_sint": "ctypedef fused sf_sint:\n    int8_t\n    int16_t\n    int32_t\n    int64_t",
    "sf_uint": "ctypedef fused sf_uint:\n    uint8_t\n    uint16_t\n    uint32_t\n    uint64_t",
    "sf_cfloat": "ctypedef fused sf_cfloat:\n    float complex\n    double complex",
    "sf_int": "ctypedef fused sf_int:\n    int8_t\n    int16_t\n    int32_t\n    int64_t\n"
              "    uint8_t\n    uint16_t\n    uint32_t\n    uint64_t",
}

_HELPERS = {
    # NumPy's npy_divmod (floor division of floats): IEEE results for a zero divisor
    "sf_floor_divide_f": ("""\
cdef inline sf_float sf_floor_divide_f(sf_float a, sf_float b) noexcept nogil:
    cdef sf_float mod, div, floordiv
    if b == 0:
        return a / b
    if isinf(a) or isinf(b):  # the standard's IEEE result: inf // 2 is inf, -1 // inf is -0
        return floor(a / b)
    mod = fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1
    if div != 0:
        floordiv = floor(div)
        if div - floordiv > 0.5:
            floordiv += 1
    else:
        floordiv = copysign(0, a / b)
    return floordiv""", ("sf_float", "fmod", "floor", "copysign", "isinf")),
    # NumPy's npy_remainder of floats: the sign of the divisor
    "sf_remainder_f": ("""\
cdef inline sf_float sf_remainder_f(sf_float a, sf_float b) noexcept nogil:
    cdef sf_float mod = fmod(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = copysign(0, b)
    return mod""", ("sf_float", "fmod", "copysign")),
    # signed floor division as NumPy: x // 0 == 0, MIN // -1 == MIN (no trap)
    "sf_floor_divide_i": ("""\
cdef inline sf_sint sf_floor_divide_i(sf_sint a, sf_sint b) noexcept nogil:
    cdef sf_sint q
    if b == 0:
        return 0
    if b == -1:
        return <sf_sint>(<uint64_t>0 - <uint64_t>a)
    q = a // b
    if ((a > 0) != (b > 0)) and q * b != a:
        q -= 1
    return q""", ("sf_sint",)),
    "sf_remainder_i": ("""\
cdef inline sf_sint sf_remainder_i(sf_sint a, sf_sint b) noexcept nogil:
    cdef sf_sint r
    if b == 0 or b == -1:
        return 0
    r = a % b
    if (a > 0) == (b > 0) or r == 0:
        return r
    return r + b""", ("sf_sint",)),
    "sf_floor_divide_u": ("""\
cdef inline sf_uint sf_floor_divide_u(sf_uint a, sf_uint b) noexcept nogil:
    return 0 if b == 0 else a // b""", ("sf_uint",)),
    "sf_remainder_u": ("""\
cdef inline sf_uint sf_remainder_u(sf_uint a, sf_uint b) noexcept nogil:
    return 0 if b == 0 else a % b""", ("sf_uint",)),
    # integer power by squaring, wrapping as NumPy's does (computed modulo 2**64, which
    # agrees with every narrower width); a negative exponent is checked before the call
    "sf_power_i": ("""\
cdef inline int64_t sf_power_i(int64_t a, int64_t b) noexcept nogil:
    cdef uint64_t base = <uint64_t>a
    cdef uint64_t out = 1
    if b <= 0:
        return 1
    if b & 1:
        out = base
    b >>= 1
    while b > 0:
        base = base * base
        if b & 1:
            out = out * base
        b >>= 1
    return <int64_t>out""", ()),
    "sf_power_u": ("""\
cdef inline uint64_t sf_power_u(uint64_t a, uint64_t b) noexcept nogil:
    cdef uint64_t out = 1
    if b & 1:
        out = a
    b >>= 1
    while b > 0:
        a = a * a
        if b & 1:
            out = out * a
        b >>= 1
    return out""", ()),
    # NumPy's npy_logaddexp: log(exp(a) + exp(b)) without overflow; equal infinities stay
    "sf_logaddexp": ("""\
cdef inline sf_float sf_logaddexp(sf_float a, sf_float b) noexcept nogil:
    cdef sf_float d
    if a == b:
        return a + 0.6931471805599453
    d = a - b
    if d > 0:
        return a + log1p(exp(-d))
    if d <= 0:
        return b + log1p(exp(d))
    return d""", ("sf_float", "log1p", "exp")),
    # NumPy's _NPY_CLIP for floats: min(max(x, lo), hi), a nan first argument propagating
    "sf_clip_f": ("""\
cdef inline sf_float sf_clip_f(sf_float x, sf_float lo, sf_float hi) noexcept nogil:
    cdef sf_float m = x if (x != x or x > lo) else lo
    return m if (m != m or m < hi) else hi""", ("sf_float",)),
    # NumPy's npy_lshift / npy_rshift: a shift by the width or more (or a negative one,
    # compared unsigned) gives 0, or -1 for a negative x shifted right
    "sf_left_shift": ("""\
cdef inline sf_int sf_left_shift(sf_int a, sf_int b) noexcept nogil:
    if <uint64_t>b < 8 * sizeof(sf_int):
        return <sf_int>(a << b)
    return 0""", ("sf_int",)),
    "sf_right_shift": ("""\
cdef inline sf_int sf_right_shift(sf_int a, sf_int b) noexcept nogil:
    if <uint64_t>b < 8 * sizeof(sf_int):
        return <sf_int>(a >> b)
    if a < 0:
        return <sf_int>-1
    return 0""", ("sf_int",)),
    "sf_nextafter": ("""\
cdef inline sf_float sf_nextafter(sf_float a, sf_float b) noexcept nogil:
    if sf_float is float:
        return nextafterf(a, b)
    return nextafter(a, b)""", ("sf_float", "nextafter", "nextafterf")),
    # complex multiplication and division as NumPy computes them (no Annex G recovery of
    # infinities; Smith's division), each in the operands' own precision
    "sf_cmul": ("""\
cdef inline sf_cfloat sf_cmul(sf_cfloat a, sf_cfloat b) noexcept nogil:
    if sf_cfloat is floatcomplex:
        return CMPLXF(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)
    return CMPLX(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)""",
                ("sf_cfloat", "CMPLX", "CMPLXF")),
    "sf_cdiv": ("""\
cdef inline sf_cfloat sf_cdiv(sf_cfloat a, sf_cfloat b) noexcept nogil:
    cdef double ar = a.real, ai = a.imag, br = b.real, bi = b.imag, rat, scl, re, im
    if sf_cfloat is floatcomplex:
        return _sf_cdiv_f(a.real, a.imag, b.real, b.imag)
    if fabs(br) >= fabs(bi):
        if br == 0 and bi == 0:
            re = ar / fabs(br)
            im = ai / fabs(br)
        else:
            rat = bi / br
            scl = 1.0 / (br + bi * rat)
            re = (ar + ai * rat) * scl
            im = (ai - ar * rat) * scl
    else:
        rat = br / bi
        scl = 1.0 / (bi + br * rat)
        re = (ar * rat + ai) * scl
        im = (ai * rat - ar) * scl
    return CMPLX(re, im)""", ("sf_cfloat", "_sf_cdiv_f", "CMPLX", "fabs")),
    # NumPy's complex reciprocal loop (Smith's method on 1 / z; 1 / 0 is nan + nan j)
    "sf_creciprocal": ("""\
cdef inline sf_cfloat sf_creciprocal(sf_cfloat z) noexcept nogil:
    cdef double zr = z.real, zi = z.imag, r, d
    if sf_cfloat is floatcomplex:
        return _sf_creciprocal_f(z.real, z.imag)
    if fabs(zi) <= fabs(zr):
        r = zi / zr
        d = zr + zi * r
        return CMPLX(1 / d, -r / d)
    r = zr / zi
    d = zr * r + zi
    return CMPLX(r / d, -1 / d)""", ("sf_cfloat", "_sf_creciprocal_f", "CMPLX", "fabs")),
    "_sf_creciprocal_f": ("""\
cdef inline float complex _sf_creciprocal_f(float zr, float zi) noexcept nogil:
    cdef float r, d
    if fabs(zi) <= fabs(zr):
        r = zi / zr
        d = zr + zi * r
        return CMPLXF(1 / d, -r / d)
    r = zr / zi
    d = zr * r + zi
    return CMPLXF(r / d, -1 / d)""", ("CMPLXF", "fabs")),
    # NumPy 2's complex sign: z / |z|, with its rules for nan, infinities and 0
    "sf_csign": ("""\
cdef inline sf_cfloat sf_csign(sf_cfloat z) noexcept nogil:
    cdef double zr = z.real, zi = z.imag, a = hypot(zr, zi), re, im
    if isnan(a) or (isinf(zr) and isinf(zi)):
        re = NAN
        im = NAN
    elif isinf(a):
        re = (1 if zr > 0 else -1) if isinf(zr) else 0
        im = 0 if isinf(zr) else (1 if zi > 0 else -1)
    elif a == 0:
        re = 0
        im = 0
    else:
        re = zr / a
        im = zi / a
    if sf_cfloat is floatcomplex:
        return CMPLXF(<float>re, <float>im)
    return CMPLX(re, im)""", ("sf_cfloat", "hypot", "isnan", "isinf", "CMPLX", "CMPLXF")),
    # NumPy's nc_expm1, nc_log1p, nc_log2, nc_log10 (funcs.inc.src), computed in double
    "sf_cexpm1": ("""\
cdef inline sf_cfloat sf_cexpm1(sf_cfloat z) noexcept nogil:
    cdef double zr = z.real, zi = z.imag, a = sin(zi / 2)
    cdef double re = expm1(zr) * cos(zi) - 2 * a * a, im = exp(zr) * sin(zi)
    cdef double complex w
    if not (isfinite(zr) and isfinite(zi)):  # C99's exp(z) - 1, as the standard lists
        w = cexp(CMPLX(zr, zi))
        re = w.real - 1
        im = w.imag
    elif zr == 0 and zi == 0:
        re = 0
        im = zi
    if sf_cfloat is floatcomplex:
        return CMPLXF(<float>re, <float>im)
    return CMPLX(re, im)""", ("sf_cfloat", "sin", "cos", "exp", "expm1", "isfinite", "cexp",
                              "CMPLX", "CMPLXF")),
    # C99's ctanh, except that tanh(±inf + bj) of a finite b is ±1 + 0j with the sign of b
    # (the standard's table; C99 has sin(2b))
    "sf_ctanh": ("""\
cdef inline sf_cfloat sf_ctanh(sf_cfloat z) noexcept nogil:
    cdef double complex w = ctanh(CMPLX(z.real, z.imag))
    cdef double im = w.imag
    if isinf(z.real) and isfinite(z.imag):
        im = copysign(0, z.imag)
    if sf_cfloat is floatcomplex:
        return CMPLXF(<float>w.real, <float>im)
    return CMPLX(w.real, im)""", ("sf_cfloat", "ctanh", "isinf", "isfinite", "copysign",
                                  "CMPLX", "CMPLXF")),
    "sf_clog1p": ("""\
cdef inline sf_cfloat sf_clog1p(sf_cfloat z) noexcept nogil:
    cdef double zr = z.real, zi = z.imag
    cdef double re = log(hypot(zr + 1, zi)), im = atan2(zi, zr + 1)
    if sf_cfloat is floatcomplex:
        return CMPLXF(<float>re, <float>im)
    return CMPLX(re, im)""", ("sf_cfloat", "log", "hypot", "atan2", "CMPLX", "CMPLXF")),
    "sf_clogscaled": ("""\
cdef inline sf_cfloat sf_clogscaled(sf_cfloat z, double scale) noexcept nogil:
    cdef double complex w = clog(CMPLX(z.real, z.imag))
    if sf_cfloat is floatcomplex:
        return CMPLXF(<float>(w.real * scale), <float>(w.imag * scale))
    return CMPLX(w.real * scale, w.imag * scale)""", ("sf_cfloat", "clog", "CMPLX", "CMPLXF")),
    # NumPy's complex order (loops.c.src CLT/CLE): lexicographic, real part first; a nan
    # imaginary part makes a strict real comparison false
    "sf_cless": ("""\
cdef inline bint sf_cless(sf_cfloat x, sf_cfloat y, bint or_equal) noexcept nogil:
    if x.real < y.real:
        return x.imag == x.imag and y.imag == y.imag
    if x.real == y.real:
        return x.imag < y.imag or (or_equal and x.imag == y.imag)
    return False""", ("sf_cfloat",)),
    # NumPy's complex maximum/minimum: x wins when it holds a nan or compares >= (<=) y
    "sf_cselect": ("""\
cdef inline sf_cfloat sf_cselect(sf_cfloat x, sf_cfloat y, bint greater) noexcept nogil:
    if x.real != x.real or x.imag != x.imag:
        return x
    if (sf_cless(y, x, True) if greater else sf_cless(x, y, True)):
        return x
    return y""", ("sf_cfloat", "sf_cless")),
    "_sf_cdiv_f": ("""\
cdef inline float complex _sf_cdiv_f(float ar, float ai, float br, float bi) noexcept nogil:
    cdef float rat, scl
    if fabs(br) >= fabs(bi):
        if br == 0 and bi == 0:
            return CMPLXF(ar / <float>fabs(br), ai / <float>fabs(br))
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return CMPLXF((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return CMPLXF((ar * rat + ai) * scl, (ai * rat - ar) * scl)""", ("CMPLXF", "fabs")),
}


def _library() -> dict[str, CName]:
    out: dict[str, CName] = {}
    for name in MATH + ("fabs", "pow", "NAN", "INFINITY"):
        out[name] = CName(name, "libc.math")
    for name in COMPLEX:
        out[name] = CName(name, "libc.complex")
    out["CMPLX"] = CName("CMPLX", "extern", "double complex CMPLX(double, double)")
    out["CMPLXF"] = CName("CMPLXF", "extern", "float complex CMPLXF(float, float)")
    # a C typedef (so the name means the same in C text, e.g. restrict pointer types) that
    # Cython knows as float
    out["sf_half"] = CName("sf_half", "type", 'cdef extern from *:\n    """\n    typedef '
                                              '_Float16 sf_half;\n    """\n'
                                              "    ctypedef float sf_half")
    for name, text in _FUSED.items():
        out[name] = CName(name, "type", text)
    for name, (text, uses) in _HELPERS.items():
        out[name] = CName(name, "helper", text, uses)
    return out


C_LIBRARY: dict[str, CName] = _library()
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# names every kernel module already has (compiler/emit/emit.py's fixed header)
_ALWAYS = frozenset({"NAN", "INFINITY", "fabs", "pow"})


def declarations(text: str) -> list[str]:
    """The Cython lines that declare every library name ``text`` uses (and what those
    declarations use in turn), in a fixed order: cimports, externs, types, helpers.
    Comments (``# ...`` to the end of a line) are not read."""
    found: list[str] = []
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())

    def visit(name: str) -> None:
        if name in found or name not in C_LIBRARY:
            return
        found.append(name)
        for used in C_LIBRARY[name].uses:
            visit(used)
    for word in dict.fromkeys(_WORD.findall(text)):
        visit(word)
    names = sorted(n for n in found if n not in _ALWAYS)
    by = {src: [C_LIBRARY[n] for n in names if C_LIBRARY[n].source == src]
          for src in ("libc.math", "libc.complex", "extern", "type", "helper")}
    lines: list[str] = []
    for src in ("libc.math", "libc.complex"):
        if by[src]:
            lines.append(f"from {src} cimport {', '.join(c.name for c in by[src])}")
    if by["extern"]:
        lines.append('cdef extern from "<complex.h>" nogil:')
        lines += [f"    {c.text}" for c in by["extern"]]
    types = by["type"]
    lines += [c.text for c in types if c.name.startswith("sf_") and "fused" not in c.text]
    lines += [c.text for c in types if "fused" in c.text]
    helpers = by["helper"]  # a helper another helper calls comes first
    ordered: list[CName] = []

    def place(c: CName) -> None:
        if c in ordered:
            return
        for u in c.uses:
            if u in C_LIBRARY and C_LIBRARY[u].source == "helper" and C_LIBRARY[u] in helpers:
                place(C_LIBRARY[u])
        ordered.append(c)
    for c in helpers:
        place(c)
    for c in ordered:
        lines += ["", c.text]
    return lines
