"""nn.data: datasets, samplers and the DataLoader (like ``torch.utils.data``)."""

from ._worker import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
                      ChainDataset,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      StackDataset,
                      Subset,
                      TensorDataset,
                      random_split,
)
from .sampler import (
                      BatchSampler,
                      DistributedSampler,
                      RandomSampler,
                      Sampler,
                      SequentialSampler,
                      SubsetRandomSampler,
                      WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "StackDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader", "default_collate",
           "default_convert", "get_worker_info", "WorkerInfo"]
