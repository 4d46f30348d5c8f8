"""gym.spaces for the stand-in: Box and Discrete with `shape`, `high`/`low`, `n`, `seed()` and `sample()`."""

import numpy as np


class Space:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.np_random = np.random.RandomState()

    def seed(self, seed=None):
        self.np_random = np.random.RandomState(seed)
        return [seed]


class Box(Space):
    def __init__(self, low, high, shape=None, dtype=np.float32):
        shape = shape if shape is not None else np.shape(low)
        super().__init__(shape, dtype)
        self.low = np.full(self.shape, low, dtype=dtype)
        self.high = np.full(self.shape, high, dtype=dtype)

    def sample(self):
        low = np.where(np.isfinite(self.low), self.low, -1.0)
        high = np.where(np.isfinite(self.high), self.high, 1.0)
        return self.np_random.uniform(low, high).astype(self.dtype)


class Discrete(Space):
    def __init__(self, n):
        super().__init__((), np.int64)
        self.n = n

    def sample(self):
        return int(self.np_random.randint(self.n))
