"""Devices and ``__array_namespace_info__``: what the namespace reports about itself.

sparsefold runs on the host CPU only, so there is one device, :data:`CPU`; every
``device=`` argument accepts it (or None) and refuses anything else with a ``ValueError``.
"""

from __future__ import annotations

from sparsefold.spec import promotion

__all__ = ["Device", "CPU", "check_device", "Info", "__array_namespace_info__"]


class Device:
    """A device arrays live on; sparsefold has one, ``CPU``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"sparsefold.array_api.Device({self.name!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Device", self.name))


CPU = Device("cpu")


def check_device(device) -> None:
    """``device`` is None or :data:`CPU` (also spelled ``"cpu"``), else ``ValueError``."""
    if device is None or device == CPU or device == "cpu":
        return
    raise ValueError(f"sparsefold arrays live on the CPU only; unsupported device {device!r}")


class Info:
    """The standard's inspection namespace (``xp.__array_namespace_info__()``)."""

    __slots__ = ()

    def capabilities(self) -> dict:
        """Boolean-mask indexing and data-dependent shapes are supported (they compute the
        mask or the data when the shape is needed); no limit on dimensions below 64."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> Device:
        return CPU

    def devices(self) -> list[Device]:
        return [CPU]

    def default_dtypes(self, *, device=None) -> dict:
        check_device(device)
        return dict(promotion.DEFAULTS)

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The supported dtypes by name, optionally only those of ``kind`` (a kind name of
        ``isdtype`` or a tuple of them)."""
        check_device(device)
        out = {}
        for dt in promotion.DTYPES:
            if kind is None or promotion.isdtype(dt, kind):
                out[dt.name] = dt
        return out


def __array_namespace_info__() -> Info:
    return Info()
