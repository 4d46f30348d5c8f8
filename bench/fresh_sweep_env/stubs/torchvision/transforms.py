"""Tensor-only transforms: the stub data sets yield float tensors (C, H, W) in [0, 1]."""

import sys
import types

import numpy as np
import torch
import torch.nn.functional as F


class _T:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def __call__(self, x):
        return x


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor(_T):
    def __call__(self, x):
        if torch.is_tensor(x):
            return x
        if hasattr(x, "__array__"):  # a numpy array, or the stand-in PIL's image of one
            x = np.asarray(x)
        if hasattr(x, "ndim") and x.ndim in (2, 3):  # a numpy image (H, W[, C]), as the real one takes it
            scale = 255.0 if str(getattr(x, "dtype", "")) == "uint8" else 1.0
            x = torch.as_tensor(x.copy(), dtype=torch.float32) / scale
            return x.unsqueeze(0) if x.dim() == 2 else x.permute(2, 0, 1).contiguous()
        return torch.as_tensor(x, dtype=torch.float32)


class Normalize:
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std = mean, std

    def __call__(self, x):  # per channel, as torchvision < 0.3 zipped them: extra values unused
        mean = torch.as_tensor(self.mean, dtype=x.dtype).view(-1)[:x.shape[0]].view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=x.dtype).view(-1)[:x.shape[0]].view(-1, 1, 1)
        return (x - mean) / std


def _tensor(x):
    """A (C, H, W) tensor of a tensor, a numpy image or the stand-in PIL's image (a transform
    before ToTensor, as the real ones take PIL images)."""
    return x if torch.is_tensor(x) else ToTensor()(x)


def _size(size):
    return (size, size) if isinstance(size, int) else tuple(size)


class Resize:
    def __init__(self, size, *args, **kwargs):
        self.size = size

    def __call__(self, x):
        x = _tensor(x)
        h, w = x.shape[-2:]
        if isinstance(self.size, int):  # the shorter side
            size = (self.size, round(w * self.size / h)) if h <= w else (round(h * self.size / w), self.size)
        else:
            size = tuple(self.size)
        lead = x.shape[:-2]  # (C,) or a batch's (N, C): the real one takes [..., H, W]
        out = F.interpolate(x.reshape(1, -1, h, w), size=size, mode="bilinear", align_corners=False)
        return out.reshape(*lead, *size)


Scale = Resize


class CenterCrop:
    def __init__(self, size):
        self.size = _size(size)

    def __call__(self, x):
        x = _tensor(x)
        h, w = x.shape[-2:]
        th, tw = self.size
        if th > h or tw > w:
            x = Resize((max(th, h), max(tw, w)))(x)
            h, w = x.shape[-2:]
        top, left = (h - th) // 2, (w - tw) // 2
        return x[..., top:top + th, left:left + tw]


class RandomCrop(CenterCrop):
    def __init__(self, size, padding=None, *args, **kwargs):
        super().__init__(size)
        self.padding = padding or 0

    def __call__(self, x):
        x = _tensor(x)
        if self.padding:
            x = F.pad(x, (self.padding,) * 4)
        return super().__call__(x)


class RandomResizedCrop(Resize):
    def __init__(self, size, *args, **kwargs):
        super().__init__(_size(size))


class RandomHorizontalFlip(torch.nn.Module):
    """The random augmentations, identities here; modules, as torchvision's are (a program may
    hand them to `RandomApply(torch.nn.ModuleList([...]))`)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.args, self.kwargs = args, kwargs

    def forward(self, x):
        return x


RandomVerticalFlip = RandomRotation = ColorJitter = RandomAffine = RandomErasing = RandomHorizontalFlip
AutoAugment = RandAugment = RandomGrayscale = GaussianBlur = RandomApply = RandomPerspective = RandomHorizontalFlip
ElasticTransform = RandomAdjustSharpness = RandomSolarize = RandomEqualize = RandomHorizontalFlip


class InterpolationMode:
    """torchvision's names of the resampling filters (the stand-in resizes bilinearly whatever is named)."""
    NEAREST, NEAREST_EXACT, BILINEAR, BICUBIC, BOX, HAMMING, LANCZOS = (
        "nearest", "nearest-exact", "bilinear", "bicubic", "box", "hamming", "lanczos")


