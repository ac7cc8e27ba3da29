"""``tkernels.linalg``: the array API linear algebra extension, plus what PyTorch users reach for in
``torch.linalg``. Only API names are attributes here; the implementations live in ``tkernels/products.py``,
``tkernels/reduction.py``, ``tkernels/decompositions.py``, ``tkernels/linalg_eig.py`` and
``tkernels/linalg_composed.py``."""

from .decompositions import EighResult, QRResult, SVDResult, eigh, eigvalsh, qr, svd, svdvals
from .factorizations import LinAlgError, cholesky, cholesky_ex, solve_triangular
from .linalg_composed import (
    LstsqResult,
    cross,
    diagonal,
    householder_product,
    lstsq,
    matrix_rank,
    matrix_transpose,
    norm,
    pinv,
    trace,
    vander,
)
from .linalg_eig import EigResult, eig, eigvals
from .matrix_functions import cond, matrix_power, multi_dot
from .products import matmul, outer, tensordot, vecdot
from .reduction import matrix_norm, vector_norm
from .solvers import det, inv, inv_ex, lu, lu_factor, lu_factor_ex, lu_solve, slogdet, solve

__all__ = [
    "cross", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "lstsq", "matmul", "matrix_norm",
    "matrix_rank", "matrix_transpose", "norm", "outer", "pinv", "qr", "svd", "svdvals", "tensordot", "trace",
    "vander", "vecdot", "vector_norm",
]
__all__ += ["LinAlgError", "cholesky", "cholesky_ex", "solve_triangular", "det", "inv", "inv_ex", "lu", "lu_factor",
            "lu_factor_ex", "lu_solve", "slogdet", "solve", "cond", "matrix_power", "multi_dot"]
_RESULTS = (EigResult, EighResult, LstsqResult, QRResult, SVDResult)  # the result classes (reached by the results)
del EigResult, EighResult, LstsqResult, QRResult, SVDResult


def __dir__():
    return list(__all__)
