"""No pretrained weights here (downloads): asking for them fails. A model built from scratch
(``pretrained=False``, no ``weights``) is a small convolutional network with torchvision's
classifier attribute (``fc``): a program that trains it from scratch runs, faster."""

import torch.nn as nn


def _unavailable(*args, **kwargs):
    raise RuntimeError("fresh-sweep stub: torchvision models are not available (no downloads)")


class _Small(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


def _scratch(pretrained=False, weights=None, num_classes=1000, **kwargs):
    if pretrained or weights is not None:
        _unavailable()
    return _Small(num_classes)


class ResNet(nn.Module):
    """torchvision's class, for the programs that import it without building one."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        _unavailable()


resnet18 = resnet34 = resnet50 = _scratch
vgg16 = alexnet = densenet121 = inception_v3 = _unavailable
from . import inception  # noqa: E402,F401  (torchvision.models.inception, as the package imports it)
