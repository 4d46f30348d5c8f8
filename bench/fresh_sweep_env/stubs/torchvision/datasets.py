"""Synthetic stand-ins for the torchvision data sets: images are float tensors (C, H, W) in [0, 1]
with a label-dependent pattern (so a model can learn), fixed by the data set's name and split."""

import os
import sys
import types
import zlib

import torch

SHAPES = {"MNIST": (1, 28, 28, 10), "FashionMNIST": (1, 28, 28, 10), "KMNIST": (1, 28, 28, 10),
          "EMNIST": (1, 28, 28, 26), "QMNIST": (1, 28, 28, 10), "CIFAR10": (3, 32, 32, 10),
          "CIFAR100": (3, 32, 32, 100), "SVHN": (3, 32, 32, 10), "STL10": (3, 32, 32, 10),
          "ImageFolder": (3, 32, 32, 2), "CelebA": (3, 32, 32, 2), "FakeData": (3, 32, 32, 10),
          "LSUN": (3, 32, 32, 2), "OxfordIIITPet": (3, 32, 32, 37), "Omniglot": (1, 105, 105, 964),
          "ImageNet": (3, 32, 32, 1000)}


def _count(train):
    n = int(os.environ.get("FRESH_SWEEP_SAMPLES", "256"))
    return n if train else max(n // 4, 16)


class VisionDataset(torch.utils.data.Dataset):
    _name = "FakeData"

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False,
                 split=None, size=None, image_size=None, num_classes=None, loader=None, **kwargs):
        if split is not None:
            train = split in ("train", "train+unlabeled", "unlabeled", "extra")
        c, h, w, classes = SHAPES[self._name]
        if image_size is not None:
            c, h, w = image_size
        classes = num_classes or classes
        n = size or _count(train)
        g = torch.Generator().manual_seed(zlib.crc32(f"{self._name}:{train}".encode()))
        self.targets = torch.randint(0, classes, (n,), generator=g)
        base = torch.rand(classes, c, h, w, generator=g)
        noise = torch.rand(n, c, h, w, generator=g)
        self._images = (0.6 * base[self.targets] + 0.4 * noise).clamp(0, 1)
        self.data = (self._images * 255).to(torch.uint8).squeeze(1) if c == 1 else \
            (self._images * 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()
        if self._name == "SVHN":
            self.labels = self.targets.numpy()
        if self._name in ("CIFAR10", "CIFAR100"):  # torchvision's CIFAR targets are a list of ints (MNIST's a tensor)
            self.targets = self.targets.tolist()
        self.train_data = self.test_data = self.data  # the names of torchvision < 0.2.2
        self.train_labels = self.test_labels = self.targets
        self.classes = [str(i) for i in range(classes)]
        self.class_to_idx = {k: i for i, k in enumerate(self.classes)}
        self.samples = self.imgs = [(f"{i}.png", int(t)) for i, t in enumerate(self.targets)]
        self.loader = loader or self._load  # ImageFolder's: a sample's path to its picture
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform

    def _load(self, path):
        """`self.samples[i][0]` -> the i-th image as the stand-in PIL's picture (H, W, C uint8)."""
        from fresh_stubs import Picture
        image = (self._images[int(os.path.basename(str(path)).split(".")[0])] * 255).to(torch.uint8)
        return Picture(image.permute(1, 2, 0).numpy())

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image, target = self._images[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


def _make(name):
    return type(name, (VisionDataset,), {"_name": name})


for _name in SHAPES:
    globals()[_name] = _make(_name)


class ImageFolder(globals()["ImageFolder"]):
    """torchvision's positional order: (root, transform, target_transform, loader, is_valid_file)."""

    def __init__(self, root, transform=None, target_transform=None, loader=None, is_valid_file=None, **kwargs):
        folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) if os.path.isdir(root) else []
        if folders and "num_classes" not in kwargs:  # a folder the manifest made: as many classes as its folders
            kwargs["num_classes"] = len(folders)
        super().__init__(root, transform=transform, target_transform=target_transform, loader=loader, **kwargs)
        files = [os.path.join(root, d, f) for d in folders for f in sorted(os.listdir(os.path.join(root, d)))
                 if os.path.isfile(os.path.join(root, d, f))]
        if files:  # the folder's own files name the samples (a program opens `imgs[i][0]` itself), in turn
            self.samples = self.imgs = [(files[i % len(files)], target) for i, (_, target) in enumerate(self.samples)]
            self._index = {path: i for i, (path, _) in enumerate(self.samples)}

    def _load(self, path):
        """A sample's path (a file of the folder) -> the picture of that sample's index."""
        index = getattr(self, "_index", {}).get(str(path))
        return super()._load(f"{index}.png" if index is not None else path)


DatasetFolder = ImageFolder


class EMNIST(globals()["EMNIST"]):
    """torchvision's (root, split, ...): `split` names the letters' subset ('balanced', 'digits'), not train/test."""

    def __init__(self, root, split="balanced", **kwargs):
        super().__init__(root, **kwargs)

def _no_download(*args, **kwargs):
    raise RuntimeError("fresh-sweep stub: no downloads here")


def _iterable_to_str(iterable):
    return "'" + "', '".join(str(item) for item in iterable) + "'"


def _verify_str_arg(value, arg=None, valid_values=None, custom_msg=None):
    if valid_values is not None and value not in valid_values:
        raise ValueError(custom_msg or f"Unknown value '{value}' for argument {arg}. "
                         f"Valid values are {{{_iterable_to_str(valid_values)}}}.")
    return value


# torchvision.datasets.utils: the helpers data set classes of a project import (downloads refused)
utils = types.ModuleType(__name__ + ".utils")
utils.download_url = utils.download_file_from_google_drive = utils.download_and_extract_archive = _no_download
utils.extract_archive = _no_download
utils.check_integrity = lambda fpath, md5=None: os.path.isfile(fpath)
utils.verify_str_arg, utils.iterable_to_str = _verify_str_arg, _iterable_to_str
sys.modules[utils.__name__] = utils


def default_loader(path):
    """`torchvision.datasets.folder.default_loader`: a picture file as the stand-in PIL's image
    (the synthetic data sets never read files; a project's own folder data set may import it)."""
    from PIL import Image
    return Image.open(path).convert("RGB")

# torchvision's submodules of its data sets (`from torchvision.datasets.mnist import MNIST`): this module
for _sub in ("mnist", "cifar", "folder", "svhn", "stl10", "celeba", "lsun", "fakedata", "vision"):
    sys.modules[f"{__name__}.{_sub}"] = sys.modules[__name__]
