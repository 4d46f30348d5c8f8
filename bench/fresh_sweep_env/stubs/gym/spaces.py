"""gym.spaces for the stand-in: Box and Discrete with `shape`, `high`/`low`, `n`, `seed()`, `sample()` and `contains()`."""

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

    def contains(self, x):  # an environment's `assert self.action_space.contains(action)`
        x = np.asarray(x)
        return x.shape == self.shape and bool(np.all(x >= self.low) and np.all(x <= self.high))


class Discrete(Space):
    def __init__(self, n):
        super().__init__((), np.int64)
        self.n = n

    def sample(self):
        return int(self.np_random.randint(self.n))

    def contains(self, x):  # an integer (python's or numpy's, or a 0-d array of one) in [0, n)
        x = np.asarray(x)
        return x.shape == () and np.issubdtype(x.dtype, np.integer) and 0 <= int(x) < self.n
