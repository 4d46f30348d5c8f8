"""The object core (ddpify.analysis.objects) asked directly: which objects a value may hold,
what kind each is, which models an optimizer steps, which parameters a value reaches. Each
table row is a small program and the answer expected; near misses sit next to the positives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpify.analysis import objects
from ddpify.analysis.models import WRAPPER, holds_wrapper
from ddpify.analysis.result import analyse
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import parse_module

HEAD = "import itertools\nimport torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n" \
       "from torch.utils.tensorboard import SummaryWriter\nfrom tqdm import tqdm\n"
NET = "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"


# a data set class that keeps its loaders (built in __init__), and one that keeps none
DATA = ("class MNIST:\n    def __init__(self, b):\n        trainloader = DataLoader([1, 2], batch_size=b)\n"
        "        self.trainloader = trainloader\n        self.testloader = DataLoader([3], batch_size=b)\n"
        "class Other:\n    def __init__(self, b):\n        self.size = b\n")


# a base class that reads its data module's loader; a subclass forwards its `**kw` to it (rensortino's template)
FORWARD = ("class Data:\n    def __init__(self):\n        self._train = DataLoader([1, 2])\n    @property\n"
           "    def train_loader(self):\n        return self._train\n"
           "class Data2:\n    def __init__(self):\n        self.train_loader = None\n"
           "class Base:\n    def __init__(self, datamodule, lr=1):\n        self.loader = datamodule.train_loader\n"
           "    def run(self):\n        return self.loader\n")


# a registry a class decorator fills (`@Reg.register` keeps the class in a dict by its name)
DECORATED = ("class Reg:\n    record = dict()\n    @classmethod\n    def register(cls, obj):\n"
            "        cls.record[obj.__name__] = obj\n        return obj\n    @classmethod\n    def get(cls, key):\n"
            "        return cls.record.get(key, None)\n")

WARM = "@Reg.register\nclass Warm(torch.optim.lr_scheduler.LambdaLR):\n    pass\n"  # a scheduler it registers


def core(source: str) -> tuple[Facts, objects.Objects]:
    facts = Facts(parse_module(HEAD + NET + textwrap.dedent(source)))  # raises the recursion limit
    return facts, objects.of(facts)


def last_use(facts: Facts, code: str) -> cst.BaseExpression:
    """The last expression of the module spelled `code` (a read, after the assignments)."""
    found = [n for n in [*facts.names, *facts.attributes] if dotted(n) == code]
    return max(found, key=lambda n: facts.spans[n][0])


def spelled(facts: Facts, sites) -> set[str]:
    return {facts.code(s) for s in sites}


# a list of (training, test) loader pairs grown by append (vcl's create_data_loaders)
PAIRS = "ds = []\nfor t in range(2):\n    ds.append((DataLoader([1]), DataLoader([2])))\n"


@pytest.mark.parametrize("source, expr, made", [
    ("m = Net()\nm = m.to('cpu')\n", "m", {"Net()"}),  # a method that returns its object
    # a dict built from keywords: its items, and a Munch's read as attributes (StarGAN v2 templates, decision 0261)
    ("from munch import Munch\nnets = Munch(g=Net(), d=nn.Linear(2, 2))\nm = nets.g\n", "m", {"Net()"}),
    ("from munch import Munch\ndef build():\n    return Munch(g=Net(), d=nn.Linear(2, 2)), None\n"
     "nets, ema = build()\nfor k in nets.keys():\n    m = nets[k]\n", "m",
     {"Net()", "nn.Linear(2, 2)", "Munch(g=Net(), d=nn.Linear(2, 2))"}),  # (an item by any key: the container too)
    ("from easydict import EasyDict\nloaders = EasyDict(train=DataLoader([1]), test=DataLoader([2]))\n"
     "m = loaders.test\n", "m", {"DataLoader([2])"}),
    ("from munch import Munch\nopts = Munch()\nfor k in ['a']:\n    opts[k] = torch.optim.Adam(Net().parameters())\n"
     "m = opts.a\n", "m", {"torch.optim.Adam(Net().parameters())"}),  # stored by item into an empty one
    ("d = dict(train=DataLoader([1]))\nm = d['train']\n", "m", {"DataLoader([1])"}),
    ("def build():\n    return Net()\nm = build()\n", "m", {"Net()"}),  # a helper's return
    ("m, o = Net(), 1\n", "m", {"Net()"}),  # unpacking a literal tuple
    ("class S:\n    def build(self):\n        self.G = Net()\n    def run(self):\n        return self.G\n",
     "self.G", {"Net()"}),  # an attribute set in another method
    ("class Data:\n    def __init__(self):\n        self.trainloader = DataLoader([1, 2])\n"
     "data = Data()\nx = data.trainloader\n", "data.trainloader", {"DataLoader([1, 2])"}),  # obj.x of an instance
    ("loader = DataLoader([1])\nwith tqdm(loader) as bar:\n    pass\n", "bar", {"DataLoader([1])"}),  # adapters
    ("loader = DataLoader([1])\nit = iter(loader)\n", "it", {"DataLoader([1])"}),
    # an adapter given its iterable by keyword (tqdm's `iterable=`: 29c's DDPM trainer)
    ("loader = DataLoader([1])\nbar = tqdm(iterable=loader, position=1, leave=False)\n", "bar", {"DataLoader([1])"}),
    ("class Data:\n    def loader(self):\n        return DataLoader([1])\nclass R:\n    def __init__(self, data):\n"
     "        self.data = data\n    def run(self):\n        x = self.data.loader()\n        return x\nR(Data())\n",
     "x", {"DataLoader([1])"}),  # a method of an object kept on self
    ("def f(model):\n    return model\nf(Net())\n", "model", {"Net()"}),  # argument to parameter
    ("m = Net() if True else nn.Linear(1, 1)\n", "m", {"Net()", "nn.Linear(1, 1)"}),
    ("class S:\n    def __init__(self):\n        self.netG = Net()\n        self.lr = 1\n"
     "    def save(self, name):\n        net = getattr(self, 'net' + name)\n        return net\n", "net",
     {"Net()"}),  # a computed getattr: any attribute of the class
    ("def get():\n    ds = []\n    ds.append(DataLoader([1]))\n    ds.append(DataLoader([2]))\n"
     "    ds = ds[0] if len(ds) == 1 else ds\n    return ds\ntrain, test = get()\n", "train",
     {"DataLoader([1])", "DataLoader([2])"}),  # a list grown by append, returned and unpacked
    ("ds = []\nother = []\nds.append(DataLoader([1]))\na, b = other\n", "a", set()),  # another list's items
    # a nested tuple unpacked, a level at a time (fixmatch's `(labeled, unlabeled), valid, test = create_loaders()`),
    # and a name after a starred part, counted from the end (decision 0242)
    ("def make():\n    return (DataLoader([1]), DataLoader([2])), DataLoader([3])\n(a, b), c = make()\n", "b",
     {"DataLoader([2])"}),
    ("def make():\n    return (DataLoader([1]), DataLoader([2])), DataLoader([3])\n(a, b), c = make()\n", "c",
     {"DataLoader([3])"}),
    ("(a, [b, m]), c = (1, (DataLoader([1]), Net())), 2\nx = m\n", "m", {"Net()"}),
    ("def make():\n    return DataLoader([1]), DataLoader([2]), DataLoader([3]), DataLoader([4])\n"
     "a, *rest, b = make()\n", "b", {"DataLoader([4])"}),
    ("def make():\n    return DataLoader([1]), DataLoader([2]), DataLoader([3]), DataLoader([4])\n"
     "a, *rest, b = make()\n", "a", {"DataLoader([1])"}),
    ("(m, o), e = torch.load('f.pt', weights_only=False)\n", "m", {"torch.load('f.pt', weights_only=False)"}),
    ] + [(PAIRS + loop + "    x = tr\n    y = te\n", name, {made})  # pairs appended to a list, unpacked by a loop
         for loop in ("for i, (tr, te) in enumerate(ds):\n", "for tr, te in ds:\n", "for (tr, te), n in zip(ds, [1]):\n",
                      "for i, (tr, te) in enumerate(ds[:2]):\n")
         for name, made in (("tr", "DataLoader([1])"), ("te", "DataLoader([2])"))] + [
    ("G = Net()\nD = nn.Linear(1, 1)\nfor net in [G, D]:\n    pass\n", "net", {"Net()", "nn.Linear(1, 1)"}),
    ("m = Net()\nm, o = torch.load('f.pt', weights_only=False)\n", "m",
     {"Net()", "torch.load('f.pt', weights_only=False)"}),  # a whole-object reload is another object
    ("class T:\n    def __init__(self, *args, **kwargs):\n        self.model = kwargs['model'].to('cpu')\n"
     "        self.opt = kwargs.get('optimizer')\n    def run(self):\n        return self.model\n"
     "m = Net()\nT(model=m, optimizer=1)\n", "self.model", {"Net()"}),  # a `**kwargs` item: the callers' `model=`
    ] + [(FORWARD + f"class Sub(Base):\n    def __init__(self, model, **kw):\n        super().__init__(**kw)\n"
          f"dm = Data()\n{build}\n", "self.loader", {"DataLoader([1, 2])"})  # a `**kw` forwarded to the base class
         for build in ("Sub(Net(), datamodule=dm)", "Sub(Net(), **{'datamodule': dm, 'lr': 1})",
                       "args = {'datamodule': dm}\nSub(Net(), **args)")] + [
    (DATA + "FACTORY = {'mnist': MNIST, 'other': Other}\ndef create(name):\n    return FACTORY[name](8)\n"
     "data = create('mnist')\ntrain, test = data.trainloader, data.testloader\n", "train",
     {"DataLoader([1, 2], batch_size=b)"}),  # an instance built through a registry of classes (centerloss)
    (DATA + "KINDS = [Other, MNIST]\ndata = KINDS[1](8)\nx = data.trainloader\n", "data.trainloader",
     {"DataLoader([1, 2], batch_size=b)"}),  # a list of classes
    ("import argparse\ndef parse():\n    cfg = argparse.Namespace()\n    cfg.tb = SummaryWriter('r')\n    return 1, cfg\n"
     "class Runner:\n    def __init__(self, config):\n        self.config = config\n    def train(self):\n"
     "        tb = self.config.tb\n        return tb\n_, config = parse()\nRunner(config).train()\n", "tb",
     {"SummaryWriter('r')"}),  # stored into any object's attribute, read through another name (DDIM's tb_logger)
    ("G = [Net()]\nD = nn.Linear(1, 1)\nnets = G + [D]\nx = nets[1]\n", "x",
     {"Net()", "nn.Linear(1, 1)", "[Net()]", "[D]"}),  # lists joined by + (pettod's `self.models + [self.discriminator]`)
    ("a = Net()\nb = 1 + 2\nx = b\n", "x", set()),  # numbers added: no object
    # an item by literal key of a dict display handed to a trainer that keeps it (raahii's InfoGAN):
    # what the display holds under that key, not every item
    ("class T:\n    def __init__(self, models):\n        self.models = models\n    def run(self):\n"
     "        gen = self.models['gen']\n        return gen\ng, d = Net(), nn.Linear(1, 1)\nT({'gen': g, 'dis': d}).run()\n",
     "gen", {"Net()"}),
    ("m = {'gen': Net(), 'dis': nn.Linear(1, 1)}\nx = m['dis']\n", "x", {"nn.Linear(1, 1)"}),
    ("class C:\n    MODELS = [Net()]\nclass T:\n    def __init__(self, config):\n"
     "        self.models = [m.to('cpu') for m in config.MODELS]\n        x = self.models[0]\nT(C)\n", "x",
     {"Net()", "[m.to('cpu') for m in config.MODELS]"}),  # a comprehension's item (pettod's moved model list)
    ("class Data:\n    def __init__(self):\n        self._train = DataLoader([1, 2])\n    @property\n"
     "    def train_loader(self):\n        return self._train\ndata = Data()\nx = data.train_loader\n",
     "data.train_loader", {"DataLoader([1, 2])"}),  # a property of an instance: what its getter returns
    ("import functools\nclass Data:\n    def __init__(self):\n        self._val = DataLoader([3])\n"
     "    @functools.cached_property\n    def val_loader(self):\n        return self._val\n"
     "    def run(self):\n        x = self.val_loader\n        return x\n", "x", {"DataLoader([3])"}),  # read on self
    # a field of a namedtuple made by a call (`Loaders = namedtuple("Loaders", ["train", "val"])`): what the
    # construction passes there, by place or by keyword
    ("from collections import namedtuple\nLoaders = namedtuple('Loaders', ['train', 'val'])\n"
     "l = Loaders(DataLoader([1]), DataLoader([2]))\nx = l.val\n", "l.val", {"DataLoader([2])"}),
    ("import collections\nLoaders = collections.namedtuple('Loaders', 'train, val')\n"
     "l = Loaders(val=DataLoader([2]), train=DataLoader([1]))\nx = l.train\n", "l.train", {"DataLoader([1])"}),
    ("import typing\nPair = typing.NamedTuple('Pair', [('model', nn.Module), ('loader', DataLoader)])\n"
     "def make():\n    return Pair(Net(), DataLoader([1]))\np = make()\nx = p.loader\n", "p.loader", {"DataLoader([1])"}),
    # a generator method handing out one pass over a loader of its own (a data class's `batches()`): a
    # loop over its call is fed by that loader
    ("class Data:\n    def __init__(self):\n        self.loader = DataLoader([1, 2])\n    def batches(self):\n"
     "        for x, _ in self.loader:\n            yield x.view(-1)\nd = Data()\nb = d.batches()\n", "b",
     {"DataLoader([1, 2])"}),
])
def test_values_follow_objects(source, expr, made):
    facts, flow = core(source)
    assert spelled(facts, flow.values(last_use(facts, expr))) == made


@pytest.mark.parametrize("source, expr", [
    ("class Data:\n    def __init__(self):\n        self.trainloader = DataLoader([1, 2])\n"
     "class Other:\n    pass\nd = Other()\nx = d.trainloader\n", "d.trainloader"),  # another class's instance
    ("m = unknown_factory()\nx = m.encoder\n", "m.encoder"),  # not a class of the program
    (FORWARD + "class Sub(Base):\n    def __init__(self, datamodule, **kw):\n        super().__init__(Data2(), **kw)\n"
     "Sub(Data())\n", "self.loader"),  # the subclass binds `datamodule` itself: `kw` never holds it
    ("loader = DataLoader([1])\nbar = tqdm(total=len(loader), desc='train')\n", "bar"),  # a bar given no iterable
    ("class T:\n    def __init__(self, cfg, **kwargs):\n        self.model = cfg['model']\n"
     "    def run(self):\n        return self.model\nT({}, model=Net())\n", "self.model"),  # an item of another dict
    (DATA + "FACTORY = {'other': Other}\ndata = FACTORY['other'](8)\nx = data.trainloader\n",
     "data.trainloader"),  # a registry of classes that keep no loader
    (DATA + "def make(b):\n    return Other(b)\nFACTORY = {'mnist': make}\ndata = FACTORY['mnist'](8)\n"
     "x = data.trainloader\n", "data.trainloader"),  # a registry of functions: no class named
    ("import argparse\na = argparse.Namespace()\nb = argparse.Namespace()\na.tb = SummaryWriter('r')\nx = b.tb\n",
     "b.tb"),  # the same attribute stored into another object
    ("class Data:\n    def __init__(self):\n        self._train = DataLoader([1, 2])\n    @property\n"
     "    def train_loader(self):\n        return self._train\nclass Other:\n    @property\n"
     "    def size(self):\n        return 8\nd = Other()\nx = d.train_loader\n", "d.train_loader"),  # another class's
    ("class Data:\n    def __init__(self):\n        self._train = DataLoader([1, 2])\n"
     "    def train_loader(self):\n        return self._train\nd = Data()\nx = d.train_loader\n",
     "d.train_loader"),  # a method read without a call is the method, not what it returns
    ("from collections import namedtuple\nLoaders = namedtuple('Loaders', ['train', 'val'])\n"
     "l = Loaders(DataLoader([1]), DataLoader([2]))\nx = l.test\n", "l.test"),  # no such field
    ("from collections import namedtuple\nLoaders = namedtuple('Loaders', ['train', 'val'])\n"
     "pair = [DataLoader([1]), DataLoader([2])]\nl = Loaders(*pair)\nx = l.val\n", "l.val"),  # fields given by *: unread
    ("class Data:\n    def __init__(self):\n        self.loader = DataLoader([1, 2])\n    def batches(self):\n"
     "        yield torch.randn(2)\n        for x, _ in self.loader:\n            yield x\nd = Data()\nb = d.batches()\n",
     "b"),  # a generator that also makes an item of its own
    ("class Data:\n    def __init__(self):\n        self.loader = DataLoader([1, 2])\n    def batches(self):\n"
     "        while True:\n            for x, _ in self.loader:\n                yield x\nd = Data()\nb = d.batches()\n",
     "b"),  # one that passes again and again: no pass of its call's
])
def test_values_near_misses(source, expr):
    facts, flow = core(source)
    assert not any(flow.kind(s) for s in flow.values(last_use(facts, expr)))


@pytest.mark.parametrize("source, expr, kind", [
    ("x = Net()\n", "x", objects.MODEL),
    ("x = nn.Linear(2, 2)\n", "x", objects.MODEL),
    ("x = DataLoader([1])\n", "x", objects.LOADER),
    ("x = torch.optim.Adam(Net().parameters())\n", "x", objects.OPTIMIZER),
    ("x = SummaryWriter('runs')\n", "x", objects.WRITER),
    ("class Plain:\n    pass\nx = Plain()\n", "x", None),  # a plain object of the program
    # a logger class of the program: it holds a writer and no model, loader or optimizer
    ("class Log:\n    def __init__(self, d):\n        self.w = SummaryWriter(d)\nx = Log('runs')\n", "x", objects.WRITER),
    ("import tensorflow as tf\nclass Log:\n    def __init__(self, d):\n        self.w = tf.summary.create_file_writer(d)\n"
     "x = Log('runs')\n", "x", objects.WRITER),
    ("import csv\nclass CSVLogger:\n    def __init__(self, p):\n        self.f = open(p, 'w')\n"
     "        self.w = csv.writer(self.f)\nx = CSVLogger('log.csv')\n", "x", objects.WRITER),  # a file it writes
    ("class Reader:\n    def __init__(self, p):\n        self.f = open(p)\nx = Reader('log.csv')\n", "x", None),
    ("import visdom\nclass Plots:\n    def __init__(self, env):\n        self.viz = visdom.Visdom(env=env)\n"
     "x = Plots('main')\n", "x", objects.WRITER),  # a visdom client: plots every process would send
    ("class T:\n    def __init__(self):\n        self.w = SummaryWriter()\n        self.net = Net()\nx = T()\n",
     "x", None),  # a trainer that keeps a writer
    ("class T:\n    def __init__(self):\n        self.w = SummaryWriter()\n    def fit(self, m):\n"
     "        m(1).backward()\nx = T()\n", "x", None),  # one of its methods trains
    ("class A:\n    def __init__(self):\n        self.w = SummaryWriter()\n        self.me = A()\nx = A()\n",
     "x", objects.WRITER),  # holding an instance of itself: no endless question
    ("x = nn.functional.relu(torch.ones(1))\n", "x", None),  # a function, not a module
    # a class of the program deriving from one of Python's own (versioneer's `NotThisMethod(Exception)`,
    # raised at import: taken for a model built there, it drew an init_distributed_mode() into a package's
    # `__init__.py`); near miss: a base from a library ddpify does not read is still taken for a module
    ("class NotThisMethod(Exception):\n    pass\nx = NotThisMethod('no keywords')\n", "x", None),
    ("class Table(dict):\n    pass\nx = Table()\n", "x", None),
    ("from somelib import Layer\nclass Block(Layer):\n    pass\nx = Block()\n", "x", objects.MODEL),
    # a class deriving from one of the standard library's, through a base of the program or not
    # (sweep 19a's `NetworkTrainer(AbstractClassificationNN)`, `AbstractClassificationNN(ABC)`: taken
    # for a model, the fitter's class body holding one was said to build a model at import)
    ("from abc import ABC\nclass Base(ABC):\n    pass\nclass Trainer(Base):\n    pass\nx = Trainer()\n", "x", None),
    ("import abc\nclass Base(abc.ABC):\n    pass\nx = Base()\n", "x", None),
    ("from typing import Generic, TypeVar\nT = TypeVar('T')\nclass Box(Generic[T]):\n    pass\nx = Box()\n", "x", None),
    ("import threading\nclass Worker(threading.Thread):\n    pass\nx = Worker()\n", "x", None),
    # near miss: a module of the program that derives from nn.Module and an ABC mixin is a model
    ("from abc import ABC\nclass Net2(nn.Module, ABC):\n    pass\nx = Net2()\n", "x", objects.MODEL),
    ("class SAM(torch.optim.Optimizer):\n    def __init__(self, params, base, **kw):\n"
     "        super().__init__(params, kw)\nx = SAM(Net().parameters(), torch.optim.SGD, lr=1)\n",
     "x", objects.OPTIMIZER),  # an optimizer class of the program
    ("class Base(torch.optim.Optimizer):\n    pass\nclass Lookahead(Base):\n    pass\n"
     "x = Lookahead(Net().parameters(), {})\n", "x", objects.OPTIMIZER),  # through the program's base
    # a call of a functools.partial object: of what the partial wraps (`make(ds, shuffle=True)`)
    ("import functools\nmake = functools.partial(DataLoader, batch_size=2)\nx = make([1], shuffle=True)\n", "x",
     objects.LOADER),
    ("from functools import partial\nbuild = partial(Net)\nx = build()\n", "x", objects.MODEL),
    ("from functools import partial\nmake = partial(torch.optim.SGD, lr=0.1)\nx = make(Net().parameters())\n", "x",
     objects.OPTIMIZER),
    ("from functools import partial\nmake = partial(sorted, key=len)\nx = make([1])\n", "x", None),  # of no kind
    ("from functools import partial\nmake = partial(Net) if True else partial(DataLoader)\nx = make([1])\n", "x",
     None),  # near miss: partials of two callables
    # a call of a value that holds an optimizer class: an alias, an item of a dict of them, what a
    # function of the program returns (the sweep 18b tutorial's `get_optimizer(config.optimizer)(params)`)
    ("cls = torch.optim.Adam\nx = cls(Net().parameters())\n", "x", objects.OPTIMIZER),
    ("OPTS = {'adam': torch.optim.Adam, 'sgd': torch.optim.SGD}\nx = OPTS[name](Net().parameters())\n", "x",
     objects.OPTIMIZER),
    ("def get_optimizer(name):\n    table = {'adam': torch.optim.Adam}\n    return table[name]\n"
     "x = get_optimizer('adam')(Net().parameters(), lr=1)\n", "x", objects.OPTIMIZER),
    ("def pick(sgd):\n    return torch.optim.SGD if sgd else torch.optim.Adam\nx = pick(True)(Net().parameters(), lr=1)\n",
     "x", objects.OPTIMIZER),
    # near misses: a helper handing back a loss class, or an optimizer class or something else
    ("def get_loss(name):\n    table = {'ce': nn.CrossEntropyLoss}\n    return table[name]\nx = get_loss('ce')()\n", "x",
     None),
    ("def pick(sgd):\n    return torch.optim.SGD if sgd else sorted\nx = pick(True)(Net().parameters(), lr=1)\n",
     "x", None),
    # a class of torch.optim picked by a configured name, however the module is reached (`Facts.library_lookup`:
    # the nineteenth sweep's traffic-demand framework, `getattr(importlib.import_module('torch.optim'), name)`)
    ("import importlib\ncls = getattr(importlib.import_module('torch.optim'), name)\nx = cls(Net().parameters())\n",
     "x", objects.OPTIMIZER),
    ("import importlib\nmod = importlib.import_module('torch.optim')\nx = getattr(mod, name)(Net().parameters())\n",
     "x", objects.OPTIMIZER),
    ("x = torch.optim.__dict__[name](Net().parameters())\n", "x", objects.OPTIMIZER),
    ("from torch import optim\ncls = vars(optim)[name]\nx = cls(Net().parameters())\n", "x", objects.OPTIMIZER),
    # near misses: a scheduler's module, a module whose name is computed, a dict of the program's
    ("import importlib\nx = getattr(importlib.import_module('torch.optim.lr_scheduler'), name)(opt)\n", "x", None),
    ("import importlib\nx = getattr(importlib.import_module(pkg), name)(Net().parameters())\n", "x", None),
    ("x = table.__dict__[name](Net().parameters())\n", "x", None),
    # a call of what a registry filled by a class decorator gives (`Register.get(name)(**cfg)`): of the kind of
    # every class registered there, an optimizer where handed parameters and an optimizer class is among its
    # entries (round 30's held-out integer flows, decision 0261)
    (DECORATED + "@Reg.register\nclass Flow(nn.Module):\n    pass\n@Reg.register\nclass Flow2(Flow):\n    pass\n"
     "x = Reg.get(name)(**cfg)\n", "x", objects.MODEL),
    (DECORATED + WARM + "Reg.record['Adam'] = torch.optim.Adam\nnet = Net()\nx = Reg.get(name)(net.parameters(), lr=1)\n", "x",
     objects.OPTIMIZER),
    # near misses: a registry of data sets (of no kind: torch.utils.data's), of a model and a data set; a registry
    # with no optimizer class handed parameters, or with one and handed none (the scheduler it builds)
    (DECORATED + "@Reg.register\nclass Faces(torch.utils.data.Dataset):\n    pass\nx = Reg.get(name)(**cfg)\n", "x",
     None),
    (DECORATED + "@Reg.register\nclass Flow(nn.Module):\n    pass\n@Reg.register\nclass Faces(torch.utils.data.Dataset):\n"
     "    pass\nx = Reg.get(name)(**cfg)\n", "x", None),
    (DECORATED + WARM + "Reg.record['Adam'] = sorted\nnet = Net()\nx = Reg.get(name)(net.parameters(), lr=1)\n", "x", None),
    (DECORATED + WARM + "Reg.record['Adam'] = torch.optim.Adam\nx = Reg.get(name)(opt, warmup=2)\n", "x", None),
])
def test_kind(source, expr, kind):
    facts, flow = core(source)
    assert {flow.kind(s) for s in flow.values(last_use(facts, expr))} == {kind}


@pytest.mark.parametrize("binding, module", [
    ("getattr(torch.optim, name)", "torch.optim"),
    ("getattr(importlib.import_module('torch.optim'), name, None)", "torch.optim"),
    ("torch.optim.__dict__[name]", "torch.optim"),
    ("vars(models)[arch]", "torchvision.models"),
    ("models.__dict__[arch]", "torchvision.models"),
    ("getattr(mod, name)", "torch.optim.lr_scheduler"),  # `mod`, bound to a module named as written
    ("getattr(cond, name)", None),  # a name bound to one of two modules
    # near misses: a module named at run time, relatively, an attribute read by a name written out
    ("getattr(importlib.import_module(package), name)", None),
    ("getattr(importlib.import_module('.optim', 'pkg'), name)", None),
    ("torch.optim.Adam", None),
    ("table[name]", None),
])
def test_a_library_lookup_names_the_module_it_picks_from(binding, module):
    """`Facts.library_lookup`: the module a class or function is picked from by a name known at run
    time, however the code reaches the module (an import, `importlib.import_module` of a name written
    out, a name bound to one)."""
    facts, _ = core("import importlib\nimport torchvision.models as models\n"
                    "mod = importlib.import_module('torch.optim.lr_scheduler')\n"
                    "cond = importlib.import_module('torch.optim') if a else importlib.import_module('torch.nn')\n"
                    f"x = {binding}\n")
    (value,) = [v for t, v, _ in facts.assigns if dotted(t) == "x"]
    assert facts.library_lookup(value) == module


# a DARTS-like controller: its network's weights and its architecture's alphas through its own methods
CONTROLLER = ("class Controller(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.net = Net()\n        self.alpha = nn.Parameter(torch.zeros(2))\n"
              "    def weights(self):\n        return self.net.parameters()\n"
              "    def alphas(self):\n        for n, p in self.named_parameters():\n            if 'alpha' in n:\n"
              "                yield p\n"
              "class Holder:\n    def params(self, m):\n        return m.parameters()\n")

# param groups stored on a model where it is set up, an optimizer built over them in another function
STORED = ("def set_up(m):\n    m.optim_list = [{'params': filter(lambda p: p.requires_grad, m.parameters())}]\n"
          "def reset(m):\n    m.optimizer = torch.optim.Adam(m.optim_list)\n")

# a registry of the program's functions, one of them building an optimizer over what it is handed
REGISTRY = "def adam(p):\n    return torch.optim.Adam(p, lr=1)\ndef plain(p):\n    return p\n" \
           "OPTS = {{'adam': adam, 'plain': plain{more}}}\n"

TRAINED = [  # optimizer source, the models it steps
    ("G = Net()\nD = Net()\nopt = torch.optim.Adam(filter(lambda p: p.requires_grad, G.parameters()))\n", "G"),
    ("G = Net()\nD = Net()\nopt = torch.optim.SGD(itertools.chain(G.parameters(), D.parameters()), lr=1)\n",
     "G D"),
    ("G = Net()\nD = Net()\nopt = torch.optim.SGD([{'params': G.parameters()}, {'params': D.parameters(), "
     "'lr': 1}], lr=1)\n", "G D"),
    ("G = Net()\nD = Net()\nps = [p for n, p in D.named_parameters() if 'bias' not in n]\n"
     "opt = torch.optim.SGD(ps, lr=1)\n", "D"),
    ("G = Net()\nD = Net()\ndef trainable(m):\n    return [p for p in m.parameters() if p.requires_grad]\n"
     "opt = torch.optim.SGD(trainable(G), lr=1)\n", "G"),  # through a helper
    ("G = Net()\nD = Net()\nps = []\nps += list(G.parameters())\nopt = torch.optim.SGD(ps, lr=1)\n", "G"),
    ("G = Net()\nD = Net()\ndecay, rest = [], []\nfor n, p in D.named_parameters():\n    if 'bias' in n:\n"
     "        rest.append(p)\n    else:\n        decay.append(p)\n"
     "opt = torch.optim.AdamW([{'params': decay}, {'params': rest, 'weight_decay': 0}])\n", "D"),  # groups built in a loop
    ("class Solver:\n    def build_model(self):\n        self.G = Net()\n        self.D = Net()\n"
     "        self.g_opt = torch.optim.Adam(self.G.parameters())\n", "self.G"),
    ("G = Net()\nG.fc = nn.Linear(1, 1)\nopt = torch.optim.SGD(G.fc.parameters(), lr=1)\n", "G"),  # a sub-module
    (CONTROLLER + "G = Controller()\nD = Net()\nopt = torch.optim.SGD(G.weights(), lr=1)\n", "G"),  # the model's own method
    (CONTROLLER + "G = Controller()\nG = G.to('cpu')\nopt = torch.optim.Adam(G.alphas(), lr=1)\n", "G"),  # ... a generator
    (CONTROLLER + "G = Controller()\nD = Net()\nh = Holder()\nopt = torch.optim.SGD(h.params(D), lr=1)\n",
     "D"),  # near miss: a method of no model, handed D
    (STORED + "G = Net()\nD = Net()\nset_up(G)\nreset(G)\n", "G"),  # param groups kept on the model
    (REGISTRY.format(more="") + "G = Net()\nD = Net()\nopt = OPTS['adam'](G.parameters())\n", "G"),  # a registry of functions
    # a registry of lambdas (`OPTS[name](model.parameters(), lr)`), by place or keyword, and a lambda bound to a name
    ("OPTS = {'adam': lambda ps, lr: torch.optim.Adam(ps, lr=lr)}\nG = Net()\nD = Net()\n"
     "opt = OPTS['adam'](D.parameters(), 0.1)\n", "D"),
    ("OPTS = [lambda ps, lr=1: torch.optim.Adam(ps, lr=lr)]\nG = Net()\nD = Net()\nopt = OPTS[0](lr=2, ps=G.parameters())\n",
     "G"),
    ("make = lambda ps: torch.optim.SGD(ps, lr=1)\nG = Net()\nD = Net()\nopt = make(D.parameters())\n", "D"),
    # nanoGPT's param groups: a dict of `named_parameters()`, filtered again, read through `.items()` / `.values()`
    ("G = Net()\nD = Net()\nps = {n: p for n, p in D.named_parameters()}\nps = {n: p for n, p in ps.items() if p.requires_grad}\n"
     "decay = [p for n, p in ps.items() if p.dim() >= 2]\nrest = [p for p in ps.values() if p.dim() < 2]\n"
     "opt = torch.optim.AdamW([{'params': decay}, {'params': rest, 'weight_decay': 0.0}])\n", "D"),
]


@pytest.mark.parametrize("source, models", TRAINED)
def test_which_models_an_optimizer_steps(source, models):
    facts, flow = core(source)
    (opt,) = [c for c in facts.calls if (facts.qualify(c.func) or "").startswith("torch.optim.")]
    expected = set().union(*(flow.values(last_use(facts, m)) for m in models.split()))
    assert flow.trained(opt) == expected and expected


def test_a_dicts_keys_read_through_a_view_are_no_parameters():
    """Near miss: `ps.keys()` of a dict of `G.named_parameters()` hands the optimizer names, not the
    dict's values: it steps no model (only `.values()` and `.items()` read the parameters)."""
    facts, flow = core("G = Net()\nps = {n: p for n, p in G.named_parameters()}\nopt = torch.optim.SGD(list(ps.keys()), lr=1)\n")
    (opt,) = [c for c in facts.calls if (facts.qualify(c.func) or "").startswith("torch.optim.")]
    assert not flow.trained(opt)


