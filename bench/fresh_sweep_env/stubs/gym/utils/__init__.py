"""gym.utils: `seeding` (a program's own environment seeds its generator: `seeding.np_random(seed)`)."""
