"""``albumentations.augmentations``: the transforms by their module paths
(``augmentations.crops.transforms.RandomResizedCrop``, ``augmentations.dropout.coarse_dropout.CoarseDropout``)
are the stand-in's transforms of the same names, read as attributes or imported
(``from albumentations.augmentations.geometric.transforms import PadIfNeeded``: every module below
this one is made on import)."""
import importlib.abc
import importlib.machinery
import sys
import types

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


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``albumentations.augmentations.<any>.<path>``: a package whose attributes are the
    transforms (capitalised names) and deeper paths."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = __getattr__
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(finder, _Submodules) for finder in sys.meta_path):
    sys.meta_path.append(_Submodules())
