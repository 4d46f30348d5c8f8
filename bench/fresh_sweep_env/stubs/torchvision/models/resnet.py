from . import BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50  # noqa: F401
