"""A stand-in for gin-config (not installed here): ``@gin.configurable`` functions and classes take
the parameters a parsed config binds (``module.name.param = value`` lines; ``import`` lines and
comments skipped, values Python literals), a call's own arguments first. Enough for a program that
parses one config file and reads its bindings through its configurables."""

import ast
import functools
import inspect

_BINDINGS = {}  # selector ("module.name" or "name") -> {param: value}


def _bound(selectors):
    """Every binding the config gives the configurable, named with its module or without."""
    params = {}
    for key, bound in _BINDINGS.items():
        if any(key == selector or selector.endswith("." + key) for selector in selectors):
            params.update(bound)
    return params


def _with_bindings(fn, selectors):
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        given = signature.bind_partial(*args, **kwargs).arguments
        for param, value in _bound(selectors).items():
            if param not in given:
                kwargs[param] = value
        return fn(*args, **kwargs)

    return wrapper


def configurable(name_or_fn=None, module=None, **kwargs):
    def decorate(obj, name=None):
        name = name or obj.__name__
        selectors = [f"{module}.{name}" if module else name, name]
        if inspect.isclass(obj):
            obj.__init__ = _with_bindings(obj.__init__, selectors)
            return obj
        return _with_bindings(obj, selectors)

    if callable(name_or_fn):
        return decorate(name_or_fn)
    return lambda obj: decorate(obj, name_or_fn)


def external_configurable(obj, name=None, module=None, **kwargs):
    return configurable(name, module=module)(obj)


def bind_parameter(binding, value):
    selector, param = binding.rsplit(".", 1)
    _BINDINGS.setdefault(selector, {})[param] = value


def query_parameter(binding):
    selector, param = binding.rsplit(".", 1)
    return _bound([selector])[param]


def parse_config(bindings, **kwargs):
    lines = bindings.splitlines() if isinstance(bindings, str) else list(bindings)
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(("import ", "from ", "include ")) or "=" not in line:
            continue
        binding, value = (part.strip() for part in line.split("=", 1))
        bind_parameter(binding, ast.literal_eval(value))


def parse_config_file(path, **kwargs):
    with open(path) as f:
        parse_config(f.read())


def parse_config_files_and_bindings(files, bindings, **kwargs):
    for path in files or ():
        parse_config_file(path)
    parse_config(bindings or [])


def clear_config(**kwargs):
    _BINDINGS.clear()


def operative_config_str():
    return "\n".join(f"{selector}.{param} = {value!r}" for selector, params in _BINDINGS.items()
                     for param, value in params.items())
