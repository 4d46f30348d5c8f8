"""ddpify: turn a single-GPU PyTorch training script into a DistributedDataParallel script."""

__version__ = "0.1.0"
