"""torchvision.models.inception: the builder (unavailable, as in the package) and the block classes,
for the programs that subclass them at import time (an FID network of their own); building one fails
like every pretrained network here."""

import torch.nn as nn

from . import _unavailable, inception_v3  # noqa: F401


class _Block(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        _unavailable()


class Inception3(_Block):
    pass


class InceptionA(_Block):
    pass


class InceptionB(_Block):
    pass


class InceptionC(_Block):
    pass


class InceptionD(_Block):
    pass


class InceptionE(_Block):
    pass


class InceptionAux(_Block):
    pass


class BasicConv2d(_Block):
    pass