def test_a_lambda_handed_another_lambdas_arguments_steps_no_model():
    """Near miss: `ps` of a lambda that no call of the program runs (its registry is never called)
    is given nothing: the optimizer it builds steps no model."""
    facts, flow = core("OPTS = {'adam': lambda ps: torch.optim.Adam(ps)}\nOTHER = {'sgd': lambda ps: ps}\n"
                       "G = Net()\nx = OTHER['sgd'](G.parameters())\n")
    (opt,) = [c for c in facts.calls if (facts.qualify(c.func) or "").startswith("torch.optim.")]
    assert not flow.trained(opt)


def test_a_registry_holding_anything_but_functions_of_the_program_runs_none_of_them():
    """Near miss of the registry of functions: an item that is no function of the program (`**more`,
    a library's function) leaves the call unresolved, and the optimizer's model unknown."""
    facts, flow = core(REGISTRY.format(more=", 'sgd': torch.optim.SGD") + "G = Net()\nopt = OPTS['adam'](G.parameters())\n")
    (opt,) = [c for c in facts.calls if facts.qualify(c.func) == "torch.optim.Adam"]
    assert not flow.trained(opt)


def test_an_optimizer_class_of_the_program_is_an_optimizer_and_a_scheduler_class_is_not():
    facts, flow = core("class SAM(torch.optim.Optimizer):\n    def __init__(self, params, base, **kw):\n"
                       "        super().__init__(params, kw)\n"
                       "class Warmup(torch.optim.lr_scheduler.StepLR):\n    pass\n"
                       "model = Net()\nopt = SAM(model.parameters(), torch.optim.SGD, rho=2, lr=1)\n"
                       "sched = Warmup(opt, 10)\n")
    (sam,) = facts.optimizers
    assert facts.code(sam).startswith("SAM(") and flow.trained(sam) == flow.values(last_use(facts, "model"))


