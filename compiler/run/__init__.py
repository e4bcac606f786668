"""The run phase (DESIGN §3.6): building and caching kernel modules (``build.py``,
``cache.py``), the thread count and memory limit a call runs under (``threads.py``,
``memory.py``) and gather stages, which call the shared runtime directly (``gather.py``).
May import every other phase.
"""
