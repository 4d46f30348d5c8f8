"""No pretrained weights here (downloads): asking for them fails. A model built from scratch
(``pretrained=False``, no ``weights``) is a small convolutional network with torchvision's
classifier attribute (``fc``; a ResNet's stages too: ``conv1`` ... ``layer4``, ``avgpool``, with
torchvision's widths at the end): a program that trains it from scratch runs, faster."""

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


class _SmallResNet(nn.Module):
    """A ResNet built from scratch: torchvision's stage names (programs take `conv1` ... `layer4`
    apart to build a backbone) with torchvision's 64-channel stem (programs replace `conv1` by a
    3x3 convolution of the same width for small pictures, keeping `bn1`) and 16-channel stages, the
    last widened to torchvision's `fc.in_features` (512, or 2048 for ResNet-50 and deeper)."""

    def __init__(self, num_classes=1000, width=512):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64)
        self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(nn.Conv2d(64, 16, 3, 1, 1), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        self.layer3 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        self.layer4 = nn.Sequential(nn.Conv2d(16, width, 1), nn.ReLU())
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(width, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def _scratch_resnet(width):
    def build(pretrained=False, weights=None, num_classes=1000, **kwargs):
        if pretrained or weights is not None:
            _unavailable()
        return _SmallResNet(num_classes, width)
    return build


class BasicBlock(nn.Module):
    """torchvision's block classes, named to ``ResNet(block, layers)``; the stand-in's stages are its own."""

    expansion = 1


class Bottleneck(BasicBlock):
    expansion = 4


class ResNet(_SmallResNet):
    """torchvision's class built as it is (``ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)``, a
    subclass's ``super().__init__(...)`` that then replaces ``conv1`` for one-channel pictures): the
    small ResNet with the width the block gives ``fc`` (512 for BasicBlock, 2048 for Bottleneck)."""

    _norm_layer = nn.BatchNorm2d  # a subclass's `self._norm_layer(64)` for its new stem, as torchvision's sets it

    def __init__(self, block=BasicBlock, layers=(2, 2, 2, 2), num_classes=1000, **kwargs):
        super().__init__(num_classes, 512 * block.expansion)


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


class _SmallDenseNet(_Small):
    """A DenseNet built from scratch: the small network with torchvision's DenseNet classifier
    attribute (``classifier``, one Linear with ``in_features``, which programs replace)."""

    def __init__(self, num_classes=1000):
        super().__init__(num_classes)
        del self.fc
        self.classifier = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x))


def _scratch_densenet(pretrained=False, weights=None, num_classes=1000, **kwargs):
    if pretrained or weights is not None:
        _unavailable()
    return _SmallDenseNet(num_classes)


def _scratch_vgg(pretrained=False, weights=None, num_classes=1000, **kwargs):
    if pretrained or weights is not None:
        _unavailable()
    return _SmallVGG(num_classes)


class _SmallEfficientNet(nn.Module):
    """An EfficientNet built from scratch: torchvision's attributes (`features`, `avgpool`,
    `classifier` = Dropout + Linear) with its feature width at the end (1280 for B0 and B1, 1408 for
    B2), which programs name when they replace the classifier head."""

    def __init__(self, num_classes=1000, width=1280):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU(), nn.AdaptiveAvgPool2d(4),
                                      nn.Conv2d(32, width, 1), nn.SiLU())
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2, inplace=True), nn.Linear(width, num_classes))

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


def _scratch_efficientnet(width):
    def build(pretrained=False, weights=None, num_classes=1000, **kwargs):
        if pretrained or weights is not None:
            _unavailable()
        return _SmallEfficientNet(num_classes, width)
    return build


class _WeightsEnum:
    """A weights enum (`EfficientNet_B0_Weights.DEFAULT`): the value exists, so that a program can
    ask it for its `transforms()` (resize, crop, normalise as torchvision's preset does); building
    a model with it fails (no downloads)."""

    def __init__(self, crop, resize):
        self.crop, self.resize = crop, resize

    def transforms(self):
        from torchvision import transforms as T
        return T.Compose([T.Resize(self.resize), T.CenterCrop(self.crop), T.ToTensor(),
                          T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])


def _weights(crop, resize):
    return type("Weights", (), {"DEFAULT": _WeightsEnum(crop, resize), "IMAGENET1K_V1": _WeightsEnum(crop, resize)})


resnet18 = resnet34 = _scratch_resnet(512)
resnet50 = resnet101 = resnet152 = wide_resnet50_2 = wide_resnet101_2 = _scratch_resnet(2048)
vgg11_bn = vgg13_bn = vgg16_bn = vgg19_bn = _scratch_vgg
densenet121 = densenet161 = densenet169 = densenet201 = _scratch_densenet
DenseNet = _SmallDenseNet  # the class programs name in annotations
efficientnet_b0 = efficientnet_b1 = _scratch_efficientnet(1280)
efficientnet_b2 = _scratch_efficientnet(1408)
EfficientNet_B0_Weights, EfficientNet_B1_Weights = _weights(224, 256), _weights(240, 255)
EfficientNet_B2_Weights = _weights(288, 288)
ResNet18_Weights = ResNet34_Weights = ResNet50_Weights = ResNet101_Weights = ResNet152_Weights = _weights(224, 256)
vgg16 = alexnet = inception_v3 = _unavailable
squeezenet1_0 = squeezenet1_1 = _unavailable
from . import inception  # noqa: E402,F401  (torchvision.models.inception, as the package imports it)
from . import resnet  # noqa: E402,F401  (torchvision.models.resnet: `models.resnet.ResNet` after `from torchvision import models`)
