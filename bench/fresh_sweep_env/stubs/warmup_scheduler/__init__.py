"""A stand-in for ildoonet's warmup_scheduler package (not installed here): ``GradualWarmupScheduler``
raises the learning rate over ``total_epoch`` steps (from 0 where ``multiplier`` is 1, else from the
base rate to ``multiplier`` times it), then hands each step to ``after_scheduler``, started from the
warmed-up rates."""

from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau


class GradualWarmupScheduler(LRScheduler):
    def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
        if multiplier < 1.0:
            raise ValueError("multiplier should be greater than or equal to 1.")
        self.multiplier = multiplier
        self.total_epoch = total_epoch
        self.after_scheduler = after_scheduler
        self.finished = False
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch > self.total_epoch:
            if self.after_scheduler is not None:
                if not self.finished:
                    self.after_scheduler.base_lrs = [lr * self.multiplier for lr in self.base_lrs]
                    self.finished = True
                return self.after_scheduler.get_last_lr()
            return [lr * self.multiplier for lr in self.base_lrs]
        if self.multiplier == 1.0:
            return [lr * self.last_epoch / self.total_epoch for lr in self.base_lrs]
        return [lr * ((self.multiplier - 1.0) * self.last_epoch / self.total_epoch + 1.0) for lr in self.base_lrs]

    def step(self, epoch=None, metrics=None):
        if isinstance(self.after_scheduler, ReduceLROnPlateau):
            raise NotImplementedError("fresh-sweep stand-in: no ReduceLROnPlateau after the warm-up")
        if self.finished and self.after_scheduler is not None:
            self.after_scheduler.step()
            self._last_lr = self.after_scheduler.get_last_lr()
            self.last_epoch += 1
            return None
        return super().step()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "after_scheduler")}
        if self.after_scheduler is not None:
            state["after_scheduler"] = self.after_scheduler.state_dict()
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        after = state.pop("after_scheduler", None)
        self.__dict__.update(state)
        if after is not None and self.after_scheduler is not None:
            self.after_scheduler.load_state_dict(after)
