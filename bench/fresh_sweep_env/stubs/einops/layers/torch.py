"""``einops.layers.torch``: the Rearrange and Reduce layers of the stand-in's functions."""

from torch import nn

from .. import rearrange, reduce


class Rearrange(nn.Module):
    def __init__(self, pattern, **sizes):
        super().__init__()
        self.pattern, self.sizes = pattern, sizes

    def forward(self, x):
        return rearrange(x, self.pattern, **self.sizes)


class Reduce(nn.Module):
    def __init__(self, pattern, reduction, **sizes):
        super().__init__()
        self.pattern, self.reduction, self.sizes = pattern, reduction, sizes

    def forward(self, x):
        return reduce(x, self.pattern, self.reduction, **self.sizes)
