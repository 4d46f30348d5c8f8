"""A stand-in for ``yacs.config.CfgNode`` (not installed here): a dict whose keys are attributes,
nested dicts becoming nodes, merged from a YAML file (``merge_from_file``) or a flat list of
dotted keys and values (``merge_from_list``, each value read as a Python literal where it is
one), frozen against changes until ``defrost``."""

import ast
import copy

import yaml


class CfgNode(dict):
    def __init__(self, init_dict=None, new_allowed=False):
        super().__init__()
        object.__setattr__(self, "_frozen", False)
        for key, value in (init_dict or {}).items():
            self[key] = CfgNode(value) if isinstance(value, dict) else value

    def __getattr__(self, name):
        if name in self:
            return self[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        if self._frozen:
            raise AttributeError(f"attempted to set {name} to {value} while the config is frozen")
        self[name] = value

    def __reduce__(self):  # pickled (torch.save of a checkpoint holding the config) as a plain node
        return CfgNode, (self._plain(),)

    def _plain(self):
        return {k: v._plain() if isinstance(v, CfgNode) else v for k, v in self.items()}

    def freeze(self):
        self._set_frozen(True)

    def defrost(self):
        self._set_frozen(False)

    def is_frozen(self):
        return self._frozen

    def _set_frozen(self, frozen):
        object.__setattr__(self, "_frozen", frozen)
        for value in self.values():
            if isinstance(value, CfgNode):
                value._set_frozen(frozen)

    def clone(self):
        return copy.deepcopy(self)

    def merge_from_file(self, path):
        with open(path) as f:
            self._merge(yaml.safe_load(f) or {})

    def merge_from_other_cfg(self, other):
        self._merge(other)

    def _merge(self, other):
        for key, value in other.items():
            if isinstance(value, dict) and isinstance(self.get(key), CfgNode):
                self[key]._merge(value)
            else:
                self[key] = CfgNode(value) if isinstance(value, dict) else _like(self.get(key), value)

    def merge_from_list(self, items):
        for dotted, value in zip(items[0::2], items[1::2]):
            *path, last = dotted.split(".")
            node = self
            for key in path:
                node = node[key]
            node[last] = _like(node.get(last), _literal(value))

    def dump(self, **kwargs):
        return yaml.safe_dump(self._plain(), **kwargs)

    def __str__(self):
        return self.dump()


def _literal(value):
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def _like(old, new):
    """yacs keeps a key's type: a list read from YAML becomes a tuple where the default is one."""
    return tuple(new) if isinstance(old, tuple) and isinstance(new, list) else new
