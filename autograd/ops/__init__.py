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
