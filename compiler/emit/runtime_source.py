"""The shared runtime's sources (``runtime.pyx``, ``runtime.pxd``): where they are, their
identity, and what kernel modules cimport from them.

The runtime is the extension module ``sparsefold.compiler.runtime``, compiled once: at
install (``setup.py``), or into the kernel cache on first use when the installed build is
missing or was built from other sources (an editable install whose ``runtime.pyx`` changed
since ``pip install -e .``: ``build.ensure_runtime``). A kernel module cimports it, so
Cython needs ``runtime.pxd`` on its include path as ``sparsefold/compiler/runtime.pxd``
(:func:`write_include`); every kernel's cache key records :func:`interface_digest`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

__all__ = ["MODULE", "PYX", "PXD", "source_digest", "interface_digest", "marker",
           "write_include", "exported_names", "built_from_current_sources"]

MODULE = "sparsefold.compiler.runtime"
# at the top of the compiler package (``sparsefold/compiler/``), beside the extension module
# built from them
PYX = Path(__file__).parent.parent / "runtime.pyx"
PXD = PYX.with_name("runtime.pxd")
# the prefix of the C string every build of the runtime carries: its sources' digest
_MARKER = "sparsefold-runtime-source:"


@functools.lru_cache(maxsize=1)
def _texts() -> tuple[str, str] | None:
    try:
        return PYX.read_text(), PXD.read_text()
    except OSError:  # an installation without the sources: trust the built module
        return None


def source_digest() -> str | None:
    """sha256 of the runtime's ``.pyx`` and ``.pxd`` (None when they are not installed)."""
    texts = _texts()
    if texts is None:
        return None
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def interface_digest() -> str:
    """sha256 of ``runtime.pxd``: what a kernel module was compiled against."""
    texts = _texts()
    text = texts[1] if texts else ""
    return hashlib.sha256(text.encode()).hexdigest()


def marker(digest: str) -> str:
    """The C string constant (``SF_RUNTIME_SOURCE``) a build from sources of ``digest``
    carries, so that a built module can be matched to its sources without importing it."""
    return f"{_MARKER}{digest}"


def built_from_current_sources(so_path: str | Path) -> bool:
    """Was the built runtime at ``so_path`` compiled from the sources installed now? (True
    when the sources are not installed: nothing to compare.)"""
    digest = source_digest()
    if digest is None:
        return True
    try:
        return marker(digest).encode() in Path(so_path).read_bytes()
    except OSError:
        return False


def write_include(directory: Path) -> Path:
    """Write ``runtime.pxd`` where Cython finds it for ``cimport sparsefold.compiler.runtime``
    (``directory/sparsefold/compiler/runtime.pxd``; a namespace package, as Cython 3 reads
    them) and return ``directory``, the include path entry."""
    target = Path(directory) / "sparsefold" / "compiler"
    target.mkdir(parents=True, exist_ok=True)
    text = PXD.read_text()
    pxd = target / "runtime.pxd"
    if not pxd.exists() or pxd.read_text() != text:
        pxd.write_text(text)
    return Path(directory)


_DECLARED = re.compile(r"^(?:cdef|ctypedef)\s+(?:inline\s+|enum\s+|struct\s+)?[\w*\s]*?\b"
                       r"(sf_\w+)\s*[(:]?", re.M)
_FUNCTION_TYPE = re.compile(r"^ctypedef\s+\w+\s+\(\*(sf_\w+)\)", re.M)
_MEMBER = re.compile(r"^    (SF_\w+)\b|^    \w+ (__builtin_\w+)\(", re.M)


@functools.lru_cache(maxsize=1)
def exported_names() -> frozenset[str]:
    """Every name ``runtime.pxd`` declares for kernels: functions, structs, enum members."""
    text = PXD.read_text()
    names = set(_DECLARED.findall(text)) | set(_FUNCTION_TYPE.findall(text))
    for m in _MEMBER.finditer(text):
        names.add(m.group(1) or m.group(2))
    return frozenset(names)
