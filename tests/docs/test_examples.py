"""Every example of the documentation runs and prints what its page shows.

Pages: ``README.md`` and ``docs/**/*.md``. The fenced blocks of a page run in order, in one
namespace (a page reads top to bottom), in a scratch directory:

* a block whose lines start with ``>>>`` (``pycon`` or ``python``) is a doctest;
* any other ``python`` block runs as a script; when a block with no language (or ``text``)
  follows it directly, with nothing between the fences, that block is what the script
  prints;
* ``{sparsefold-output}`` runs its code (its ``:option:`` lines dropped): the site shows what
  it printed, so only that it runs is checked;
* an HTML comment ``<!-- not run: why -->`` right before a block (a fragment, a listing of a
  file) leaves it out; other languages (bash, cython, text) are not code to run.

Output is compared as doctest does, with ``ELLIPSIS`` (``...`` matches anything) and
``NORMALIZE_WHITESPACE``; an exception that the page does not show fails.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Block", "blocks_of", "run_page"]

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<ticks>`{3,})\s*(?P<info>[^`]*)$")
_PROMPT = re.compile(r"^\s*>>>( |$)", re.M)
_NOT_RUN = re.compile(r"<!--\s*not run\b", re.I)
_PYTHON = {"python", "py", "python3", "pycon"}
_OUTPUT = {"", "text", "output"}


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its info string's first word, text, first line (1-based), whether
    it is marked not run, and whether it starts right after the previous block's fence."""

    language: str
    text: str
    line: int
    not_run: bool
    adjacent: bool


def blocks_of(markdown: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order."""
    lines = markdown.splitlines()
    blocks: list[Block] = []
    previous = ""          # the last non-blank line outside a block
    last_close = -2        # the line index of the last closing fence
    k = 0
    while k < len(lines):
        opened = _FENCE.match(lines[k])
        if not opened:
            if lines[k].strip():
                previous = lines[k]
            k += 1
            continue
        ticks, indent = opened["ticks"], len(opened["indent"])
        info = opened["info"].strip()
        body: list[str] = []
        end = k + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{ticks}`*\s*$", lines[end]):
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        blocks.append(Block(info.split()[0] if info else "", "\n".join(body) + "\n", k + 1,
                            bool(_NOT_RUN.search(previous)), last_close == k - 1))
        previous, last_close, k = lines[k], end, end + 1
    return blocks


def _directive_code(text: str) -> str:
    """The code of a ``{sparsefold-output}`` block: without its leading ``:option:`` lines."""
    lines = text.splitlines()
    while lines and re.match(r"^:[\w+-]+:", lines[0]):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def _run_doctest(block: Block, page: str, namespace: dict) -> str | None:
    test = doctest.DocTestParser().get_doctest(block.text, namespace, f"{page}:{block.line}",
                                               page, block.line)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)   # a DocTest runs in a copy of the namespace it is given
    return report.getvalue() if result.failed else None


def _run_script(code: str, block: Block, page: str, namespace: dict,
                shown: str | None) -> str | None:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            # padded so that a traceback gives the line of the page
            exec(compile("\n" * block.line + code, page, "exec"), namespace)
    except Exception:  # noqa: BLE001 - any exception is the example's failure, reported
        return f"{page}, block at line {block.line} raised:\n{traceback.format_exc()}"
    if shown is None:
        return None
    checker = doctest.OutputChecker()
    if checker.check_output(shown, printed.getvalue(), FLAGS):
        return None
    example = doctest.Example(code, shown)
    return (f"{page}, block at line {block.line}: the output differs from the block after "
            "it\n" + checker.output_difference(example, printed.getvalue(), FLAGS))


def run_page(markdown: str, page: str) -> tuple[int, list[str]]:
    """Run the examples of one page; return how many blocks ran and the failure reports."""
    # a module registered while the page runs: a dataclass defined by an example looks its
    # module up in sys.modules
    module = types.ModuleType("docs_example_" + re.sub(r"\W", "_", page))
    sys.modules[module.__name__] = module
    try:
        return _run_blocks(blocks_of(markdown), page, module.__dict__)
    finally:
        del sys.modules[module.__name__]


def _run_blocks(blocks: list[Block], page: str, namespace: dict) -> tuple[int, list[str]]:
    ran, failures = 0, []
    for k, block in enumerate(blocks):
        if block.not_run:
            continue
        if block.language == "{sparsefold-output}":
            failure = _run_script(_directive_code(block.text), block, page, namespace, None)
        elif block.language in _PYTHON and _PROMPT.search(block.text):
            failure = _run_doctest(block, page, namespace)
        elif block.language in _PYTHON - {"pycon"}:
            after = blocks[k + 1] if k + 1 < len(blocks) else None
            shown = (after.text if after and after.adjacent and after.language in _OUTPUT
                     else None)
            failure = _run_script(block.text, block, page, namespace, shown)
        else:
            continue
        ran += 1
        if failure:
            failures.append(failure)
    return ran, failures


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run_as_shown(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # an example that writes a file writes it here
    page = str(path.relative_to(ROOT))
    ran, failures = run_page(path.read_text(encoding="utf-8"), page)
    assert not failures, "\n\n".join(failures)
    if any(b.language in _PYTHON for b in blocks_of(path.read_text(encoding="utf-8"))):
        assert ran, f"{page} has Python blocks, yet none ran"


# --- the checker itself can fail --------------------------------------------------------------

GOOD = """\
Some prose.

```pycon
>>> x = 2 + 2
>>> x
4
```

```python
print(x * 10)
```
```
40
```

<!-- not run: a fragment -->
```python
undefined_name
```

```bash
exit 1
```
"""


def test_a_page_whose_examples_hold_passes():
    assert run_page(GOOD, "good.md") == (2, [])


@pytest.mark.parametrize("wrong, expected", [
    (GOOD.replace(">>> x\n4", ">>> x\n5"), "Expected:\n    5\nGot:\n    4"),
    (GOOD.replace("```\n40\n```", "```\n41\n```"),
     "good.md, block at line 9: the output differs from the block after it"),
    (GOOD.replace("print(x * 10)", "print(y)"), "NameError: name 'y' is not defined"),
    (GOOD.replace("<!-- not run: a fragment -->\n", ""), "NameError: name 'undefined_name'"),
])
def test_a_wrong_example_fails(wrong, expected):
    ran, failures = run_page(wrong, "good.md")
    assert len(failures) == 1 and expected in failures[0], failures


def test_output_is_compared_only_when_the_block_follows_directly():
    separated = GOOD.replace("```\n```\n40\n```", "```\n\n```\n41\n```")
    assert run_page(separated, "good.md") == (2, [])


def test_blocks_of_reads_fences_and_markers():
    blocks = blocks_of(GOOD)
    assert [(b.language, b.line, b.not_run, b.adjacent) for b in blocks] == [
        ("pycon", 3, False, False), ("python", 9, False, False), ("", 12, False, True),
        ("python", 17, True, False), ("bash", 21, False, False)]
