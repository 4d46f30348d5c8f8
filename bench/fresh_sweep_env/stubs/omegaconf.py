"""A stand-in for ``omegaconf`` (not installed here): ``DictConfig``, a dict whose keys are also
attributes (nested dicts becoming configs), and ``OmegaConf.to_yaml``/``create``, enough for the
configs the ``hydra`` stand-in hands a program; ``OmegaConf.load``/``merge``/``save`` for a program that reads
its own YAML files (a base config merged with a dataset's overrides)."""

import yaml


class DictConfig(dict):
    def __init__(self, content=None):
        super().__init__()
        for key, value in (content or {}).items():
            self[key] = DictConfig(value) if isinstance(value, dict) else value

    def __getattr__(self, name):
        if name in self:
            return self[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        self[name] = value

    def _plain(self):
        return {k: v._plain() if isinstance(v, DictConfig) else v for k, v in self.items()}


class OmegaConf:
    @staticmethod
    def create(content=None):
        return DictConfig(content)

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            return DictConfig(yaml.safe_load(f) or {})

    @staticmethod
    def merge(*configs):
        def merged(base, over):
            out = dict(base)
            for key, value in over.items():
                out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
            return out
        result = {}
        for config in configs:
            result = merged(result, OmegaConf.to_container(config))
        return DictConfig(result)

    @staticmethod
    def save(config, f):
        text = OmegaConf.to_yaml(config)
        if hasattr(f, "write"):
            f.write(text)
        else:
            with open(f, "w", encoding="utf-8") as out:
                out.write(text)

    @staticmethod
    def to_yaml(config):
        return yaml.safe_dump(config._plain() if isinstance(config, DictConfig) else dict(config))

    @staticmethod
    def to_container(config, resolve=False):
        return config._plain() if isinstance(config, DictConfig) else dict(config)
