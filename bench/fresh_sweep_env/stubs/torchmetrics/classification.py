"""``torchmetrics.classification.MulticlassAccuracy``: the share of right predictions per class,
averaged over the classes seen (``average="macro"``, the default) or over the samples ("micro")."""

import torch


from torchmetrics import Metric


class MulticlassAccuracy(Metric):
    def __init__(self, num_classes, average="macro", **kwargs):
        super().__init__()
        self.num_classes, self.average = num_classes, average
        self.add_state("correct", default=torch.zeros(num_classes), dist_reduce_fx="sum")
        self.add_state("support", default=torch.zeros(num_classes), dist_reduce_fx="sum")

    def update(self, preds, target):
        pred = preds.argmax(dim=1) if preds.dim() > 1 else preds
        target = target.long().view(-1)
        hit = (pred.view(-1) == target).float()
        self.correct = self.correct + torch.zeros(self.num_classes, device=hit.device).index_add_(0, target, hit)
        self.support = self.support + torch.bincount(target, minlength=self.num_classes).float()

    def compute(self):
        if self.average == "micro":
            return self.correct.sum() / self.support.sum().clamp(min=1)
        seen = self.support > 0
        return (self.correct[seen] / self.support[seen]).mean() if seen.any() else torch.tensor(0.0)
