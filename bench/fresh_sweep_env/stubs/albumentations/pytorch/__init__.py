"""albumentations.pytorch: ToTensorV2, an HWC array as a CHW tensor; ToTensor, the older one (before 1.0),
as a CHW float tensor, uint8 pictures scaled to [0, 1], normalized where given."""
import numpy as np
import torch

from albumentations import BasicTransform, _hwc


class ToTensorV2(BasicTransform):
    def __init__(self, transpose_mask=False, **kwargs):
        super().__init__(**kwargs)
        self.p = 1.0

    def apply(self, image):
        return torch.from_numpy(np.ascontiguousarray(_hwc(image).transpose(2, 0, 1)))


class ToTensor(BasicTransform):
    def __init__(self, num_classes=1, sigmoid=True, normalize=None, **kwargs):
        super().__init__(**kwargs)
        self.p = 1.0
        self.normalize = normalize

    def apply(self, image):
        image = _hwc(image)
        scaled = image / (255.0 if image.dtype == np.uint8 else 1.0)
        tensor = torch.from_numpy(np.ascontiguousarray(np.moveaxis(scaled, -1, 0)).astype(np.float32))
        if self.normalize is not None:
            mean = torch.tensor(self.normalize["mean"], dtype=torch.float32).view(-1, 1, 1)
            std = torch.tensor(self.normalize["std"], dtype=torch.float32).view(-1, 1, 1)
            tensor = (tensor - mean) / std
        return tensor


transforms = __import__("types").SimpleNamespace(ToTensorV2=ToTensorV2, ToTensor=ToTensor)
