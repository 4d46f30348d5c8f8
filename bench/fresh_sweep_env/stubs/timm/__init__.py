"""A stand-in for timm (not installed here): ``create_model(name)`` builds the torchvision
stand-in's model of the same family from scratch (a ResNet for ``resnet50``, ``swsl_resnet50``,
``tv_resnet34``, ...: the weights' source prefix dropped), with its ``num_classes`` outputs; asking
for pretrained weights fails, as the torchvision stand-in's does (no downloads)."""

import torchvision.models as _models

_SOURCES = ("swsl_", "ssl_", "tv_", "gluon_", "tv2_")


def create_model(model_name, pretrained=False, num_classes=1000, **kwargs):
    name = model_name.split(".")[0]
    for prefix in _SOURCES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    build = getattr(_models, name, None)
    if build is None:
        raise RuntimeError(f"fresh-sweep stub: timm model {model_name!r} has no stand-in")
    return build(pretrained=pretrained, num_classes=num_classes)


def list_models(*args, **kwargs):
    return []
