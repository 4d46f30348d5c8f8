"""A stand-in for ``omegaconf`` (not installed here): ``DictConfig``, a dict whose keys are also
attributes (nested dicts becoming configs), and ``OmegaConf.to_yaml``/``create``, enough for the
configs the ``hydra`` stand-in hands a program; ``OmegaConf.load``/``merge``/``save`` for a program that reads
its own YAML files (a base config merged with a dataset's overrides); ``OmegaConf.from_cli`` for one
that takes its settings as ``a.b=value`` words of its command line (each value read as YAML)."""

import re

import yaml

MISSING = "???"  # omegaconf's marker of a value still to be given (a dataclass field's default)


class _Loader(yaml.SafeLoader):
    """omegaconf's YAML reading: `1e-4` is a float (YAML 1.1, PyYAML's rule, wants `1.0e-4`)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def _read(text):
    return yaml.load(text, Loader=_Loader)


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
            return DictConfig(_read(f) or {})

    @staticmethod
    def from_cli(args_list=None):
        import sys
        conf = {}
        for word in sys.argv[1:] if args_list is None else args_list:
            key, _, value = word.partition("=")
            *parents, last = key.split(".")
            node = conf
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = _read(value) if value else None
        return DictConfig(conf)

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
