"""A stand-in for OpenAI gym (not installed here): `gym.make(name)` gives a small synthetic
environment of the named kind's shapes (CartPole: 4 observations, 2 discrete actions; Pendulum: 3
observations, 1 action in [-2, 2]; LunarLander: 8 observations, 4 discrete actions; MountainCar: 2 observations, 3 discrete actions; the MuJoCo tasks: their observation and action sizes, actions in
[-1, 1]). The dynamics are a fixed smooth map of the state and the action (seeded by the name), the
reward a function of both, and an episode ends after `FRESH_SWEEP_GYM_STEPS` steps (default 20), so
a program's episodes, buffers and updates run as written, and every process sees the same
environment. `FRESH_SWEEP_GYM_API=new` gives gym >= 0.26's API (`reset()` -> (obs, info), `step()`
-> 5 values); otherwise the older one (`reset()` -> obs, `step()` -> 4 values, `env.seed()`)."""

import os
import zlib

import numpy as np

from gym import spaces

__version__ = "0.26.2" if os.environ.get("FRESH_SWEEP_GYM_API") == "new" else "0.21.0"

# name prefix -> (observation size, action size or None for discrete actions, action bound)
KINDS = {"CartPole": (4, None, 1.0), "LunarLander": (8, None, 1.0), "Pendulum": (3, 1, 2.0), "MountainCarContinuous": (2, 1, 1.0),
         "HalfCheetah": (17, 6, 1.0), "Hopper": (11, 3, 1.0), "Walker2d": (17, 6, 1.0), "Ant": (111, 8, 1.0),
         "Reacher": (11, 2, 1.0), "InvertedPendulum": (4, 1, 3.0), "Humanoid": (376, 17, 0.4),
         "MountainCar": (2, None, 1.0)}  # after MountainCarContinuous: a name takes the first kind it starts with
ACTIONS = {"LunarLander": 4, "MountainCar": 3}  # a discrete kind's number of actions (2 where not named)
THRESHOLDS = {"CartPole-v0": 195.0, "CartPole-v1": 475.0}  # the registered reward thresholds a program compares with (others: None)


class Env:
    """gym.Env, the base of a program's own environment (`class SortEnv(gym.Env)`: its spaces and dynamics are its own)."""

    metadata = {"render.modes": []}

    def reset(self, seed=None, options=None):
        """gymnasium's Env.reset, which a program's own `reset` calls first (`super().reset(seed=seed)`):
        it seeds `self.np_random` and returns nothing."""
        self.np_random = np.random.default_rng(seed)

    def step(self, action):
        raise NotImplementedError

    def seed(self, seed=None):
        return [seed]

    def render(self, *args, **kwargs):
        return None

    def close(self):
        pass

    @property
    def unwrapped(self):
        return self


class _Made(Env):
    """What `gym.make(name)` gives: the named kind's shapes and the synthetic dynamics."""

    def __init__(self, name):
        kind = next((k for k in KINDS if name.startswith(k)), None)
        if kind is None:
            raise error.Error(f"No registered env with id: {name}")
        obs, act, bound = KINDS[kind]
        self.spec = type("EnvSpec", (), {"id": name, "max_episode_steps": None, "reward_threshold": THRESHOLDS.get(name)})()
        self._max_episode_steps = self.spec.max_episode_steps = int(os.environ.get("FRESH_SWEEP_GYM_STEPS", "20"))
        self.observation_space = spaces.Box(-np.inf, np.inf, (obs,), np.float32)
        self.action_space = spaces.Discrete(ACTIONS.get(kind, 2)) if act is None else spaces.Box(-bound, bound, (act,), np.float32)
        g = np.random.RandomState(zlib.crc32(name.encode()))
        self._a = g.normal(0, 0.5, (obs, obs)).astype(np.float32)
        self._b = g.normal(0, 0.5, (obs, act or 1)).astype(np.float32)
        self._start = g.uniform(-0.05, 0.05, obs).astype(np.float32)
        self._new = os.environ.get("FRESH_SWEEP_GYM_API") == "new"
        self._state, self._t = self._start, 0

    def reset(self, seed=None, options=None):
        self._state, self._t = self._start.copy(), 0
        return (self._state.copy(), {}) if self._new else self._state.copy()

    def step(self, action):
        a = np.asarray(action, dtype=np.float32).reshape(-1)
        if isinstance(self.action_space, spaces.Discrete):
            a = np.array([1.0 if int(a[0]) == 1 else -1.0], dtype=np.float32)
        self._state = np.tanh(self._a @ self._state + self._b @ a).astype(np.float32)
        self._t += 1
        reward = float(1.0 - 0.1 * np.square(self._state).sum() - 0.01 * np.square(a).sum())
        done = self._t >= self._max_episode_steps
        if self._new:
            return self._state.copy(), reward, done, False, {}
        return self._state.copy(), reward, done, {}

    @property
    def state(self):  # CartPole's `env.state`: the current observation, as a program reads it between steps
        return self._state.copy()


class error:  # gym.error
    class Error(Exception):
        pass


def make(name, **kwargs):
    return _Made(name)


def spec(name):
    """gym.spec(name): the registered environment's spec; a reward threshold only where THRESHOLDS names one."""
    return type("EnvSpec", (), {"id": name, "max_episode_steps": None, "reward_threshold": THRESHOLDS.get(name)})()


class Wrapper(Env):
    """gym.Wrapper: the wrapped environment's spaces and attributes, its reset and step passed through."""

    def __init__(self, env):
        self.env = env

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, *args, **kwargs):
        return self.env.reset(*args, **kwargs)

    def step(self, action):
        return self.env.step(action)

    def seed(self, seed=None):
        return self.env.seed(seed)

    def close(self):
        self.env.close()

    @property
    def unwrapped(self):
        return self.env.unwrapped


class ActionWrapper(Wrapper):
    """gym.ActionWrapper: `step(action)` steps the environment with `self.action(action)`."""

    def step(self, action):
        return self.env.step(self.action(action))


class RewardWrapper(Wrapper):
    """gym.RewardWrapper: `step(action)` gives `self.reward(reward)` for the environment's reward."""

    def step(self, action):
        out = self.env.step(action)
        return (out[0], self.reward(out[1]), *out[2:])


class ObservationWrapper(Wrapper):
    """gym.ObservationWrapper: `reset()` and `step()` give `self.observation(obs)` for the environment's."""

    def reset(self, *args, **kwargs):
        out = self.env.reset(*args, **kwargs)
        if isinstance(out, tuple):
            return (self.observation(out[0]), *out[1:])
        return self.observation(out)

    def step(self, action):
        out = self.env.step(action)
        return (self.observation(out[0]), *out[1:])
