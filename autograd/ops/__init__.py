"""The differentiable functions of autograd, one module per family; ``METHODS`` of each module become
``Tensor`` methods (see ``autograd.methods``)."""

from .complex_ops import *  # noqa: F401,F403
from .composites import *  # noqa: F401,F403
from .conv_ops import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .linalg_toplevel import *  # noqa: F401,F403
from .nn_ops import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .searching import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403


def _numpy_keywords(fn):
    """``fn`` also taking NumPy's keyword names, as PyTorch's argument parser does: ``axis`` for ``dim``,
    ``keepdims`` for ``keepdim`` (``x.sum(axis=0, keepdims=True)``)."""
    import functools

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            if "axis" in kwargs:
                if "dim" in kwargs:
                    raise TypeError(f"{fn.__name__}() got both 'dim' and its alias 'axis'")
                kwargs["dim"] = kwargs.pop("axis")
            if "keepdims" in kwargs:
                if "keepdim" in kwargs:
                    raise TypeError(f"{fn.__name__}() got both 'keepdim' and its alias 'keepdims'")
                kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(*args, **kwargs)

    return call


for _name in ("all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "cat", "concat", "concatenate",
              "count_nonzero", "cummax", "cummin", "cumprod", "cumsum", "log_softmax", "logsumexp", "max", "mean",
              "median", "min", "nanmean", "nansum", "norm", "prod", "softmax", "sort", "squeeze", "stack", "std",
              "std_mean", "sum", "topk", "unique", "unsqueeze", "var", "var_mean"):
    globals()[_name] = _numpy_keywords(globals()[_name])
del _name
