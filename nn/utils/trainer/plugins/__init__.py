"""The Trainer's plugins: monitors, progress and logging; evaluation, checkpoints, early stopping; plugins
that change the step (clipping, mixed precision, accumulation, graph capture, scheduler stepping); and
TensorBoard logging."""

from .evaluation import Checkpoint, EarlyStopping, Evaluation
from .monitors import AccuracyMonitor, Logger, LossMonitor, ProgressMonitor, ThroughputMonitor, TimeMonitor
from .plugin import Monitor, Plugin
from .step import GradientAccumulation, GradientClipping, GraphCapture, LRSchedulerStep, MixedPrecision
from .tensorboard import TensorBoardLogger

__all__ = ["Plugin", "Monitor", "LossMonitor", "AccuracyMonitor", "TimeMonitor", "ThroughputMonitor",
           "ProgressMonitor", "Logger", "Evaluation", "Checkpoint", "EarlyStopping", "GradientClipping",
           "MixedPrecision", "GradientAccumulation", "GraphCapture", "LRSchedulerStep", "TensorBoardLogger"]
