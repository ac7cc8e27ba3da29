"""Learning-rate schedulers (``nn.optim.lr_scheduler`` ≙ ``torch.optim.lr_scheduler``): PyTorch's chainable
update rules, so a schedule gives the same learning rates step for step, and ``state_dict`` for resuming."""

from .base import LRScheduler
from .composite import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .cyclic import CyclicLR, OneCycleLR
from .simple import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "OneCycleLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]
