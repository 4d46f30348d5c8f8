"""``albumentations.augmentations``: the transforms by their module paths
(``augmentations.crops.transforms.RandomResizedCrop``, ``augmentations.dropout.coarse_dropout.CoarseDropout``)
are the stand-in's transforms of the same names."""
import albumentations


class _Path:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(albumentations, name) if name[:1].isupper() else _Path()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(albumentations, name) if name[:1].isupper() else _Path()