def test_param_groups_stored_on_another_object_are_not_this_ones():
    """Near miss of STORED: the groups are stored on `D` only; `G.optim_list` holds nothing ddpify sees."""
    facts, flow = core(STORED + "G = Net()\nD = Net()\nset_up(D)\nreset(G)\n")
    (opt,) = [c for c in facts.calls if (facts.qualify(c.func) or "").startswith("torch.optim.")]
    assert flow.trained(opt) == frozenset()


def test_an_optimizer_over_other_parameters_steps_no_model():
    facts, flow = core("w = torch.zeros(3, requires_grad=True)\nopt = torch.optim.SGD([w], lr=1)\n")
    (opt,) = [c for c in facts.calls if (facts.qualify(c.func) or "").startswith("torch.optim.")]
    assert flow.trained(opt) == frozenset()


@pytest.mark.parametrize("levels", [1, 4, 6])
def test_receivers_reach_any_depth(levels):
    chain = "".join(f"def f{i}(m):\n    f{i + 1}(m)\n" for i in range(levels)) + \
        f"def f{levels}(m):\n    torch.save(m.state_dict(), 'x.pt')\n"
    facts, flow = core(chain + "model = Net()\nf0(model)\n")
    home = facts.ref(last_use(facts, "model"))
    assert {(r.scope.name.value, r.name) for r in flow.receivers(home)} == {(f"f{i}", "m") for i in range(levels + 1)}


