"""albumentations.pytorch.transforms: where ToTensorV2 (and the older ToTensor) are also found."""
from albumentations.pytorch import ToTensor, ToTensorV2

__all__ = ["ToTensor", "ToTensorV2"]
