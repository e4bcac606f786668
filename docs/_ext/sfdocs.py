"""Sphinx extension for the sparsefold site: generated output and pages, a complete API
reference. (The pages' examples are run, and their shown output compared, by
``pytest tests/docs``: tests/docs/test_examples.py says how.)

* **Generated output**: ``{sparsefold-output}`` runs its Python content when the page is
  read and shows what it printed (``sf.show``'s kernels on the compiler page), so the
  site shows the compiler as it is, never a pasted copy.
* **Generated pages**: ``language`` is rendered from ``sparsefold.spec.docgen`` at every
  build (the file docs/language.md, kept current by tests/spec/test_docgen.py, is what
  GitHub shows); optional pages (``OPTIONAL_PAGES``) join the table of contents when their
  file exists.
* **API reference**: ``{sparsefold-api} MODULE`` documents every name of the module's
  ``__all__``; an object exported by several modules is documented once, under the first
  of ``API_MODULES`` that exports it, and referred to from the others. When the build ends,
  a public name that no page documents is a warning (an error under ``-W``).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import sys
import traceback
import types
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

__all__ = ["setup", "API_MODULES", "OPTIONAL_PAGES"]

logger = logging.getLogger(__name__)

API_MODULES = ("sparsefold", "sparsefold.verify", "sparsefold.spec", "sparsefold.compiler")
# pages other engineers add; listed in the table of contents only when the file exists
OPTIONAL_PAGES = ("aot", "dropin", "dask")
_OPTIONAL_MARK = "optional-pages"      # the toctree line in index.md they replace


# --- generated sources ---------------------------------------------------------------------------

def _generated_source(app, docname: str, source: list[str]) -> None:
    if docname == "language":
        from sparsefold.spec import docgen
        source[0] = docgen.render()
    elif docname == "index":
        present = [p for p in OPTIONAL_PAGES if (Path(app.srcdir) / f"{p}.md").exists()]
        source[0] = source[0].replace(_OPTIONAL_MARK + "\n", "".join(f"{p}\n" for p in present))


# --- output generated at build time --------------------------------------------------------------

class OutputDirective(SphinxDirective):
    """Run the content (Python) when the page is read; show the code, then what it printed.

    Options: ``language`` of the output (default ``text``); ``keep``: ``all`` (default),
    ``header`` (a kernel's leading comment block) or ``header+run`` (the header, then from
    ``def run(`` on: what the kernel does, without the helpers every kernel shares);
    ``hide-code``. The content blocks of one page share a namespace."""

    has_content = True
    option_spec = {"language": directives.unchanged, "keep": directives.unchanged,
                   "hide-code": directives.flag}

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        namespace = _page_module(self.env.docname).__dict__
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"<{self.env.docname}: sparsefold-output>", "exec"),
                     namespace)
        except Exception:  # noqa: BLE001 - any failure is a build error, with its traceback
            raise self.error("sparsefold-output: the code raised\n" + traceback.format_exc())
        try:
            text = _keep(printed.getvalue().rstrip("\n"), self.options.get("keep", "all"))
        except ValueError as exc:
            raise self.error(f"sparsefold-output: {exc}") from None
        if not text:
            raise self.error("sparsefold-output: the code printed nothing")
        shown: list[nodes.Node] = []
        if "hide-code" not in self.options:
            block = nodes.literal_block(code, code, language="python", sf_generated=True)
            shown.append(block)
        out = nodes.literal_block(text, text, language=self.options.get("language", "text"),
                                  sf_generated=True)
        shown.append(out)
        return shown


def _page_module(docname: str) -> types.ModuleType:
    """The namespace the page's {sparsefold-output} blocks share: a real module, so that
    classes defined there (dataclasses) find their module."""
    name = "sfdocs_page_" + re.sub(r"\W", "_", docname)
    if name not in sys.modules:
        sys.modules[name] = types.ModuleType(name)
    return sys.modules[name]


def _keep(text: str, keep: str) -> str:
    lines = text.splitlines()
    headers: list[list[str]] = []   # each module's leading comment block (one per stage)
    for k, line in enumerate(lines):
        if line.startswith("# cython: language_level"):
            block = []
            for follow in lines[k:]:
                if not follow.startswith("#"):
                    break
                block.append(follow)
            headers.append(block)
    if keep == "all":
        return text
    if not headers:
        raise ValueError(f"keep={keep}: the output has no kernel header")
    if keep == "header":
        return "\n\n".join("\n".join(h) for h in headers)
    if keep == "header+run":
        if len(headers) > 1:
            raise ValueError("keep=header+run: a staged kernel; use keep=header")
        # the loops: _run_body, up to the next top-level statement (the trampoline, run =
        # sf_function(...), the fast entry follow; the shared runtime holds the rest)
        starts = [k for k, line in enumerate(lines) if line.startswith("cdef void _run_body(")]
        if not starts:
            raise ValueError("keep=header+run: the output has no 'cdef void _run_body('")
        start = starts[0]
        end = next((k for k in range(start + 1, len(lines))
                    if lines[k] and not lines[k][0].isspace()), len(lines))
        before, after = start - len(headers[0]), len(lines) - end
        return "\n".join(headers[0] + ["", f"# ... {before} lines omitted here: the cimports "
                                           "from the shared runtime, the table of in-kernel "
                                           "checks ...", ""] + lines[start:end] +
                         [f"# ... {after} lines omitted here: the trampoline, run = "
                          "sf_function(...), the fast entry ..."])
    raise ValueError(f"keep: expected all, header or header+run, found {keep!r}")


# --- the API reference ---------------------------------------------------------------------------

def _primary_module(obj, name: str) -> str | None:
    """The first of API_MODULES that exports ``obj`` (under any name)."""
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        if any(getattr(module, n, None) is obj for n in module.__all__):
            return module_name
    return None


def _directive_for(obj) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "autofunction"
    return "autodata"


class ApiDirective(SphinxDirective):
    """``{sparsefold-api} MODULE``: every name of ``MODULE.__all__``, in that order.

    Options: ``members`` (names of classes whose public methods and properties are
    documented too, with or without a docstring)."""

    required_arguments = 1
    option_spec = {"members": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        with_members = set((self.options.get("members") or "").split())
        lines: list[str] = []
        elsewhere: list[str] = []
        for name in module.__all__:
            obj = getattr(module, name)
            primary = _primary_module(obj, name)
            if primary is not None and primary != module_name:  # (None: only this module)
                owner = importlib.import_module(primary)
                home = next(n for n in owner.__all__ if getattr(owner, n) is obj)
                elsewhere.append(f"* ``{name}``: :py:obj:`{primary}.{home}`")
                continue
            directive = _directive_for(obj)
            lines.append(f".. {directive}:: {module_name}.{name}")
            if directive == "autodata":
                value = repr(obj)
                if len(value) <= 60:
                    lines += ["", f"   ``{name} = {value}``"]
                else:
                    lines += ["   :no-value:", ""]
                    if hasattr(obj, "__len__"):
                        lines.append(f"   A ``{type(obj).__name__}`` of {len(obj)} entries.")
            elif name in with_members:
                # the properties and methods without a docstring too (T, dtype, reshape,
                # sum, ...): their signature says enough
                lines += ["   :members:", "   :undoc-members:"]
            lines.append("")
        if elsewhere:
            lines += [f"Also exported by ``{module_name}``, documented with the module that "
                      "owns them:", ""] + elsewhere + [""]
        return _parse_rst("\n".join(lines), self.state.document)


def _parse_rst(text: str, document: nodes.document) -> list[nodes.Node]:
    """Parse reStructuredText into nodes of a Markdown page. autodoc's directives emit rST
    and parse it with their caller's state, which on a MyST page parses Markdown; a fresh
    rST document sharing the page's settings (and so Sphinx's environment) avoids that, as
    MyST's own ``{eval-rst}`` does."""
    from docutils.parsers.rst import Parser, roles
    from docutils.utils import new_document

    scratch = new_document(document["source"], document.settings)
    scratch.reporter = document.reporter
    blank_role = roles._roles.get("")   # the rST parser resets the default role: keep it
    Parser().parse(text, scratch)
    if blank_role is not None:
        roles._roles[""] = blank_role
    for node in scratch.children:
        if node.get("names"):
            document.note_explicit_target(node, node)
    return list(scratch.children)


def _check_api_complete(app, exception) -> None:
    """Every name of every API module's ``__all__`` is documented on some page."""
    if exception is not None or app.builder.name != "html":
        return
    documented = set(app.env.domains["py"].objects)
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            primary = _primary_module(getattr(module, name), name)
            home = primary or module_name
            owner = importlib.import_module(home)
            qual = next((f"{home}.{n}" for n in owner.__all__
                         if getattr(owner, n) is getattr(module, name)), f"{home}.{name}")
            if qual not in documented:
                logger.warning(f"API reference: {module_name}.{name} is not documented "
                               f"(expected {qual}; add the module to a {{sparsefold-api}} "
                               "page)")


def setup(app):
    app.connect("source-read", _generated_source)
    app.connect("build-finished", _check_api_complete)
    app.add_directive("sparsefold-output", OutputDirective)
    app.add_directive("sparsefold-api", ApiDirective)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