def test_an_instance_call_runs_its_dunder_call_and_passes_on():
    facts, flow = core("class Stopper:\n    def __call__(self, loss, model):\n        self.save(model)\n"
                       "    def save(self, model):\n        torch.save(model.state_dict(), 'b.pt')\n"
                       "stopper = Stopper()\nmodel = Net()\nstopper(1.0, model)\n")
    home = facts.ref(last_use(facts, "model"))
    assert {(r.scope.name.value, r.name) for r in flow.receivers(home)} == {("__call__", "model"), ("save", "model")}


@pytest.mark.parametrize("setup, call", [
    ("class Trainer:\n    def __init__(self):\n        self.stopper = Stopper()\n"
     "    def fit(self, model):\n", "        self.stopper(1.0, model)\n"),
    ("def fit(model):\n", "    Stopper()(1.0, model)\n"),
])
def test_an_instance_called_through_an_attribute_or_its_constructor_runs_its_dunder_call(setup, call):
    """mask_kfold and mask_split (the twelfth sweep's held-out half): a trainer's
    `self.early_stopping(val_loss, self.model, opt)` ran nothing ddpify knew, so the early stopper's
    save of `model.state_dict()` kept the wrapper's `module.` keys."""
    facts, _ = core("class Stopper:\n    def __call__(self, loss, model):\n        pass\n" + setup + call)
    (site,) = [c for c in facts.calls if "Stopper()(" in facts.code(c) or dotted(c.func) == "self.stopper"]
    assert [f.name.value for f in facts.user_functions(site)] == ["__call__"]


