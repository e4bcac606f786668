"""The ``sparsefold cache list|clear|dir`` command: the kernel cache's entries (``cache.py``),
each checked against the environment a build would record now (``build.py``)."""

from __future__ import annotations

import argparse
import sys

from sparsefold.compiler.run import cache
from sparsefold.compiler.run.build import environment_fields

__all__ = ["add_parser", "run"]


def _human_size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError  # pragma: no cover


def _human_age(seconds: float) -> str:
    for limit, unit in ((120, "s"), (7200, "min"), (172800, "h")):
        if seconds < limit:
            return f"{seconds / {'s': 1, 'min': 60, 'h': 3600}[unit]:.0f} {unit}"
    return f"{seconds / 86400:.0f} d"


def add_parser(subparsers) -> None:
    """Register ``sparsefold cache list|clear|dir``."""
    parser = subparsers.add_parser("cache", help="list, clear or locate the kernel cache")
    parser.add_argument("action", choices=["list", "clear", "dir"],
                        help="list entries (size, age, status) / remove them / print the path")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    root = cache.default_root()
    if args.action == "dir":
        print(root)
        return 0
    disk = cache.DiskCache(root)  # listing and clearing load nothing, so no trust check is needed
    if args.action == "clear":
        count, freed = disk.clear()
        print(f"removed {count} entr{'y' if count == 1 else 'ies'} ({_human_size(freed)}) "
              f"from {root}")
        return 0
    infos = disk.entries(environment_fields())
    if infos:
        width = max(len(info.name) for info in infos)
        print(f"{'NAME':<{width}}  {'SIZE':>10}  {'AGE':>7}  STATUS")
        for info in infos:
            print(f"{info.name:<{width}}  {_human_size(info.size):>10}  "
                  f"{_human_age(info.age_s):>7}  {info.status}")
    total = sum(info.size for info in infos)
    print(f"{len(infos)} entr{'y' if len(infos) == 1 else 'ies'}, {_human_size(total)} in {root}",
          file=sys.stdout)
    return 0
