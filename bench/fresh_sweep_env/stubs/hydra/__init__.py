"""A stand-in for ``hydra`` (not installed here): ``@hydra.main(config_path=..., config_name=...)``
reads the YAML file beside the decorated script (``config_path`` a file, as hydra < 1.0 took it, or
a folder holding ``config_name``.yaml), drops its ``hydra`` section, applies the command line's
``key=value`` overrides (each value read as YAML) and calls the function with the config as an
``omegaconf.DictConfig``. The job runs in the working folder (hydra >= 1.2's ``job.chdir=False``),
so what a program writes lands where its plain run writes it."""

import functools
import os
import sys

import yaml

from hydra import utils  # noqa: F401  (hydra.utils.to_absolute_path)
from omegaconf import DictConfig


def _config(script, config_path, config_name):
    path = os.path.join(os.path.dirname(os.path.abspath(script)), config_path or "")
    if config_name is not None or os.path.isdir(path):
        path = os.path.join(path, (config_name or "config") + ("" if str(config_name).endswith(".yaml") else ".yaml"))
    with open(path) as handle:
        content = yaml.safe_load(handle) or {}
    content.pop("hydra", None)
    for override in sys.argv[1:]:
        key, _, value = override.partition("=")
        node = content
        *parents, leaf = key.lstrip("+").split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = yaml.safe_load(value)
    return DictConfig(content)


def main(config_path=None, config_name=None, version_base=None):
    def decorate(function):
        @functools.wraps(function)
        def run():
            script = sys.modules[function.__module__].__file__
            return function(_config(script, config_path, config_name))
        return run
    return decorate
