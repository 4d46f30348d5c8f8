"""absl.flags, the part programs use: DEFINE_{bool,integer,float,string,enum,multi_integer,multi_float,
multi_string}, FLAGS.NAME, FLAGS.flags_into_string(), and the command line (`--name=value`,
`--name value`, `--bool`/`--nobool`, repeated multi flags, `--flagfile=PATH`)."""


class Error(Exception):
    pass


class _Flag:
    def __init__(self, name, default, help, parse, multi=False, boolean=False):
        self.name, self.default, self.help = name, default, help
        self.parse, self.multi, self.boolean = parse, multi, boolean
        self.value, self.present = default, False

    def set(self, text):
        value = self.parse(text)
        if self.multi:
            self.value = (self.value if self.present else []) + [value]
        else:
            self.value = value
        self.present = True

    def serialize(self):
        if self.boolean:
            return f"--{'' if self.value else 'no'}{self.name}"
        values = self.value if self.multi else [self.value]
        return "\n".join(f"--{self.name}={v}" for v in values if v is not None)


def _bool(text):
    if text.lower() in ("1", "true", "t", "yes", "y"):
        return True
    if text.lower() in ("0", "false", "f", "no", "n"):
        return False
    raise Error(f"not a boolean: {text!r}")


class FlagValues:
    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        return flags[name].value

    def __setattr__(self, name, value):
        self._flags[name].value = value

    def __contains__(self, name):
        return name in self._flags

    def _define(self, flag):
        if flag.name in self._flags:
            raise Error(f"flag --{flag.name} defined twice")
        self._flags[flag.name] = flag

    def __call__(self, argv):
        """Parses argv (argv[0] is the program), returns the arguments that are no flags."""
        rest, args = [argv[0]], list(argv[1:])
        while args:
            arg = args.pop(0)
            if arg == "--":
                rest += args
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, text = arg.lstrip("-").partition("=")
            if name == "flagfile":
                args[:0] = self._read_flagfile(text if eq else args.pop(0))
                continue
            if name in self._flags and self._flags[name].boolean and not eq:
                self._flags[name].set("true")
            elif name.startswith("no") and name[2:] in self._flags and self._flags[name[2:]].boolean and not eq:
                self._flags[name[2:]].set("false")
            elif name in self._flags:
                if not eq:
                    if not args:
                        raise Error(f"flag --{name} needs a value")
                    text = args.pop(0)
                self._flags[name].set(text)
            else:
                raise Error(f"unknown command line flag {name!r}")
        object.__setattr__(self, "_parsed", True)
        return rest

    @staticmethod
    def _read_flagfile(path):
        with open(path) as f:
            return [line.strip() for line in f if line.strip() and not line.lstrip().startswith(("#", "//"))]

    def is_parsed(self):
        return self._parsed

    def flags_into_string(self):
        return "".join(flag.serialize() + "\n" for flag in self._flags.values() if flag.serialize())

    def flag_values_dict(self):
        return {name: flag.value for name, flag in self._flags.items()}


FLAGS = FlagValues()


def _enum(values):
    def parse(text):
        if text not in values:
            raise Error(f"{text!r} is none of {list(values)}")
        return text
    return parse


def DEFINE_bool(name, default, help=None, flag_values=FLAGS, **kwargs):
    flag_values._define(_Flag(name, default, help, _bool, boolean=True))


DEFINE_boolean = DEFINE_bool


def DEFINE_integer(name, default, help=None, flag_values=FLAGS, **kwargs):
    flag_values._define(_Flag(name, default, help, int))


def DEFINE_float(name, default, help=None, flag_values=FLAGS, **kwargs):
    flag_values._define(_Flag(name, default, help, float))


def DEFINE_string(name, default, help=None, flag_values=FLAGS, **kwargs):
    flag_values._define(_Flag(name, default, help, str))


def DEFINE_enum(name, default, enum_values, help=None, flag_values=FLAGS, **kwargs):
    flag_values._define(_Flag(name, default, help, _enum(list(enum_values))))


def _multi(parse):
    def define(name, default, help=None, flag_values=FLAGS, **kwargs):
        value = default if isinstance(default, list) or default is None else [default]
        flag_values._define(_Flag(name, value, help, parse, multi=True))
    return define


DEFINE_multi_integer = _multi(int)
DEFINE_multi_float = _multi(float)
DEFINE_multi_string = _multi(str)


def mark_flag_as_required(name, flag_values=FLAGS):
    pass