def test_a_function_value_is_no_instance_call():
    facts, _ = core("def stopper(loss, model):\n    pass\nmodel = Net()\nstopper(1.0, model)\n")
    (call,) = [c for c in facts.calls if dotted(c.func) == "stopper"]
    assert [f.name.value for f in facts.user_functions(call)] == ["stopper"]


@pytest.mark.parametrize("binding, runs", [
    ("fn = train_a if args.a else (train_b if args.b else train_c)", ["train_a", "train_b", "train_c"]),
    ("fn = train_a", ["train_a"]),
    ("fn = pick(args)", []),  # a call's result: not known here
    ("fn = train_a if args.a else TRAINERS[args.name]", []),  # one value is a lookup
])
def test_a_local_variable_holding_functions_of_the_program_by_name_runs_them(binding, runs):
    """continual-learning (sweep 5a's tuning half): `train_fn = train_fromp if ... else (... else
    train_cl)` then `train_fn(model, ...)` ran nothing ddpify knew: the training pass went unseen."""
    facts, _ = core("def train_a(m):\n    pass\ndef train_b(m):\n    pass\ndef train_c(m):\n    pass\n"
                    f"def main(args):\n    {binding}\n    fn(Net())\n")
    (call,) = [c for c in facts.calls if dotted(c.func) == "fn"]
    assert [f.name.value for f in facts.user_functions(call)] == runs


