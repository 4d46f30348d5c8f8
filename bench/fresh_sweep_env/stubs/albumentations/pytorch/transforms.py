"""albumentations.pytorch.transforms: where ToTensorV2 is also found."""
from albumentations.pytorch import ToTensorV2

__all__ = ["ToTensorV2"]
