"""Stand-ins for the plotting and logging packages this machine lacks (matplotlib, PIL,
tensorboard, tensorflow's summaries, scipy, imageio, visdom, pandas, ...; not sklearn: programs
try it and do without; a program's manifest entry adds more, such as sklearn or torchtext, with
``FRESH_SWEEP_EXTRA_STUBS=a,b``): any attribute is an object
that accepts any call, so a program's plots and logs run as no-ops, except the calls that write
a file, which are recorded (``sitecustomize.record_write``: the process and the caller) and then
skipped. ``torch.utils.tensorboard`` is served too (the real one imports tensorboard).
``add_graph`` on a DistributedDataParallel raises as the real tracer does (it cannot trace the
process group). ``install()`` puts the finder first on ``sys.meta_path``; real packages that are
installed are never shadowed."""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

STUBBED = ("matplotlib", "PIL", "tensorboard_logger", "tensorboardX", "tensorflow", "scipy",
           "imageio", "visdom", "seaborn", "skimage", "cv2", "IPython", "ipdb", "wandb", "pandas", "watermark")
INIT_WRITERS = ("wandb",)  # whose `init()` starts a run that writes its files (`wandb.init()`); another stand-in's
# (`pygame.init()`, `pygame.font.init()`: a library's set-up) writes none
WRITES = {"savefig", "imsave", "imwrite", "mimsave", "savemat", "log_value", "configure", "add_scalar",
          "add_scalars", "add_image", "add_images", "add_histogram", "add_text", "scalar", "image",
          "histogram", "create_file_writer", "FileWriter", "Logger", "save", "log", "init", "dump"}


def _record(what, path=None):
    record = getattr(sys.modules.get("sitecustomize"), "record_write", None)
    if record is not None:
        record(str(path) if path is not None else what, what)


def _axes(nrows=1, ncols=1, squeeze=True, **kwargs):
    """plt.subplots' axes: one Axes for 1x1, else a numpy array of them (1-D where a side is 1,
    unless squeeze=False), so `axes[row, col]`, `axes.flat` and loops over them work."""
    import numpy
    nrows, ncols = kwargs.get("nrows", nrows), kwargs.get("ncols", ncols)
    axes = numpy.empty((nrows, ncols), dtype=object)
    for index in numpy.ndindex(axes.shape):
        axes[index] = _Axes("Axes", "matplotlib")
    if not squeeze:
        return axes
    return axes[0, 0] if axes.size == 1 else axes.reshape(-1) if 1 in axes.shape else axes


# attributes no stand-in's object has: ddpify's runtime takes an object with `set_epoch` for a sampler, and
# looks for samplers behind its `sampler` and `batch_sampler` (`set_epoch(evy, epoch)` over a dict that holds the
# loader beside a `wandb.init()` run: a real run has none of them; a stand-in's, a new object at each read, had
# them without end)
NOT_HELD = frozenset({"set_epoch", "sampler", "batch_sampler"})
# matplotlib's tab10 colours, as `ListedColormap.colors` gives them (RGB triples in [0, 1])
TAB10 = tuple(tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)) for h in
              ("1f77b4", "ff7f0e", "2ca02c", "d62728", "9467bd", "8c564b", "e377c2", "7f7f7f", "bcbd22", "17becf"))