@pytest.mark.parametrize("binding, runs", [
    ("fn = functools.partial(train_a, lr=1)", ["train_a"]),
    ("fn = partial(Task.batches, lr=1)", ["batches"]),  # a static method on its class
    ("fn = partial(train_a) if args.a else partial(train_b)", []),  # a value that is no partial itself
    ("fn = partial(Task.run, lr=1)", []),  # a plain method on the class: no call of it runs here
    ("fn = partial(TRAINERS[args.name])", []),  # a lookup
])
def test_a_name_holding_a_partial_runs_the_function_it_wraps(binding, runs):
    """smolerGPT (the twenty-fourth sweep's part C, decision 0186): `iter_batches =
    partial(Task.iter_batches, ...)` at the top level of train.py, then `iter_batches(split="train")`,
    ran nothing: the generator's DataLoader fed no training and every process read the whole stream."""
    facts, _ = core("import functools\nfrom functools import partial\n"
                    "def train_a(m, lr=0):\n    pass\ndef train_b(m, lr=0):\n    pass\n"
                    "class Task:\n    @staticmethod\n    def batches(m, lr=0):\n        yield m\n"
                    "    def run(self, m, lr=0):\n        pass\n"
                    f"{binding}\nfn(Net())\n")
    (call,) = [c for c in facts.calls if dotted(c.func) == "fn"]
    assert [f.name.value for f in facts.user_functions(call)] == runs


@pytest.mark.parametrize("call, param, passed", [
    ("fn(x)", "m", "x"),  # by place, after the partial's own
    ("fn(x)", "lr", "2"),  # the partial's keyword
    ("fn(x, lr=3)", "lr", "3"),  # the call's keyword overrides it
])
def test_a_call_through_a_partial_passes_the_partials_arguments_then_its_own(call, param, passed):
    """`argument_for` through `fn = partial(train, lr=2)`: the partial's arguments come first."""
    facts, _ = core(f"from functools import partial\ndef train(m, lr=0):\n    pass\nfn = partial(train, lr=2)\n{call}\n")
    (site,) = [c for c in facts.calls if dotted(c.func) == "fn"]
    (func,) = facts.user_functions(site)
    arg = facts.argument_for(site, func, param)
    assert (facts.code(arg) if arg is not None else None) == passed


@pytest.mark.parametrize("callers, runs", [
    ("train(loss_a, Net())\n", ["loss_a"]),
    ("train(loss_a, Net())\ntrain(loss=loss_b, model=Net())\n", ["loss_a", "loss_b"]),
    ("def outer(fn):\n    train(fn, Net())\nouter(loss_b)\n", ["loss_b"]),  # handed on by a parameter
    ("def main(flag):\n    fn = loss_a if flag else loss_b\n    train(fn, Net())\n", ["loss_a", "loss_b"]),  # a local
    ("train(loss_a, Net())\ntrain(LOSSES[name], Net())\n", []),  # one caller passes a lookup
    ("train(loss_a, Net())\ntrain(*args)\n", []),  # one passes it through *args
    ("", []),  # no caller runs it by name
])
def test_a_parameter_called_as_a_function_runs_what_every_caller_passes(callers, runs):
    """wgan_gp_mnist (the seventeenth sweep's held-out half, decision 0134): `train(loss, ...)` given
    `loss_wgan` by run.py calls `loss(netg, netd, x_real, device)`, which ran nothing ddpify knew
    ("`loss(...)` is looked up at run time"): the gradient penalty in the loss went unseen."""
    facts, _ = core("def loss_a(m, x):\n    pass\ndef loss_b(m, x):\n    pass\n"
                    "def train(loss, model):\n    loss(model, 1)\n" + callers)
    (call,) = [c for c in facts.calls if dotted(c.func) == "loss"]
    assert [f.name.value for f in facts.user_functions(call)] == runs


KEEPERS = ("class Embed(nn.Module):\n    def save(self, path):\n        torch.save(self.state_dict(), path)\n"
           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.feature = Embed()\n"
           "class Trainer:\n    def __init__(self):\n        self.model = Net()\n")


@pytest.mark.parametrize("use, runs", [
    ("    def pretrain(self):\n        feature = self.model.feature\n        feature.save('f.pt')\n", ["save"]),
    ("    def pretrain(self):\n        self.model.feature.save('f.pt')\n", ["save"]),
    ("    pass\ntrainer = Trainer()\ntrainer.model.feature.save('f.pt')\n", ["save"]),
    # near misses: an attribute no instance keeps, or one kept as something else on some path
    ("    def pretrain(self):\n        self.model.head.save('f.pt')\n", []),
    ("    def pretrain(self):\n        self.model.feature = load()\n        self.model.feature.save('f.pt')\n", []),
])
def test_a_method_of_what_an_instance_keeps_runs_that_class_method(use, runs):
    """A few-shot GNN (sweep 19c's tuning half): `cnn_feature = self.model.cnn_feature`, then
    `cnn_feature.save(path)` ran nothing ddpify knew, so main-process-only guarded the trainer's
    `self.model.save(path)` and left that one on every process. What `self.model` holds keeps
    `self.cnn_feature = EmbeddingCNN(...)`: its `save`."""
    facts, _ = core(KEEPERS + use)
    (call,) = [c for c in facts.calls if (dotted(c.func) or "").endswith(".save") and dotted(c.func) != "torch.save"]
    assert [f.name.value for f in facts.user_functions(call)] == runs


FITTER = ("class Trainer:\n    def fit(self, loader, model):\n        pass\n"
          "class Other:\n    def fit(self, loader, model):\n        pass\n")


@pytest.mark.parametrize("holder, runs", [
    # a class attribute: what `self.x` holds in every method until a method assigns it
    ("class Fitter:\n    __trainer = Trainer()\n    def fit(self, model):\n        self.__trainer.fit([1], model)\n",
     ["Trainer"]),
    ("class Fitter:\n    trainer = Trainer()\n    def fit(self, model):\n        self.trainer.fit([1], model)\n",
     ["Trainer"]),
    # replaced by a method (the course project's own shape): either may be what `fit` calls
    ("class Fitter:\n    trainer = Trainer()\n    def fit(self, model):\n        self.trainer = Other()\n"
     "        self.trainer.fit([1], model)\n", ["Other", "Trainer"]),
    # near miss: a class attribute of another class of the program
    ("class Elsewhere:\n    trainer = Trainer()\nclass Fitter:\n    def fit(self, model):\n"
     "        self.trainer.fit([1], model)\n", []),
])
def test_a_method_of_what_a_class_attribute_holds_runs_that_class_method(holder, runs):
    """Sweep 19a's fitter with its trainer and evaluator objects as class attributes (`__trainer =
    NetworkTrainer()` in the class body, called as `self.__trainer.fit(loader, model, ...)` in the
    epoch loop): the call ran nothing ddpify knew, so the loop was no epoch loop (no `set_epoch`: 'no
    epoch loop found for this loader'), and the trainer's loop was said to train on something that is
    no DataLoader. A class attribute is what `self.x` holds (`Facts._instances_of` reads
    `_class_fields`, as `sources` does)."""
    facts, _ = core(FITTER + holder)
    (call,) = [c for c in facts.calls if dotted(c.func) in ("self.__trainer.fit", "self.trainer.fit")]
    assert sorted(facts.enclosing_class(f).name.value for f in facts.user_functions(call)) == runs


@pytest.mark.parametrize("method, runs", [
    ("    @classmethod\n    def make(cls, n):\n        return cls.build(n)\n", ["build"]),
    ("    @classmethod\n    def make(klass, n):\n        return klass.build(n)\n", ["build"]),  # any first name
    # near misses: `cls` of a staticmethod or of a plain function is a parameter like any other
    ("    @staticmethod\n    def make(cls, n):\n        return cls.build(n)\n", []),
    ("    pass\ndef make(cls, n):\n    return cls.build(n)\n", []),
])
def test_a_classmethods_own_class_runs_its_methods(method, runs):
    """Sweep 19a's tuning shapes varied: a loader factory whose classmethod returns `cls.build(...)`,
    a staticmethod building the loaders (`self.train_loader, self.val_loader =
    Loaders.for_settings(settings)` in a trainer's `__init__`): the call ran nothing ddpify knew, so
    the training loop's loader was 'not traced to a DataLoader' (a false warning: it was sharded) and
    got no set_epoch."""
    facts, _ = core("class Loaders:\n    @staticmethod\n    def build(n):\n        return DataLoader([1] * n)\n"
                    + method)
    (call,) = [c for c in facts.calls if (dotted(c.func) or "").endswith(".build")]
    assert [f.name.value for f in facts.user_functions(call)] == runs


