"""A stand-in for configargparse (not installed here): argparse whose option marked
``is_config_file=True`` names a file of ``key = value`` lines (``#`` comments, blank lines
skipped; ``key: value``, a flat YAML file's lines, alike); each line is read as ``--key value`` placed before the command line's own arguments, so
the command line wins, as configargparse's precedence has it. The parser classes a program names
(``config_file_parser_class=configargparse.YAMLConfigFileParser``) exist; the stand-in reads every
file the same way."""

import argparse
import sys

ArgumentDefaultsHelpFormatter = argparse.ArgumentDefaultsHelpFormatter
RawDescriptionHelpFormatter = argparse.RawDescriptionHelpFormatter
Namespace = argparse.Namespace


class ArgumentParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        for name in ("default_config_files", "config_file_parser_class", "args_for_setting_config_path",
                     "ignore_unknown_config_file_keys", "auto_env_var_prefix"):
            kwargs.pop(name, None)
        super().__init__(*args, **kwargs)
        self._config_options = []

    def add_argument(self, *args, **kwargs):
        is_config = kwargs.pop("is_config_file", False) or kwargs.pop("is_config_file_arg", False)
        kwargs.pop("env_var", None)
        action = super().add_argument(*args, **kwargs)
        if is_config:
            self._config_options.extend(action.option_strings)
        return action

    add = add_argument

    def _from_config(self, argv):
        lines = []
        for i, arg in enumerate(argv):
            name, _, value = arg.partition("=")
            if name in self._config_options:
                path = value or (argv[i + 1] if i + 1 < len(argv) else None)
                if path:
                    with open(path) as f:
                        lines.extend(f.read().splitlines())
        extra = []
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = line.partition("=") if "=" in line else line.partition(":")
            extra += [f"--{key.strip()}", value.strip()] if sep else [f"--{key.strip()}"]
        return extra

    def parse_known_args(self, args=None, namespace=None):
        argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._from_config(argv) + argv, namespace)


ArgParser = ArgumentParser


class DefaultConfigFileParser:
    """configargparse's config-file parser classes, named to ``config_file_parser_class`` (ignored)."""


YAMLConfigFileParser = ConfigparserConfigFileParser = TomlConfigParser = DefaultConfigFileParser
