"""A stand-in for ``torchmetrics`` (not installed here): the ``Metric`` base a program subclasses
(``add_state``, ``update``/``compute``/``reset``, and ``forward``, which computes the batch's value
with gradients enabled and adds the batch's states to the accumulated ones, as torchmetrics does
for states reduced by ``"sum"``), and ``MulticlassAccuracy`` (macro average, torchmetrics' default)."""

import torch
from torch import nn


class Metric(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        object.__setattr__(self, "_defaults", {})
        object.__setattr__(self, "_reductions", {})

    def add_state(self, name, default, dist_reduce_fx=None, persistent=False):
        self._defaults[name] = default.detach().clone() if torch.is_tensor(default) else list(default)
        self._reductions[name] = dist_reduce_fx
        setattr(self, name, self._defaults[name].clone() if torch.is_tensor(default) else [])

    def reset(self):
        for name, default in self._defaults.items():
            setattr(self, name, default.clone() if torch.is_tensor(default) else [])

    def forward(self, *args, **kwargs):
        accumulated = {name: getattr(self, name) for name in self._defaults}
        self.reset()
        self.update(*args, **kwargs)
        value = self.compute()
        for name, before in accumulated.items():
            batch = getattr(self, name)
            if self._reductions[name] == "sum":
                setattr(self, name, before + batch.detach())
            elif self._reductions[name] == "cat":
                setattr(self, name, list(before) + list(batch))
            else:
                setattr(self, name, batch)
        return value

    def update(self, *args, **kwargs):
        raise NotImplementedError

    def compute(self):
        raise NotImplementedError


from torchmetrics.classification import MulticlassAccuracy  # noqa: E402,F401  (re-exported; it subclasses Metric)