@pytest.mark.parametrize("binding, runs", [
    ("if args.a:\n    fn = train_a\nelif args.b:\n    fn = train_b\nelse:\n    fn = train_c", ["train_a", "train_b", "train_c"]),
    ("fn = BUILDERS[args.name]", ["train_a", "train_c"]),  # an item of a registry of the program's functions
    ("fn = pick(args)", []),  # a call's result: not known here
    ("fn = OTHERS[args.name]", []),  # a registry of something else
])
def test_a_module_level_name_holding_functions_of_the_program_runs_them(binding, runs):
    """A CIFAR-100 augmentation study (round 30's tuning half, decision 0246) binds `train =
    train_cutout` / `train_mixup` / `train_cutmix` by an option at the top level and calls
    `train(epoch)` in its epoch loop: before, only a function's local variable was followed, the
    training went unseen, and the model was wrapped after the loop (and the loader never reshuffled)."""
    facts, _ = core("def train_a(m):\n    pass\ndef train_b(m):\n    pass\ndef train_c(m):\n    pass\n"
                    "BUILDERS = {'a': train_a, 'c': train_c}\nOTHERS = {'a': 'x', 'c': 'y'}\n"
                    f"args = object()\n{binding}\nfn(Net())\n")
    (call,) = [c for c in facts.calls if dotted(c.func) == "fn"]
    assert [f.name.value for f in facts.user_functions(call)] == runs


@pytest.mark.parametrize("registry, built", [
    ("{'a': lambda c: Net(), 'b': lambda c: Other(c)}", ["Net", "Other"]),
    ("{'a': lambda c: c * 2}", []),  # a lambda that builds nothing of the program
    ("{'a': 'Net'}", []),  # no lambda: the call stays an object of its own
])
def test_a_call_of_a_lambda_held_by_a_registry_item_is_what_its_body_makes(registry, built):
    """`build_fn = MODEL_REGISTRY[cfg.model_type]`, then `model = build_fn(cfg)`, over a registry of
    lambdas (round 30's forecasting notebook, decision 0246): the objects the call may give are those
    its lambdas' bodies make."""
    facts, flow = core(f"class Other(nn.Module):\n    pass\nREGISTRY = {registry}\n"
                       "def build(cfg):\n    build_fn = REGISTRY[cfg]\n    return build_fn(cfg)\nmodel = build('a')\n")
    sites = flow.values(last_use(facts, "model"))
    assert sorted(c.name.value for s in sites for c in flow.classes_built(s)) == built


def test_cost_is_linear_in_a_long_chain_of_assignments():
    """Every name's value is computed once: a chain of 300 rebindings with two sources each
    would take 2**300 steps re-expanded per path."""
    lines = ["x0 = Net()"] + [f"x{i} = x{i - 1} if c else x{i - 1}" for i in range(1, 300)]
    facts, flow = core("\n".join(lines) + "\n")
    assert spelled(facts, flow.values(last_use(facts, "x299"))) == {"Net()"}


# `progress(self, dataloader, epoch)`: a generator method over a progress bar (rich's `track`);
# `T.test` is passed to it elsewhere, and must not feed the loop over `T().progress(zip(...))`
PASSING = ("from rich.progress import Progress\nclass T:\n    def __init__(self):\n        self.src = DataLoader([1])\n"
           "        self.tgt = DataLoader([2])\n        self.test = DataLoader([3])\n"
           "    def progress(self, dataloader, epoch):\n        bar = Progress()\n        {body}"
           "t = T()\nfor x in t.progress(t.test, 0):\n    pass\n")


@pytest.mark.parametrize("source, fed", [
    ("class Data:\n    def __init__(self):\n        self.train = DataLoader([1])\n        self.val = DataLoader([2])\n"
     "data = Data()\nwith tqdm(data.train) as bar:\n    for x in bar:\n        pass\n", {"DataLoader([1])"}),
    ("loader = DataLoader([1])\nother = DataLoader([2])\nit = iter(loader)\nfor step in range(3):\n"
     "    try:\n        x = next(it)\n    except StopIteration:\n        it = iter(loader)\n", {"DataLoader([1])"}),
    ("loaders = {p: DataLoader([p]) for p in ['train', 'val']}\nfor x in loaders['train']:\n    pass\n",
     {"DataLoader([p])"}),
    ("loader = DataLoader([1])\nfor x in [1, 2]:\n    pass\n", set()),  # near miss: a list, not the loader
] + [  # a generator of the program that hands out the items of its argument: each call's own argument
    (PASSING.format(body=body) + "for b in enumerate(t.progress(zip(t.src, t.tgt), 1)):\n    pass\n", fed)
    for body, fed in [
        ("with bar:\n            yield from bar.track(dataloader, total=3)\n", {"DataLoader([1])", "DataLoader([2])"}),
        ("for batch in tqdm(dataloader):\n            yield batch\n", {"DataLoader([1])", "DataLoader([2])"}),
        ("yield from range(3)\n", set()),  # near miss: it makes its own items
        ("yield from dataloader\n        yield 0\n", set()),  # near miss: a yield of another item
    ]])
def test_which_loader_a_loop_iterates(source, fed):
    from ddpify.analysis.loaders import loaders_of
    facts, _ = core(source)
    loop = facts.loops[-1]
    it = loop.iter if not isinstance(loop.iter, cst.Call) or dotted(loop.iter.func) != "range" else \
        [c for c in facts.calls if dotted(c.func) == "next"][0].args[0].value
    loader_calls = [c for c in facts.calls if dotted(c.func) == "DataLoader"]
    assert {facts.code(c) for c in loaders_of(facts, it, loader_calls)} == fed


def test_names_a_value_comes_through():
    """`self.model = model.to(gpu)` holds what the caller's `model` holds (unpacked from a
    helper's return); a helper's own `model`, built by the same factory as the trainer's
    `self.model`, does not come through it."""
    facts, flow = core("def load():\n    net = Net()\n    return net, 1\nmodel, opt = load()\n"
                       "class T:\n    def __init__(self, model):\n        self.model = model.to('cpu')\nT(model)\n")
    (value,) = [c for c in facts.calls if facts.code(c) == "model.to('cpu')"]
    refs = {(type(r.scope).__name__, r.name) for r in flow.names_through(value)}
    assert {("Module", "model"), ("FunctionDef", "net")} <= refs
    facts, flow = core("def build():\n    return Net()\ndef load_experiment():\n    model = build().to('cpu')\n"
                       "    return model\nclass T:\n    def __init__(self):\n        self.model = build()\n")
    (value,) = [c for c in facts.calls if facts.code(c) == "build().to('cpu')"]
    assert not any(r.name == "self.model" for r in flow.names_through(value))


RUNNER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
class Runner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run(self):
        for epoch in range(2):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                ((self.model(x) - y) ** 2).mean().backward()
                self.optimizer.step()
