"""``nn.utils``: gradient clipping, flat parameter vectors, parametrizations and weight/spectral norm."""

from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from ._norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401


def __getattr__(name):  # nn.utils.trainer on first use (it imports nn.optim and nn.serialization)
    if name == "trainer":
        import importlib

        return importlib.import_module(".trainer", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
