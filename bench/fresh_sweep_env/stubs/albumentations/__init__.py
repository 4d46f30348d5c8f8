"""Stand-in for albumentations (not installed here): ``Compose([...])(image=a)["image"]`` over HWC
pictures (uint8 or floats). Normalize, the pads, crops, flips and CoarseDropout act on the array as
albumentations does (their random draws from ``random``); the other transforms (colour, affine) leave
the picture as it is. A CHW array (the torchvision stand-in's tensors, turned into numpy) is taken as
HWC first, so a data set that hands the stand-in's pictures to albumentations still trains."""
import random

import numpy as np


def _hwc(image):
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
        image = image.transpose(1, 2, 0)
    if image.ndim == 2:
        image = image[:, :, None]
    return image


class BasicTransform:
    """A transform applied with probability p (``always_apply`` forces it); identity by default."""

    def __init__(self, *args, p=1.0, always_apply=False, **kwargs):
        self.p = 1.0 if always_apply else p
        self.args, self.kwargs = args, kwargs

    def apply(self, image):
        return image

    def __call__(self, *args, image=None, force_apply=False, **targets):
        if force_apply or random.random() < self.p:
            image = self.apply(_hwc(image))
        return {"image": image, **targets}


class Normalize(BasicTransform):
    def __init__(self, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), max_pixel_value=255.0, **kwargs):
        super().__init__(**kwargs)
        self.mean, self.std, self.max_pixel_value = np.asarray(mean), np.asarray(std), max_pixel_value

    def apply(self, image):
        scale = self.max_pixel_value if image.dtype == np.uint8 or image.max() > 1.0 else 1.0
        return ((image.astype(np.float32) / scale - self.mean) / self.std).astype(np.float32)


class PadIfNeeded(BasicTransform):
    def __init__(self, min_height=1024, min_width=1024, *args, **kwargs):
        super().__init__(**kwargs)
        self.min_height, self.min_width = min_height, min_width

    def apply(self, image):
        dh, dw = max(self.min_height - image.shape[0], 0), max(self.min_width - image.shape[1], 0)
        return np.pad(image, ((dh // 2, dh - dh // 2), (dw // 2, dw - dw // 2), (0, 0)))


class RandomCrop(BasicTransform):
    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def _origin(self, image):
        return random.randint(0, image.shape[0] - self.height), random.randint(0, image.shape[1] - self.width)

    def apply(self, image):
        top, left = self._origin(image)
        return image[top:top + self.height, left:left + self.width]


class CenterCrop(RandomCrop):
    def _origin(self, image):
        return (image.shape[0] - self.height) // 2, (image.shape[1] - self.width) // 2


class HorizontalFlip(BasicTransform):
    def apply(self, image):
        return image[:, ::-1].copy()


class VerticalFlip(BasicTransform):
    def apply(self, image):
        return image[::-1].copy()


class CoarseDropout(BasicTransform):
    """One to max_holes boxes of max_height x max_width set to fill_value, each inside the picture (as
    albumentations draws a hole's corner: from 0 to the side less the hole's)."""

    def __init__(self, max_holes=8, max_height=8, max_width=8, min_holes=None, min_height=None, min_width=None,
                 fill_value=0, **kwargs):
        kwargs.pop("mask_fill_value", None)
        super().__init__(**kwargs)
        self.holes = (min_holes or max_holes, max_holes)
        self.height, self.width, self.fill = max_height, max_width, np.asarray(fill_value)

    def apply(self, image):
        image = image.copy()
        for _ in range(random.randint(*self.holes)):
            top = random.randint(0, max(image.shape[0] - self.height, 0))
            left = random.randint(0, max(image.shape[1] - self.width, 0))
            image[top:top + self.height, left:left + self.width] = self.fill.astype(image.dtype)
        return image


class Cutout(CoarseDropout):
    """The older name and arguments (num_holes boxes of max_h_size x max_w_size)."""

    def __init__(self, num_holes=8, max_h_size=8, max_w_size=8, fill_value=0, **kwargs):
        super().__init__(max_holes=num_holes, max_height=max_h_size, max_width=max_w_size, fill_value=fill_value,
                         **kwargs)


class Compose:
    def __init__(self, transforms, *args, **kwargs):
        self.transforms = [t for t in transforms if t is not None]

    def __call__(self, *args, image=None, **targets):
        data = {"image": image, **targets}
        for t in self.transforms:
            data = t(**data)
        return data


OneOf = Sequential = Compose

# the transforms a star import reaches (`from albumentations import *` does not call the module's
# __getattr__): the picture as it is
for _name in ("ShiftScaleRotate", "Rotate", "RandomRotate90", "Affine", "RandomBrightnessContrast", "ColorJitter",
              "HueSaturationValue", "RGBShift", "GaussNoise", "GaussianBlur", "Blur", "ToGray", "Sharpen",
              "RandomResizedCrop", "Resize", "Transpose", "Downscale", "Perspective", "GridDistortion",
              "ElasticTransform", "CLAHE", "RandomGamma", "ChannelShuffle", "InvertImg", "Equalize"):
    globals().setdefault(_name, type(_name, (BasicTransform,), {}))


def __getattr__(name):
    """Any other transform (ShiftScaleRotate, RandomBrightnessContrast, ColorJitter, ...): the picture
    as it is."""
    if name[:1].isupper():
        return type(name, (BasicTransform,), {})
    raise AttributeError(name)