runner = Runner(torch.nn.Linear(2, 1), DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), shuffle=True))
runner.run()
print(runner.model, runner.loader)
"""


@pytest.mark.parametrize("read, holds", [("runner.model", WRAPPER), ("runner.loader", None)])
def test_an_attribute_of_an_instance_holds_what_its_class_keeps(read, holds):
    """`runner.model` after `Runner(model, ...)` wrapped `self.model`: the wrapper (its state dict
    has `module.` keys); `runner.loader` is no model."""
    analysis = analyse(parse_module(RUNNER))
    expr = last_use(analysis.facts, read)
    assert holds_wrapper(analysis.facts, analysis.models.refs, expr) == holds


def test_names_bound_by_unpacking_are_indexed_by_their_last_name():
    facts, flow = core("class S:\n    def __init__(self):\n        self.G, self.D = build(4)\n"
                       "enc, dec = Net(), nn.Linear(1, 1)\nfirst, *rest = [1, 2]\n(a, b), c = (Net(), 1), 2\n"
                       "*_, last = [1, 2, 3]\n")
    found = {name: [(facts.code(t), facts.code(v)) for t, v, _ in entries]
             for name, entries in flow.unpacked_names.items()}
    # before a star, the element at its place; after it, counted from the end; nested, a level at a time (decision
    # 0242: `first` was given the whole list, `a` and `b` nothing)
    assert found == {"G": [("self.G", "build(4)")], "D": [("self.D", "build(4)")],
                     "enc": [("enc", "Net()")], "dec": [("dec", "nn.Linear(1, 1)")], "first": [("first", "1")],
                     "a": [("a", "Net()")], "b": [("b", "1")], "c": [("c", "2")], "last": [("last", "3")]}


def test_a_name_bound_to_instances_of_several_classes_runs_each_ones_method():
    """`model = None`, then `model = GAN(args)` or `DCGAN(args)` by the branch taken, then
    `model.train(loader)`: the loader reaches both `train` methods (the held-out sweep's
    wgan_dcgan: 'cannot trace to a DataLoader', never reshuffled)."""
    source = textwrap.dedent("""\
        class GAN:
            def train(self, data):
                return data
        class DCGAN:
            def train(self, data):
                return data
        cfg = 1
        model = None
        if cfg:
            model = GAN()
        else:
            model = DCGAN()
        model.train(DataLoader([1]))
        """)
    facts, flow = core(source)
    call = next(c for c in facts.calls if dotted(c.func) == "model.train")
    assert {facts.enclosing_class(f).name.value for f in facts.user_functions(call)} == {"GAN", "DCGAN"}
    assert {flow.kind(s) for s in flow.values(last_use(facts, "data"))} == {objects.LOADER}
    facts, flow = core(source.replace("model = DCGAN()", "model = make()"))  # near miss: made elsewhere
    assert facts.user_functions(next(c for c in facts.calls if dotted(c.func) == "model.train")) == []


def test_a_name_bound_to_no_call_is_not_asked_what_a_call_returns(monkeypatch):
    """`holds_wrapper` asks whether a name holds what a function of the program returns
    (`_returned_holds`); it first sorted out the name's bindings that run only after the read,
    for every read of every name, though a name bound to no call has nothing returned to follow
    (DomainBed: 11,278 such tests, 439 now)."""
    from ddpify.analysis import models

    source = RUNNER + "".join(f"alias{i} = runner\nalias{i}.model\n" for i in range(10))
    analysis = analyse(parse_module(source))
    asked = []
    original = models._only_after
    monkeypatch.setattr(models, "_only_after", lambda *args: asked.append(args) or original(*args))
    for i in range(10):
        assert holds_wrapper(analysis.facts, analysis.models.refs, last_use(analysis.facts, f"alias{i}")) is None
    assert not asked


def test_names_bound_to_each_other_through_calls_that_return_the_module_keep_its_class():
    """`b = a.to("cpu")` and `a = b.float()` in a loop: each name's class is asked through the
    other's, which 8762c4e made a question that never ended (lerobot's training script: a
    RecursionError, `check` stopped on it); the cycle adds no class, and `Net()` stays the answer."""
    source = textwrap.dedent("""\
        a = Net()
        for _ in range(2):
            b = a.to("cpu")
            a = b.float()
        a(1)
        """)
    facts = Facts(parse_module(HEAD + NET + source))
    call = next(c for c in facts.calls if dotted(c.func) == "a")
    assert [c.name.value for c in facts._instances_of(call.func)] == ["Net"]
    near = source.replace("a = b.float()", "a = make(b)")  # near miss: a value of unknown class
    facts = Facts(parse_module(HEAD + NET + near))
    assert facts._instances_of(next(c for c in facts.calls if dotted(c.func) == "a").func) == []


OPTION = ("import argparse\nclass Other(nn.Module):\n    pass\nNETS = {'net': Net, 'other': Other}\n\n\n"
          "def pick(name):\n    return NETS[name]\n\n\nparser = argparse.ArgumentParser()\n"
          "parser.add_argument('--arch', type=pick, default='net')\nparser.add_argument('--size', type=int)\n")


@pytest.mark.parametrize("source, built", [
    (OPTION + "args = parser.parse_args()\nm = args.arch()\n", ["Net", "Other"]),  # what `type=` returns
    (OPTION.replace("type=pick", "type=lambda s: NETS[s]") + "args = parser.parse_args()\nm = args.arch()\n",
     ["Net", "Other"]),  # a lambda
    (OPTION.replace("'--arch'", "'-a', '--arch-name', dest='arch'") + "args = parser.parse_args()\nm = args.arch()\n",
     ["Net", "Other"]),  # the option's `dest=`
    ("class Holder:\n    def __init__(self):\n        self.kind = Net\n    def make(self):\n        return self.kind()\n"
     "m = Holder().make()\n", ["Net"]),  # a class kept as an attribute, then called
    (OPTION + "args = parser.parse_args()\nm = args.size()\n", []),  # near miss: `type=int` is no function of the program
    (OPTION + "other = argparse.ArgumentParser()\nargs = other.parse_args()\nm = args.arch()\n", []),  # another parser
])
def test_a_call_of_a_value_that_holds_classes_builds_an_instance_of_them(source, built):
    """The twenty-first sweep's vision-hw5: `args.model(log_dir)` where argparse's `type=` function
    of the program turns `--model` into a class: the option holds what that function returns (a
    class of a registry here), and calling it builds an instance of one of those classes."""
    facts, flow = core(source)
    call = next(c for c in facts.calls if facts.code(c) in ("args.arch()", "args.size()", "self.kind()"))
    assert sorted(c.name.value for s in flow.values(call) for c in flow.classes_built(s)) == built


ROWS = ("class Other(nn.Module):\n    pass\nclass Params:\n    pass\n"
        "TASKS = {'net': (Net, Params), 'other': (Other, Params)}\nTABLE = [('net', Net, 1), ('other', Other, 2)]\n"
        "NETS = {'net': Net, 'other': Other}\n")


@pytest.mark.parametrize("source, built", [
    (ROWS + "model_cls, params_cls = TASKS[name]\nm = model_cls()\n", ["Net", "Other"]),  # a registry of tuples
    (ROWS + "model_cls, params_cls = TASKS[name]\nm = params_cls()\n", ["Params"]),  # near miss: the other place
    (ROWS + "for key, model_cls, n in TABLE:\n    m = model_cls()\n", ["Net", "Other"]),  # a table of rows
    (ROWS + "model_cls = NETS[name]\nm = model_cls()\n", ["Net", "Other"]),  # a registry of classes, by a name
])
def test_a_class_taken_from_a_registry_is_every_class_the_registry_holds_there(source, built):
    """A class picked from a registry (`model_cls, params_cls = TASKS[args.task]` of `TASKS = {'copy':
    (CopyTaskModelTraining, CopyTaskParams), ...}`, round 27's held-out NTM tasks, decision 0231; a dict
    of classes; a table of rows looped over) and called builds an instance of each class the registry
    holds in that place; a name unpacked from a row is the row's element in its place (`_element_at`),
    not every element of the row (`params_cls()` builds no `Net`)."""
    facts, flow = core(source)
    call = next(c for c in facts.calls if facts.code(c) in ("model_cls()", "params_cls()"))
    assert sorted(c.name.value for s in flow.values(call) for c in flow.classes_built(s)) == built


@pytest.mark.parametrize("helper, runs", [
    ("def make(cfg):\n    env = 1\n    agent = Agent()\n    return env, agent\n", ["save"]),
    ("def make(cfg):\n    env = 1\n    if cfg:\n        agent = Agent()\n    else:\n        agent = None\n    return env, agent\n", ["save"]),
    ("def make(cfg):\n    return 1, cfg\n", []),  # a parameter handed back: its callers pass no agent
    ("def make(cfg):\n    agent = pick(cfg)\n    return 1, agent\n", []),  # a call's result: not known here
])
def test_a_name_unpacked_from_a_helpers_returned_tuple_holds_what_the_helpers_local_holds(helper, runs):
    """A Dueling DQN (round 30's tuning half, decision 0246): `env, agent = env_agent_config(cfg)`,
    whose `return env, agent` hands back its local `agent = DuelingDQN(...)`. Before, the name unpacked
    was of no class: `agent.save(path)` and `agent.load(path)` ran nothing ddpify read, and no
    barrier kept the other processes from loading the checkpoint before the main process wrote it."""
    facts, _ = core("class Agent:\n    def save(self, path):\n        pass\n" + helper +
                    "env, agent = make(0)\nagent.save('x')\n")
    (call,) = [c for c in facts.calls if dotted(c.func) == "agent.save"]
    assert [f.name.value for f in facts.user_functions(call)] == runs
