"""torchnet.meter's meters as a trainer uses them: `ClassErrorMeter(topk, accuracy)` adds a batch's
scores and labels and gives the top-k accuracies (or errors) in percent; `AverageValueMeter` the
mean and standard deviation of the values added."""

import numpy as np
import torch


class ClassErrorMeter:
    def __init__(self, topk=(1,), accuracy=False):
        self.topk = sorted(topk)
        self.accuracy = accuracy
        self.reset()

    def reset(self):
        self.sum = {k: 0 for k in self.topk}
        self.n = 0

    def add(self, output, target):
        output = torch.as_tensor(output).reshape(len(target), -1) if torch.is_tensor(output) else torch.as_tensor(np.asarray(output))
        target = torch.as_tensor(target).reshape(-1)
        pred = output.topk(max(self.topk), dim=1).indices
        correct = pred == target[:, None]
        for k in self.topk:
            self.sum[k] += int(target.numel() - correct[:, :k].any(dim=1).sum())
        self.n += int(target.numel())

    def value(self, k=-1):
        if k != -1:
            error = float(self.sum[k]) / self.n * 100.0
            return 100.0 - error if self.accuracy else error
        return [self.value(k) for k in self.topk]


class AverageValueMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.values = []

    def add(self, value, n=1):
        self.values.extend([float(value)] * n)

    def value(self):
        if not self.values:
            return float("nan"), float("nan")
        return float(np.mean(self.values)), float(np.std(self.values))
