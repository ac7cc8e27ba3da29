"""``ReduceOp``: how a reduction combines the ranks' values (PyTorch's names)."""

import enum


class ReduceOp(enum.Enum):
    """SUM, AVG (floating dtypes), PRODUCT, MIN, MAX, and BAND/BOR/BXOR (integer and bool dtypes)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"ReduceOp.{self.name}"
