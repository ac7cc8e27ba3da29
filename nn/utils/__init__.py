"""``nn.utils``: gradient clipping and flat parameter vectors."""

from . import rnn  # noqa: F401,E402
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from .convert import parameters_to_vector, vector_to_parameters  # noqa: F401


def __getattr__(name):  # nn.utils.trainer on first use (it imports nn.optim and nn.serialization)
    if name == "trainer":
        import importlib

        return importlib.import_module(".trainer", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
