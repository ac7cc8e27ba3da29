"""``nn.utils``: gradient clipping and flat parameter vectors."""

from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from .convert import parameters_to_vector, vector_to_parameters  # noqa: F401
