"""A stand-in for torchnet (not installed here): its meters (`torchnet.meter`), as a trainer keeps them."""

from torchnet import meter  # noqa: F401