class Anything:
    """Accepts every call, attribute, item, iteration (empty), context and arithmetic."""

    def __init__(self, name="stub", top=None):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_top", top)  # the stand-in module it was read from, where known

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name in NOT_HELD:
            raise AttributeError(name)
        if name == "colors" and self._top == "matplotlib":  # a listed colormap's colours (`plt.cm.tab10.colors`,
            return TAB10  # indexed `colours[i % len(colours)]`): an empty stand-in divided by zero
        return Anything(name, self._top)

    def __call__(self, *args, **kwargs):
        if self._name == "subplots":  # fig, axes = plt.subplots(nrows, ncols): axes as matplotlib shapes them
            return Anything("subplots[0]", self._top), _axes(*args[:2], **kwargs)
        if self._name == "legend_elements":  # handles, labels = ...
            return Anything(self._name + "[0]"), Anything(self._name + "[1]")
        if self._name == "plot" and self._top == "matplotlib":  # `line, = ax.plot(x)`: a list of its lines
            return [Anything("line", self._top)]
        if self._name in WRITES and not (self._name == "configure" and not args and "logdir" not in kwargs) \
                and not (self._name == "init" and self._top is not None and self._top not in INIT_WRITERS):
            # joblib.dump(value, path): the path second; `structlog.configure(processors=...)`, given
            # no log folder as tensorboard_logger's `configure(logdir)` is, writes no file
            at = 1 if self._name == "dump" else 0
            path = args[at] if len(args) > at else None
            if hasattr(path, "write") and not isinstance(path, Anything):
                return Anything(self._name + "()")  # `plt.savefig(io.BytesIO())`: a stream in memory, no file
            _record(self._name, path if isinstance(path, (str, os.PathLike)) and
                    self._name in ("savefig", "imsave", "imwrite", "mimsave", "savemat", "save", "dump") else None)
        return Anything(self._name + "()", self._top)

    def __setattr__(self, name, value):
        pass

    def __getitem__(self, key):
        return Anything("item")

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def _same(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _same

    def __float__(self):
        return 0.0

    def __format__(self, spec):
        """`f"{df['acc'].mean():.3f}"`: formatted as the number 0 it reads as (`float()`); no spec, its repr."""
        return format(0.0, spec) if spec else repr(self)

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __repr__(self):
        return f"<stub {self._name}>"


class _Axes(Anything):
    """One matplotlib Axes: numpy takes it as one object (np.atleast_2d(ax) is a 1x1 array of it),
    not as the empty sequence any other stand-in is."""

    def __array__(self, dtype=None, copy=None):
        import numpy
        one = numpy.empty((), dtype=object)
        one[()] = self
        return one


class Picture(Anything):
    """``PIL.Image.fromarray(a)``: an image that keeps its pixels (``numpy.asarray`` gives them
    back, so a data set that goes through PIL still yields its data)."""

    def __init__(self, array, mode=None):
        super().__init__("image")
        object.__setattr__(self, "_array", array)

    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.asarray(self._array, dtype=dtype)

    def convert(self, *args, **kwargs):
        return self

    def copy(self):  # PIL's Image.copy(): the same pixels, a picture of its own
        return Picture(self._array.copy())

    @property
    def size(self):  # PIL's (width, height)
        return self._array.shape[1], self._array.shape[0]

    @property
    def width(self):
        return self._array.shape[1]

    @property
    def height(self):
        return self._array.shape[0]

    def crop(self, box):  # PIL's (left, upper, right, lower)
        left, upper, right, lower = (int(v) for v in box)
        return Picture(self._array[upper:lower, left:right])

    def resize(self, size, *args, **kwargs):  # nearest neighbour, as numpy indexing gives it
        import numpy
        w, h = size
        rows = numpy.arange(h) * self._array.shape[0] // h
        cols = numpy.arange(w) * self._array.shape[1] // w
        return Picture(self._array[rows][:, cols])


class _PILImage(Anything):
    def fromarray(self, array, mode=None):
        return Picture(array, mode)

    def open(self, fp, *args, **kwargs):
        """An image file of the program's own inputs: 48x48 RGB pixels (``FRESH_SWEEP_IMAGE_SIDE``)
        fixed by the file's name (the file must exist, as for the real one); from a stream (a plot
        saved into ``io.BytesIO``), fixed by the stream's bytes."""
        import zlib
        import numpy
        if hasattr(fp, "read"):
            seed = zlib.crc32(fp.getvalue() if hasattr(fp, "getvalue") else fp.read())
        else:
            with open(fp, "rb"):
                pass
            seed = zlib.crc32(os.path.basename(str(fp)).encode())
        rng = numpy.random.default_rng(seed)
        side = int(os.environ.get("FRESH_SWEEP_IMAGE_SIDE", "48"))
        return Picture(rng.integers(0, 256, (side, side, 3), dtype=numpy.uint8))


def accuracy_score(y_true, y_pred, normalize=True, sample_weight=None):
    """sklearn.metrics.accuracy_score: the share (or, with ``normalize=False``, the count) of the
    labels predicted right, a float as sklearn's is: a program sums it over its batches (a no-op
    stand-in's object added up stopped the sums ddpify takes over the processes)."""
    import numpy
    right = numpy.asarray(y_true).reshape(-1) == numpy.asarray(y_pred).reshape(-1)
    weights = numpy.ones(right.shape) if sample_weight is None else numpy.asarray(sample_weight, dtype=float)
    return float((right * weights).sum() / weights.sum()) if normalize else float((right * weights).sum())


def mean_absolute_percentage_error(y_true, y_pred, sample_weight=None, multioutput="uniform_average"):
    """sklearn.metrics.mean_absolute_percentage_error: the mean of |y_true - y_pred| / max(|y_true|, eps),
    a float as sklearn's is (a program averages it over its batches with numpy)."""
    import numpy
    y_true = numpy.asarray(y_true, dtype=float).reshape(-1)
    y_pred = numpy.asarray(y_pred, dtype=float).reshape(-1)
    errors = numpy.abs(y_true - y_pred) / numpy.maximum(numpy.abs(y_true), numpy.finfo(numpy.float64).eps)
    weights = numpy.ones(errors.shape) if sample_weight is None else numpy.asarray(sample_weight, dtype=float)
    return float((errors * weights).sum() / weights.sum())


def _rng(random_state):
    import numpy
    return random_state if isinstance(random_state, numpy.random.RandomState) else numpy.random.RandomState(random_state)


def make_moons(n_samples=100, *, shuffle=True, noise=None, random_state=None):
    """sklearn.datasets.make_moons: two interleaving half circles, (X of shape (n, 2), y of 0s and 1s), as
    sklearn draws them (a no-op stand-in's object gave a program's toy data set no points)."""
    import numpy
    n_out, n_in = (n_samples // 2, n_samples - n_samples // 2) if isinstance(n_samples, int) else n_samples
    rng = _rng(random_state)
    outer, inner = numpy.linspace(0, numpy.pi, n_out), numpy.linspace(0, numpy.pi, n_in)
    x = numpy.vstack([numpy.append(numpy.cos(outer), 1 - numpy.cos(inner)),
                      numpy.append(numpy.sin(outer), 1 - numpy.sin(inner) - 0.5)]).T
    y = numpy.hstack([numpy.zeros(n_out, dtype=numpy.intp), numpy.ones(n_in, dtype=numpy.intp)])
    if shuffle:
        order = rng.permutation(len(y))
        x, y = x[order], y[order]
    if noise is not None:
        x = x + rng.normal(scale=noise, size=x.shape)
    return x, y


def make_circles(n_samples=100, *, shuffle=True, noise=None, random_state=None, factor=0.8):
    """sklearn.datasets.make_circles: a large circle holding a small one (radius ``factor``), as sklearn
    draws them."""
    import numpy
    n_out, n_in = (n_samples // 2, n_samples - n_samples // 2) if isinstance(n_samples, int) else n_samples
    rng = _rng(random_state)
    outer = numpy.linspace(0, 2 * numpy.pi, n_out, endpoint=False)
    inner = numpy.linspace(0, 2 * numpy.pi, n_in, endpoint=False)
    x = numpy.vstack([numpy.append(numpy.cos(outer), numpy.cos(inner) * factor),
                      numpy.append(numpy.sin(outer), numpy.sin(inner) * factor)]).T
    y = numpy.hstack([numpy.zeros(n_out, dtype=numpy.intp), numpy.ones(n_in, dtype=numpy.intp)])
    if shuffle:
        order = rng.permutation(len(y))
        x, y = x[order], y[order]
    if noise is not None:
        x = x + rng.normal(scale=noise, size=x.shape)
    return x, y


def make_regression(n_samples=100, n_features=100, *, n_informative=10, n_targets=1, bias=0.0,
                    effective_rank=None, tail_strength=0.5, noise=0.0, shuffle=True, coef=False, random_state=None):
    """sklearn.datasets.make_regression: standard normal inputs (n_samples, n_features) and targets a
    random linear map of the first ``n_informative`` of them (weights 100 * uniform) plus ``bias`` and
    Gaussian ``noise``, of shape (n,) for one target, (n, n_targets) else, as sklearn draws them (rows and
    columns shuffled); ``coef=True`` adds the weights (a no-op stand-in's object gave a notebook's
    multi-task regression set no rows)."""
    import numpy
    rng = _rng(random_state)
    n_informative = min(n_features, n_informative)
    x = rng.standard_normal(size=(n_samples, n_features))
    truth = numpy.zeros((n_features, n_targets))
    truth[:n_informative, :] = 100 * rng.uniform(size=(n_informative, n_targets))
    y = x @ truth + bias
    if noise > 0.0:
        y = y + rng.normal(scale=noise, size=y.shape)
    if shuffle:
        order = rng.permutation(n_samples)
        x, y = x[order], y[order]
        columns = numpy.arange(n_features)
        rng.shuffle(columns)
        x, truth = x[:, columns], truth[columns]
    y, truth = numpy.squeeze(y), numpy.squeeze(truth)
    return (x, y, truth) if coef else (x, y)


def train_test_split(*arrays, test_size=None, train_size=None, random_state=None, shuffle=True, stratify=None):
    """sklearn.model_selection.train_test_split: each array split by one permutation of its rows (the
    first ``test_size`` of it the test rows, sklearn's order), returned train, test, train, test, ...;
    ``test_size`` a share (rounded up) or a count, 0.25 where neither size is given. Arrays, lists and
    tensors alike (a tensor indexed by the rows stays a tensor)."""
    import math
    import numpy
    n = len(arrays[0])
    if test_size is None:
        test_size = 0.25 if train_size is None else (1 - train_size if isinstance(train_size, float) else n - train_size)
    n_test = math.ceil(test_size * n) if isinstance(test_size, float) else int(test_size)
    n_train = (math.floor(train_size * n) if isinstance(train_size, float) else int(train_size)) if train_size is not None else n - n_test
    order = _rng(random_state).permutation(n) if shuffle else numpy.arange(n)
    test, train = order[:n_test], order[n_test:n_test + n_train]

    def take(array, rows):
        if isinstance(array, list):
            return [array[i] for i in rows]
        if type(array).__module__.startswith("torch"):
            import torch
            return array[torch.as_tensor(rows, dtype=torch.long)]
        return array[rows]

    return [part for array in arrays for part in (take(array, train), take(array, test))]


def apply_color_map(src, colormap=None, dst=None):
    """cv2.applyColorMap: a grey uint8 picture (H x W) as a colour one (H x W x 3, uint8, blue-green-red as
    OpenCV orders them) through a jet map, whichever map is named (a GradCAM heat map turned into a
    tensor: the no-op stand-in's object gave `torch.from_numpy` nothing to take)."""
    import numpy
    grey = numpy.asarray(src)
    grey = grey[..., 0] if grey.ndim == 3 else grey
    v = grey.astype(numpy.float64) / 255.0
    red, green, blue = (numpy.clip(1.5 - numpy.abs(4 * v - c), 0, 1) for c in (3, 2, 1))
    return (numpy.stack([blue, green, red], axis=-1) * 255).astype(numpy.uint8)


def _cv2_picture(seed_bytes):
    """An OpenCV picture (H x W x 3 uint8) fixed by the given bytes, FRESH_SWEEP_IMAGE_SIDE pixels a side."""
    import zlib
    import numpy
    side = int(os.environ.get("FRESH_SWEEP_IMAGE_SIDE", "48"))
    return numpy.random.default_rng(zlib.crc32(bytes(seed_bytes))).integers(0, 256, (side, side, 3), dtype=numpy.uint8)


def cv2_imdecode(buf, flags=None):
    """cv2.imdecode: the bytes of an image file (a program reads the file itself) as a picture."""
    import numpy
    return _cv2_picture(numpy.asarray(buf, dtype=numpy.uint8).tobytes())


def cv2_imread(path, flags=None):
    """cv2.imread: a picture fixed by the file's name, None where there is no such file (as OpenCV)."""
    if not os.path.isfile(str(path)):
        return None
    return _cv2_picture(os.path.basename(str(path)).encode())


def cv2_cvt_color(src, code=None, dst=None):
    """cv2.cvtColor: the picture as it is (a colour picture stays H x W x 3: the stand-in's codes are not told apart)."""
    import numpy
    return numpy.asarray(src) if isinstance(src, numpy.ndarray) else Anything("cvtColor")


def cv2_warp_affine(src, M=None, dsize=None, *args, **kwargs):
    """cv2.warpAffine: the picture as it is, at the size asked for (the stand-in applies no transform; a numpy array,
    as OpenCV returns, where the no-op's object gave `torch.from_numpy` nothing to take)."""
    import numpy
    src = numpy.asarray(src)
    if dsize is None or tuple(dsize) == (src.shape[1], src.shape[0]):
        return src.copy()
    out = numpy.zeros((dsize[1], dsize[0]) + src.shape[2:], dtype=src.dtype)
    h, w = min(dsize[1], src.shape[0]), min(dsize[0], src.shape[1])
    out[:h, :w] = src[:h, :w]
    return out


class SummaryWriter:
    """torch.utils.tensorboard.SummaryWriter / tensorboardX: records its creation as a write."""

    def __init__(self, log_dir=None, comment="", *args, **kwargs):
        self.log_dir = log_dir or os.path.join("runs", "stub" + comment)
        _record("SummaryWriter", self.log_dir)
        os.makedirs(self.log_dir, exist_ok=True)

    def add_graph(self, model, *args, **kwargs):
        if type(model).__name__ in ("DistributedDataParallel", "FullyShardedDataParallel"):
            raise RuntimeError("Tried to trace <torch.distributed.ProcessGroup> but it is not part of the "
                               "active trace (fresh-sweep stub: add_graph traces the model, as the real one)")

    def __getattr__(self, name):
        return Anything(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in ("SummaryWriter",):
            return SummaryWriter
        if (self.__name__, name) in (("PIL", "Image"), ("PIL.Image", "fromarray"), ("PIL.Image", "open")):
            return _PILImage("Image") if name == "Image" else getattr(_PILImage("Image"), name)
        return Anything(name, self.__name__.split(".")[0])


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = StubModule(spec.name)
        module.__path__ = []  # a package: its submodules are stubs too
        module.__version__ = "0.0-stub"
        return module

    def exec_module(self, module):
        if module.__name__ in ("torch.utils.tensorboard", "tensorboardX"):
            module.SummaryWriter = SummaryWriter
        if module.__name__ == "sklearn.metrics":  # a number, as a program adds it up (FRESH_SWEEP_EXTRA_STUBS=sklearn)
            module.accuracy_score = accuracy_score
            module.mean_absolute_percentage_error = mean_absolute_percentage_error
        if module.__name__ == "sklearn.datasets":  # toy data sets of points, as sklearn draws them
            module.make_moons, module.make_circles, module.make_regression = make_moons, make_circles, make_regression
        if module.__name__ == "sklearn.model_selection":  # the rows split as sklearn splits them
            module.train_test_split = train_test_split
        if module.__name__ == "cv2":  # a colour picture of the shape OpenCV returns
            module.applyColorMap = apply_color_map
            module.imdecode, module.imread, module.cvtColor = cv2_imdecode, cv2_imread, cv2_cvt_color
            module.warpAffine = cv2_warp_affine
        if module.__name__ == "matplotlib":
            module.use = lambda *a, **k: None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if fullname == "torch.utils.tensorboard" or fullname.startswith("torch.utils.tensorboard."):
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        if top not in STUBBED and top not in EXTRA:
            return None
        if fullname == top:
            sys.meta_path.remove(self)
            try:
                real = importlib.util.find_spec(top)
            finally:
                sys.meta_path.insert(0, self)
            if real is not None:
                STUBBED_REAL.add(top)
                return None
        elif top in STUBBED_REAL:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


STUBBED_REAL = set()
EXTRA = tuple(filter(None, os.environ.get("FRESH_SWEEP_EXTRA_STUBS", "").split(",")))


def install():
    sys.meta_path.insert(0, _Finder())
