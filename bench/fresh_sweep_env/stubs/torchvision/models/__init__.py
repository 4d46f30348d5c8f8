"""No pretrained models here (downloads): building one fails; importing the module works."""


def _unavailable(*args, **kwargs):
    raise RuntimeError("fresh-sweep stub: torchvision models are not available (no downloads)")


resnet18 = resnet34 = resnet50 = vgg16 = alexnet = densenet121 = inception_v3 = _unavailable
