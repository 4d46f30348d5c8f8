"""gym.wrappers: ``RecordVideo`` records no video here (no renderer): the environment it wraps, passed through."""

from gym import Env


class RecordVideo(Env):
    """``RecordVideo(env, video_folder, episode_trigger=...)``: `env` as it is, every attribute its own."""

    def __init__(self, env, video_folder=None, **kwargs):
        self.env = env

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, *args, **kwargs):
        return self.env.reset(*args, **kwargs)

    def step(self, action):
        return self.env.step(action)

    def close(self):
        self.env.close()
