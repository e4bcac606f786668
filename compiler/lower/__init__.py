"""The lower phase (DESIGN §3.3, §3.5): a typed plan (``plan/plans.py``) becomes a loop
module (``emit/loops.py``) — cursors over levels, co-iteration, output assemblers,
workspaces, in-kernel checks — and the fast call entry (``fastcall.py``). Imports the
``plan`` phase (the plans and the facts it decided from) and ``emit`` (the IR it builds);
never ``run``.
"""
