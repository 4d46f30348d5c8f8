"""gym.utils.seeding: `np_random(seed)` -> (a numpy generator, the seed), as gym gives a program's own
environment (`self.np_random, seed = seeding.np_random(seed)`); a seed of None draws one."""

import numpy as np


def np_random(seed=None):
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2 ** 32))
    return np.random.RandomState(seed), seed