class ToPILImage(_T):
    """The stand-in PIL's picture of a tensor or numpy image (`.save(path)` is a recorded write)."""

    def __call__(self, x):
        return _to_pil_image(x)


class Grayscale:
    def __init__(self, num_output_channels=1):
        self.n = num_output_channels

    def __call__(self, x):
        x = _tensor(x)
        return x.mean(0, keepdim=True).expand(self.n, *x.shape[1:]).clone()


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class Pad:
    def __init__(self, padding, fill=0, *args, **kwargs):
        self.padding = padding if isinstance(padding, (tuple, list)) else (padding,) * 4

    def __call__(self, x):
        x = _tensor(x)
        return F.pad(x, tuple(self.padding) * (2 if len(self.padding) == 2 else 1), value=0.0)


def _to_pil_image(x, mode=None):
    from fresh_stubs import Picture
    x = _tensor(x)
    return Picture((x.clamp(0, 1) * 255).to(torch.uint8).permute(1, 2, 0).numpy())


functional = types.ModuleType(__name__ + ".functional")  # `import torchvision.transforms.functional as FT`
functional.to_tensor, functional.to_pil_image = _tensor, _to_pil_image
functional.rotate = lambda img, angle, *args, **kwargs: _tensor(img)  # importable (DomainBed's RotatedMNIST); the angle is not applied
functional.InterpolationMode = InterpolationMode  # where torchvision defines it (`from torchvision.transforms.functional import InterpolationMode`)
functional.resize = lambda img, size, *args, **kwargs: Resize(size)(img)  # a tensor's [..., H, W], bilinearly
functional.normalize = lambda tensor, mean, std, inplace=False: Normalize(mean, std)(tensor)  # per channel of (C, H, W)
functional.adjust_gamma = lambda img, gamma, gain=1: (gain * _tensor(img).clamp(0, 1) ** gamma).clamp(0, 1)  # as a tensor in [0, 1]


def _pad(img, padding, fill=0, padding_mode="constant"):
    """functional.pad: torchvision's (left, top, right, bottom), (left/right, top/bottom) or one for all sides."""
    p = [padding] * 4 if isinstance(padding, int) else list(padding) * (2 if len(padding) == 2 else 1)
    return F.pad(_tensor(img), (p[0], p[2], p[1], p[3]), value=float(fill))


def _crop(img, top, left, height, width):
    """functional.crop: [..., top:top+height, left:left+width], zeros where the box leaves the picture (as torchvision)."""
    x = _tensor(img)
    h, w = x.shape[-2:]
    x = F.pad(x, (max(0, -left), max(0, left + width - w), max(0, -top), max(0, top + height - h)))
    top, left = max(0, top), max(0, left)
    return x[..., top:top + height, left:left + width]


functional.pad, functional.crop = _pad, _crop
sys.modules[functional.__name__] = functional
transforms = sys.modules[__name__]  # `from torchvision.transforms import transforms` (the real submodule)


class ToImage(_T):
    """v2's: a tensor image as it is; a numpy (H, W[, C]) image as (C, H, W), its dtype kept."""

    def __call__(self, x):
        if torch.is_tensor(x):
            return x
        x = torch.as_tensor(np.asarray(x).copy())
        return x.unsqueeze(0) if x.dim() == 2 else x.permute(2, 0, 1).contiguous()


PILToTensor = ToImage  # a picture as a (C, H, W) tensor of its own dtype (uint8), unscaled


class ToDtype:
    def __init__(self, dtype, scale=False):
        self.dtype, self.scale = dtype, scale

    def __call__(self, x):
        scaled = self.scale and not x.is_floating_point() and self.dtype.is_floating_point
        return x.to(self.dtype) / 255.0 if scaled else x.to(self.dtype)


v2 = types.ModuleType(__name__ + ".v2")  # `from torchvision.transforms.v2 import Compose, ToImage, ...`
v2.__dict__.update({k: v for k, v in globals().items() if isinstance(v, type) and not k.startswith("_")})
sys.modules[v2.__name__] = v2
