"""Sphinx configuration of the sparsefold site. Build it (warnings are errors) with

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The examples of every page are run and their shown output checked by ``pytest tests/docs``
(tests/docs/test_examples.py); docs/_ext/sfdocs.py generates the pages' generated parts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import sparsefold  # noqa: E402 - after the path: the version, and a failed import fails early

project = "sparsefold"
author = "the sparsefold authors"
copyright = "the sparsefold authors, Apache-2.0"  # noqa: A001 - Sphinx's name
release = version = sparsefold.__version__

extensions = [
    "myst_parser",            # the pages are Markdown, readable on GitHub as they are
    "sphinx.ext.autodoc",     # the API reference, from the docstrings
    "sphinx.ext.autosummary",
    "numpydoc",               # numpydoc sections (Parameters, Returns, Examples) in docstrings
    "sfdocs",                 # docs/_ext/sfdocs.py
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
suppress_warnings: list[str] = []
nitpicky = False

# MyST: `#the-command` style links to headings, as GitHub makes them
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# autodoc / numpydoc: document what the docstrings say, in source order; no stub files
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": False}
autosummary_generate = False
numpydoc_show_class_members = False   # LazyArray's members come from autodoc's :members:
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"   # ships with Sphinx: nothing else to install, nothing fetched
html_title = f"sparsefold {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "A formally specified array language for sparse data",
                      "fixed_sidebar": True, "page_width": "1100px", "body_max_width": "none"}
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_show_sourcelink = False
