"""Tensor layouts (``torch.strided``, ``torch.sparse_coo``): what ``Tensor.layout`` says."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo"]


class layout:  # noqa: N801 - PyTorch's name
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"autograd.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _by_name(name):
    return {"strided": strided, "sparse_coo": sparse_coo}[name]
