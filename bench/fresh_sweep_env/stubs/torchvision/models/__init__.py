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


class _SmallVGG(_Small):
    """A VGG built from scratch: the small network with torchvision's VGG classifier (``classifier[6]``
    the last Linear, which programs replace to change the number of classes)."""

    def __init__(self, num_classes=1000):
        super().__init__(num_classes)
        del self.fc
        self.classifier = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Dropout(), nn.Linear(32, 32), nn.ReLU(),
                                        nn.Dropout(), nn.Linear(32, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def _scratch_vgg(pretrained=False, weights=None, num_classes=1000, **kwargs):
    if pretrained or weights is not None:
        _unavailable()
    return _SmallVGG(num_classes)


resnet18 = resnet34 = resnet50 = resnet101 = resnet152 = _scratch
vgg11_bn = vgg13_bn = vgg16_bn = vgg19_bn = _scratch_vgg
vgg16 = alexnet = densenet121 = densenet169 = densenet201 = inception_v3 = _unavailable
squeezenet1_0 = squeezenet1_1 = _unavailable
from . import inception  # noqa: E402,F401  (torchvision.models.inception, as the package imports it)
