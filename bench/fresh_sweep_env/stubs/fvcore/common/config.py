"""A stand-in for ``fvcore.common.config.CfgNode`` (not installed here): the yacs stand-in's node,
whose YAML file may name a base file (``_BASE_: "base.yaml"``, relative to the file) that it
overrides key by key (``load_yaml_with_base``, ``merge_from_file``); string values are read as Python
literals where they are ones, as yacs decodes them (YAML 1.1 leaves ``1e-4`` a string)."""

import copy
import os

import yaml
from yacs.config import CfgNode as _YacsNode
from yacs.config import _literal


class CfgNode(_YacsNode):
    NEW_ALLOWED = "__new_allowed__"  # the attribute name fvcore and yacs keep the flag under
    BASE_KEY = "_BASE_"

    def __init__(self, init_dict=None, key_list=None, new_allowed=False):
        super().__init__(_decoded(init_dict or {}), new_allowed)

    @classmethod
    def load_yaml_with_base(cls, filename, allow_unsafe=False):
        with open(filename) as f:
            cfg = (yaml.unsafe_load(f) if allow_unsafe else yaml.safe_load(f)) or {}
        base = cfg.pop(cls.BASE_KEY, None)
        if base is None:
            return cfg
        if not os.path.isabs(base):
            base = os.path.join(os.path.dirname(filename), base)
        merged = cls.load_yaml_with_base(base, allow_unsafe=allow_unsafe)
        _override(merged, cfg)
        return merged

    def clone(self):
        """A deep copy of the node's own class (a project's subclass, whose merge_from_file is its own)."""
        return type(self)(copy.deepcopy(self._plain()))

    def merge_from_file(self, cfg_filename, allow_unsafe=False):
        self.merge_from_other_cfg(type(self)(self.load_yaml_with_base(cfg_filename, allow_unsafe=allow_unsafe)))


def _decoded(tree):
    """yacs reads a node's string values as Python literals (`1e-4`, which YAML leaves a string, is a float)."""
    return {k: _decoded(v) if isinstance(v, dict) else _literal(v) for k, v in tree.items()}


def _override(base, over):
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _override(base[key], value)
        else:
            base[key] = value
