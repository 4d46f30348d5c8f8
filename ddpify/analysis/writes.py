"""What counts as a file write? The one list `convert` (main-process-only guards these to the
main process) and `check` (DDP006: a write that runs on every rank) both use.

A call writes a file when it is
- one of `FILE_WRITES` by qualified name (`torch.save`, `torch.jit.save`, `json.dump`,
  `pickle.dump`, `joblib.dump`, NumPy's `save`/`savez`/`savez_compressed`/`savetxt`, `shutil` copies and moves,
  `torchvision.utils.save_image`, `matplotlib.pyplot.savefig`, the image writers of imageio,
  scipy, scikit-image, OpenCV, matplotlib and torchvision.io: `imageio.mimsave`, `scipy.misc.imsave`, ...,
  and the audio writers of soundfile, scipy, torchaudio and librosa: `sf.write(p, y, sr)`, `wavfile.write(p, sr, y)`);
- a helper of an installed library that writes an object to a path, known by its name
  (`save_json(obj, path)`, `write_pickle(obj, path)`, `dump_yaml(cfg, path)`: batchgenerators',
  nnU-Net's and many projects' own), called with both, where the program does not define it;
- a method of `FILE_WRITE_METHODS` (`model.save_pretrained(d)`, `fig.savefig(p)`, `df.to_csv(p)`, pandas' other
  writers `df.to_pickle(p)`, `.to_feather(p)`, `.to_excel(p)`, `.to_hdf(p, key)`,
  pathlib's `Path(p).write_bytes(data)` and `.write_text(s)`, zipfile's and tarfile's `.extractall(d)`,
  Hugging Face datasets' `ds.save_to_disk(d)`), and `ds.to_json(path)`, `df.to_parquet(path)`,
  `df.to_markdown(path)` and `df.to_html(path)` given a path;
- the opener of a `with` that opens a file for writing (`with open(p, "w") as f:`, any opener
  given a write mode: `with PathManager.open(p, "w") as f:`, `with fs.open(p, mode="wb") as f:`),
  unless a write of this list writes the handle in its body (`json.dump(d, f)`: that is the write);
- a call handed straight a file `open(p, "w")` opens for writing, never named (`yaml.dump(cfg,
  open(p, "w"))`: it writes into the file, and the open truncates it on every process);
- a `write` (or `writelines`) called straight on a file opened for writing, never named
  (`open(p, "wt").write(json.dumps(history))`: the file is written as by `with open(p, "w") as f: f.write(s)`);
- a tensorboard writer made (`SummaryWriter(log_dir)`, tensorboardX's, TensorFlow's
  `tf.summary.create_file_writer(d)`): it creates its folder and an event file at once, and each
  process's writer its own, so every process logs the same curves again;
- or `.save(path)` on a TorchScript module (a value made by `torch.jit.script` or
  `torch.jit.trace`, followed through names: `scripted = torch.jit.script(m)` ... `scripted.save(p)`)
  or on a matplotlib animation (`anim = animation.ArtistAnimation(fig, ims)` ... `anim.save("a.gif")`)
  or on a PIL image (`Image.fromarray(a).save("sample.png")`, `img = Image.open(p)` ... `img.save(q)`,
  through the image's own methods that return a new one, `Image.open(p).convert("RGB").save(q)`,
  torchvision's `transforms.ToPILImage()(grid).save(p)` and `to_pil_image(t).save(p)`, an item of a list of them, `frames[0].save("out.gif", save_all=True, append_images=frames)`, or each
  of them in turn: `for frame in frames: frame.save(p)`).

and what it writes to is not an in-memory buffer: `torch.save(state, buffer)` with `buffer =
io.BytesIO()` (or `json.dump(d, io.StringIO())`, `fig.savefig(buf)`) writes no file, on any
process; where the buffer's bytes are written later, that write is the file write
(`Path(p).write_bytes(buffer.getvalue())`).

Near misses, not writes: `optimizer.step()`, a `.save()` of the script's own objects,
`json.dumps` (a string), `np.load`, `torch.load`, `print`, a save into an in-memory buffer.

A link made on the disk (`link`: `os.symlink(src, dst)`, pathlib's `latest.symlink_to(ckpt.name)`)
is no file write, but both commands treat it as one: on every process, all but the first fail on
the link the first has made (`convert` guards it, `check` reports it).

A folder made where it may exist (`raced_folder`: `os.mkdir(d)`, `os.makedirs(d)` without
`exist_ok`, also after `if not os.path.isdir(d):`; not in a `try` that catches FileExistsError)
is no file write either, and both commands ask `raced_folder` alone and treat it as a race:
`convert` guards it (or passes `exist_ok=True` to an `os.makedirs` made where it is missing,
`made_where_missing`), `check` reports it (decision 0252: `convert` had its own answer, which
caught no handler and read `os.mkdir` as a call to run once).

What stays each command's own: `convert` also guards what is not a file write but must happen
once (wandb calls, the logging calls of a SummaryWriter, a link removed) and guards a `with open(p, "w")` block whole, whatever its body writes.
`check` also reports a file or folder removed on every rank (`deletion`: `shutil.rmtree(d)`,
`os.remove(p)`; `convert` guards these as calls to run once), and a download into a file of the disk on every rank (`download`: `urlretrieve(url,
path)`, torchvision's `download_url(url, root)` and `download_and_extract_archive`,
`shutil.unpack_archive(archive, d)`, which write in place; not `urlretrieve(url)`, whose temporary
file is the process's own, nor `requests.get`, which writes nothing, nor a download that moves a
finished temporary file into place, `torch.hub.download_url_to_file`), which `convert` leaves to
`ddpify.rewrites.download_first` (each node's first process downloads, the others after it) rather
than guarding it alone: the other processes read what it writes.
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.analysis import objects
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

# calls that write a file, with the position of the path (or open file) they write to
FILE_WRITES = {
    "torch.save": 1, "torch.jit.save": 1, "safetensors.torch.save_file": 1, "json.dump": 1, "pickle.dump": 1, "joblib.dump": 1,
    "numpy.save": 0, "numpy.savez": 0, "numpy.savez_compressed": 0, "numpy.savetxt": 0,
    "shutil.copyfile": 1, "shutil.copy": 1, "shutil.copy2": 1, "shutil.copytree": 1, "shutil.move": 1,
    "shutil.make_archive": 0,  # (the archive: its name and the format's suffix)
    "torchvision.utils.save_image": 1, "matplotlib.pyplot.savefig": 0,
    # image writers: the path first
    "imageio.imwrite": 0, "imageio.imsave": 0, "imageio.mimwrite": 0, "imageio.mimsave": 0,
    "imageio.v2.imwrite": 0, "imageio.v2.mimwrite": 0, "imageio.v3.imwrite": 0,
    "scipy.misc.imsave": 0, "skimage.io.imsave": 0, "cv2.imwrite": 0, "matplotlib.pyplot.imsave": 0,
    "torchvision.io.write_png": 1, "torchvision.io.write_jpeg": 1, "torchvision.io.write_video": 0,
    # audio writers: the path first
    "soundfile.write": 0, "scipy.io.wavfile.write": 0, "torchaudio.save": 0, "librosa.output.write_wav": 0,
    # array writers of scipy.io: the path first (an Evaluator's `savemat(fn + '.mat', {'reward': results})`)
    "scipy.io.savemat": 0, "scipy.io.mmwrite": 0, "scipy.io.matlab.savemat": 0,
}
FILE_WRITE_METHODS = frozenset({"save_pretrained", "savefig", "to_csv", "write_bytes", "write_text", "extractall",
                                "save_to_disk", "to_pickle", "to_feather", "to_excel", "to_hdf",  # (pandas' writers)
                                "save_lora_weights"})  # diffusers' LoRA checkpoints
# methods that write a file where they are given its path, and hand back text without one
# (Hugging Face datasets' and pandas' `ds.to_json(path)`; `df.to_json()` returns a string;
# pandas' `df.to_parquet()` returns bytes, `df.to_markdown()` and `df.to_html()` text)
PATH_GIVEN_WRITE_METHODS = frozenset({"to_json", "to_parquet", "to_markdown", "to_html"})
PATH_METHODS = frozenset({"write_bytes", "write_text"})  # pathlib's: the path is the object, not an argument
IN_MEMORY = frozenset({"io.BytesIO", "io.StringIO"})  # buffers: what is written to them is no file
SCRIPTED = frozenset({"torch.jit.script", "torch.jit.trace"})
# library helpers that write their first argument to the path second (`save_json(obj, path)`)
SERIALIZER = re.compile(r"^(?:save|write|dump)_(?:json|yaml|yml|pickle|pkl)$")
# makers of values whose `.save(path)` writes a file: animations, PIL images (also torchvision's converters)
SAVED_BY_METHOD = ("matplotlib.animation.", "PIL.Image.", "torchvision.transforms.functional.to_pil_image",
                   "torchvision.transforms.v2.functional.to_pil_image")
PIL_CONVERTERS = frozenset({"torchvision.transforms.ToPILImage", "torchvision.transforms.transforms.ToPILImage",
                            "torchvision.transforms.v2.ToPILImage"})  # instances: called on a tensor, a PIL image
# a PIL image's methods that return a new image (whose `.save(path)` writes a file in turn)
IMAGE_METHODS = frozenset({"convert", "resize", "crop", "rotate", "transpose", "copy", "filter", "quantize", "reduce"})
# tensorboard writers: made, they write an event file into their folder (the first argument)
EVENT_WRITERS = ("torch.utils.tensorboard.SummaryWriter", "tensorboardX.SummaryWriter",
                 "tensorflow.summary.create_file_writer", "tensorflow.summary.FileWriter",
                 "tensorflow.compat.v1.summary.FileWriter")


def file_write(facts: Facts, call: cst.Call) -> str | None:
    """What `call` is, when it writes a file (`torch.save`, `np.save`, `.save_pretrained()`, the
    opener of `with open(p, "w") as f:`), or None (also for a write into an in-memory buffer:
    `torch.save(state, io.BytesIO())`)."""
    if _opened_to_write(facts, call):
        return f"{facts.code(call.func)} for writing"
    what = _writer(facts, call)
    if what is None and (opener := _handed_opener(call)) is not None:
        return f"{facts.code(call.func)} into {facts.code(opener.func)}(..., {facts.code(opener.args[1].value)})"
    if what is None and (opener := _written_opener(call)) is not None:
        return f"{facts.code(opener.func)}(...).{call.func.attr.value}()"  # type: ignore[attr-defined]
    if what is None or in_memory(facts, written_path(facts, call)):
        return None
    return what


def _handed_opener(call: cst.Call) -> cst.Call | None:
    """The file opened for writing that `call` is handed straight, never named (`yaml.dump(cfg,
    open(p, "w"))`, `toml.dump(d, open(p, "w"))`: the call writes into it, and the open truncates
    the file on every process), or None. A write of this list so handed (`json.dump(d, open(p,
    "w"))`) is that write already."""
    return next((a.value for a in call.args if isinstance(a.value, cst.Call) and mt.is_open_for_writing(a.value)
                 and len(a.value.args) > 1), None)



def _written_opener(call: cst.Call) -> cst.Call | None:
    """The file opened for writing whose `write` (or `writelines`) `call` is, called straight on the
    opener, never named (`open(p, "wt").write(json.dumps(history))`, `gzip.open(p, "wt").write(s)`):
    the file is written, on every process, as a `with open(p, "w") as f: f.write(s)` is; or None
    (`open(p).read()`, `f.write(s)` of a handle the program names: `main_process_only`'s `opened`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("write", "writelines") \
            and isinstance(func.value, cst.Call) and mt.opens_for_writing(func.value):
        return func.value
    return None


def _opener_path(opener: cst.Call) -> cst.BaseExpression | None:
    """The path an opener given a write mode opens: its first argument (`open(p, "w")`), or the object
    where the mode is its only argument (`Path(p).open("w")`)."""
    opened = [a for a in opener.args if a.keyword is None and not a.star]
    if len(opened) == 1 and isinstance(opener.func, cst.Attribute) and mt.WRITE_MODE.fullmatch(
            mt.string_value(opened[0].value) or ""):
        return opener.func.value  # the mode alone: the object is the path
    return opened[0].value if opened else None


# a tensorboard writer's methods that add nothing to its events file
QUIET_WRITER_METHODS = frozenset({"flush", "close"})
# calls that read a value without logging through it (`isinstance(writer, SummaryWriter)`)
INSPECTING = frozenset({"isinstance", "hasattr", "getattr", "print", "id", "type", "repr", "str", "bool"})


def event_writer_uses(facts: Facts, maker: cst.Call) -> list[cst.Call]:
    """The calls that log through the tensorboard writer `maker` makes (`SummaryWriter(d)`): its
    methods called, `tb.add_scalar("loss", x, step)` (the object followed through names, attributes,
    returns and parameters: `ddpify.analysis.objects`), but `flush()` and `close()`, which add
    nothing; and each call of a function not of the program that is handed it (a library may log
    through it). A writer every one of whose uses runs on rank 0 only leaves the other processes an
    empty events file: noise, no curve logged twice. Empty where none is found."""
    flow = objects.of(facts)
    uses = []
    for call in facts.calls:
        if call is maker:
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value not in QUIET_WRITER_METHODS \
                and maker in flow.values(func.value):
            uses.append(call)
        elif not facts.user_functions(call) and facts.qualify(func) not in INSPECTING \
                and any(maker in flow.values(a.value) for a in call.args):
            uses.append(call)
    return uses

def _opened_to_write(facts: Facts, call: cst.Call) -> bool:
    """The item of a `with` that opens a file for writing (`with open(p, "w") as f:`,
    `with PathManager.open(p, "w") as f:`, `mt.opens_for_writing`) whose body writes the handle by
    no other write of this list (in `with open(p, "w") as f: json.dump(d, f)` the write is the dump)."""
    item = facts.parent(call)
    if not isinstance(item, cst.WithItem) or item.item is not call or not mt.opens_for_writing(call):
        return False
    block = facts.parent(item)
    handle = facts.code(item.asname.name) if item.asname is not None else None
    return not isinstance(block, cst.With) or handle is None or not any(
        _writer(facts, c) is not None and (target := written_path(facts, c)) is not None
        and facts.code(target) == handle for c in mt.findall(block.body, cst.Call))


def in_memory(facts: Facts, target: cst.BaseExpression | None) -> bool:
    """Is `target` an in-memory buffer: `io.BytesIO()`, `io.StringIO()`, or a name that only ever
    holds one (`buffer = io.BytesIO()`)?"""
    origins = facts.origins(target) if target is not None else []
    return bool(origins) and all(isinstance(o, cst.Call) and facts.qualify(o.func) in IN_MEMORY for o in origins)


def _writer(facts: Facts, call: cst.Call) -> str | None:
    qualified = facts.qualify(call.func)
    if qualified in FILE_WRITES:
        return qualified.replace("numpy.", "np.")
    if qualified in EVENT_WRITERS:
        return qualified.rsplit(".", 1)[-1]
    if _serializer(facts, call):
        return facts.code(call.func)
    if not isinstance(call.func, cst.Attribute):
        return None
    method = call.func.attr.value
    if method in FILE_WRITE_METHODS or method == "save" and _saves_itself_made(facts, call.func.value) \
            or method in PATH_GIVEN_WRITE_METHODS and (call.args and call.args[0].keyword is None
                                                       or mt.keyword(call, "path_or_buf") is not None):
        return f".{method}()"
    return None


def _saves_itself_made(facts: Facts, value: cst.BaseExpression) -> bool:
    """Was `value` made by a maker of values whose `.save(path)` writes a file (`Image.open(p)`,
    an animation, torchvision's PIL converters: `transforms.ToPILImage()(grid)`, `to_pil(grid)` with
    `to_pil = transforms.ToPILImage()`, `TF.to_pil_image(t)`), through names, or through the items of
    a list it was appended to (`imgs[0]` of `imgs.append(Image.open(buf))`, `frame` of `for frame in
    imgs:`: ddpify.analysis.objects)?"""
    def made(origins) -> bool:
        return any(isinstance(o, cst.Call) and (_saves_itself(facts.qualify(o.func)) or _converted_to_pil(facts, o)
                                                or _image_method_of(o) is not None and made([_image_method_of(o)]))
                   for o in origins)
    return made(facts.origins(value)) or isinstance(value, (cst.Subscript, cst.Name)) \
        and made(objects.of(facts).values(value))


def _image_method_of(call: cst.Call) -> cst.Call | None:
    """`Image.open(p)` of `Image.open(p).convert("RGB")`: the value a PIL image's method that
    returns a new image (`IMAGE_METHODS`) is called on, where it is a call itself; else None.
    Round 31's held-out diffusion template (31a; decision 0264): `image = Image.open(path).convert(
    "RGB")` then `image.save(f"{fid_dir}/{fname}")`, each validation image copied for FID, was no
    write: it stayed on every process, unnamed, and each process wrote every file."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in IMAGE_METHODS and isinstance(func.value, cst.Call):
        return func.value
    return None


def _converted_to_pil(facts: Facts, call: cst.Call) -> bool:
    """A call of an instance of torchvision's `ToPILImage`: `transforms.ToPILImage()(grid)`, or a
    name bound to one (`to_pil = T.ToPILImage()` ... `to_pil(grid)`)."""
    makers = [call.func] if isinstance(call.func, cst.Call) else \
        facts.origins(call.func) if isinstance(call.func, cst.Name) else []
    return any(isinstance(m, cst.Call) and facts.qualify(m.func) in PIL_CONVERTERS for m in makers)


def _saves_itself(qualified: str | None) -> bool:
    return qualified is not None and (qualified in SCRIPTED or qualified.startswith(SAVED_BY_METHOD))


# the keywords a write's path is passed by, where it is not passed by its place
PATH_KEYWORDS = ("f", "file", "fname", "filename", "path")


# inter-process file locks: a `with` of one lets one process at a time into its block
FILE_LOCKS = frozenset({"filelock.FileLock", "filelock.SoftFileLock", "filelock.UnixFileLock",
                        "filelock.WindowsFileLock", "filelock.AsyncFileLock", "filelock.AsyncSoftFileLock",
                        "portalocker.Lock", "portalocker.RLock", "portalocker.TemporaryFileLock",
                        "portalocker.BoundedSemaphore", "fasteners.InterProcessLock",
                        "fasteners.process_lock.InterProcessLock", "fasteners.InterProcessReaderWriterLock",
                        "oslo_concurrency.lockutils.external_lock"})


def under_file_lock(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` inside the block of a `with` that holds an inter-process file lock (`with
    portalocker.Lock(lockfile, timeout=300):`, `with FileLock(p + ".lock"):`, or a name that only
    ever holds one, `lock = FileLock(p); with lock:`)? The processes take it in turn: a write there
    is not every process writing at once (the first writes, the others find the file)."""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.With) and facts.is_inside(node, anc.body) and any(
                _file_lock(facts, item.item) for item in anc.items):
            return True
    return False


def lock_around(facts: Facts, stmt: cst.CSTNode) -> cst.With | None:
    """The outermost `with` around `stmt`, in its function (or at its module's level), that holds an
    inter-process file lock (`_file_lock`; also `with lock.acquire(timeout=10):`): `with
    FileLock(os.path.expanduser("~/data.lock")):`, Ray's idiom around a data set's download. A
    collective placed inside it cannot complete: the process that holds the lock waits there for the
    others, which wait for the lock. None where no such `with` is around it."""
    found = None
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(anc, cst.With) and any(_file_lock(facts, item.item) for item in anc.items):
            found = anc
    return found


def locked_on_every_way(facts: Facts, node: cst.CSTNode, depth: int = 3) -> bool:
    """Is `node` under an inter-process file lock (`under_file_lock`), or in a function of the
    program every call of which is, `depth` calls up (`with FileLock(p): transforms = fit(...)`,
    whose helper saves what it fitted): the processes still run it in turn."""
    if under_file_lock(facts, node):
        return True
    func = facts.scope(node)
    if depth == 0 or not isinstance(func, cst.FunctionDef):
        return False
    sites = facts.entries(func)
    return bool(sites) and all(locked_on_every_way(facts, site, depth - 1) for site in sites)


def _file_lock(facts: Facts, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "acquire":
        expr = expr.func.value  # `with lock.acquire(timeout=10):` holds `lock`
    origins = facts.origins(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else [expr]
    return bool(origins) and all(isinstance(o, cst.Call) and facts.qualify(o.func) in FILE_LOCKS for o in origins)


def written_path(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The path (or open file) a file write writes to, where it is passed (the object of
    `Path(p).write_bytes(data)`, the path opened in `with fs.open(p, mode="wb") as f:`, the
    keyword of `torch.save(obj=state, f=path)`)."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in PATH_METHODS:
        return call.func.value
    if _opened_to_write(facts, call):  # `open(p, "w")`, `Path(p).open("w")`
        return _opener_path(call)
    if (opener := _written_opener(call)) is not None:  # `open(p, "wt").write(s)`
        return _opener_path(opener)
    qualified = facts.qualify(call.func) or ""
    arg = mt.positional(call, FILE_WRITES.get(qualified, 1 if _serializer(facts, call) else 0))
    if arg is None and qualified in EVENT_WRITERS:
        arg = mt.keyword(call, "log_dir") or mt.keyword(call, "logdir")
    if arg is None and isinstance(call.func, cst.Attribute):  # `tar.extractall(path=d)`
        arg = mt.keyword(call, "path")
    if arg is None:  # `torch.save(obj=state, f=path)`, `np.save(file=p, arr=a)`: the path passed by keyword
        arg = next((found for kw in PATH_KEYWORDS if (found := mt.keyword(call, kw)) is not None), None)
    return arg.value if arg is not None else None


# downloads (and an archive unpacked) that write their files in place, with the position of where
# (None: by keyword only): a process reading one can find it half written; `torch.hub.download_url_to_file`,
# `wget.download` and `gdown.download` write a temporary file and move it into place, each process's copy
# whole, and so do Hugging Face Hub's `snapshot_download` / `hf_hub_download` (a lock and an `.incomplete`
# file per blob).
DOWNLOADS: dict[str, int | None] = {
    "urllib.request.urlretrieve": 1, "torchvision.datasets.utils.download_url": 1,
    "torchvision.datasets.utils.download_and_extract_archive": 1, "shutil.unpack_archive": 1}
# scikit-learn's fetchers that write their cache under `data_home` (`~/scikit_learn_data`) in place:
# `fetch_california_housing` joblib.dumps `cal_housing.pkz` where another process that finds it
# `joblib.load`s it, and removes the archive another may be reading; so do the others here (a pickle
# dumped in place, an archive extracted in place and removed). Not `fetch_openml` (each response is
# written in a temporary folder and moved into place, scikit-learn 1.1 on), `fetch_covtype`
# (`os.rename` from a temporary folder) nor `fetch_file` (`_fetch_remote`'s temporary file).
DOWNLOADS.update({f"sklearn.datasets.{name}": None for name in (
    "fetch_california_housing", "fetch_kddcup99", "fetch_olivetti_faces", "fetch_rcv1", "fetch_20newsgroups",
    "fetch_20newsgroups_vectorized", "fetch_lfw_people", "fetch_lfw_pairs", "fetch_species_distributions")})
DESTINATIONS = ("filename", "root", "download_root", "extract_dir", "data_home")


def download(facts: Facts, call: cst.Call) -> str | None:
    """What `call` is when it downloads into a file of the disk in place (`DOWNLOADS`:
    `urlretrieve(url, path)`, torchvision's `download_url(url, root)`, ...; a torchvision data set
    built with `download=True`, which fetches its archive into `root` with
    `download_and_extract_archive` where the files are missing), or None; `urlretrieve(url)`
    without a file name writes a temporary file of its own, no shared one.

        datasets.CIFAR10(root="./data", train=True, download=True)    -> "CIFAR10(download=True)"
        datasets.CIFAR10(root="./data", train=True, download=False)   -> None (reads what is there)
    """
    qualified = facts.qualify(call.func) or ""
    if _data_set_download(qualified, call):
        return f"{qualified.rsplit('.', 1)[-1]}(download=True)"
    if qualified not in DOWNLOADS or qualified == "urllib.request.urlretrieve" and download_path(facts, call) is None:
        return None
    missing = mt.keyword(call, "download_if_missing")  # scikit-learn's fetchers: False only reads the cache
    if missing is not None and mt.is_name(missing.value, "False"):
        return None
    return qualified.rsplit(".", 1)[-1]


def _data_set_download(qualified: str, call: cst.Call) -> bool:
    """A torchvision data set class built with `download=True` (its `root` is where it writes)."""
    head, _, name = qualified.rpartition(".")
    flag = mt.keyword(call, "download")
    return head.startswith("torchvision.datasets") and name[:1].isupper() and flag is not None \
        and mt.is_name(flag.value, "True")


def download_path(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """Where a download of `DOWNLOADS` writes, where it is passed (by place or by keyword)."""
    qualified = facts.qualify(call.func) or ""
    place = 0 if _data_set_download(qualified, call) else DOWNLOADS.get(qualified, 1)
    arg = (mt.positional(call, place) if place is not None else None) or next((a for a in (mt.keyword(call, k) for k in DESTINATIONS) if a is not None), None)
    return arg.value if arg is not None else None


# files and folders removed: `shutil.rmtree(d)`, `os.remove(p)`, ... (the path first); removed on every
# process, all but the first fail on what the first has removed (`FileNotFoundError`), or one removes
# what another has just written there (`if d.exists(): shutil.rmtree(d)` then `d.mkdir()`)
DELETIONS = frozenset({"shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs"})


def deletion(facts: Facts, call: cst.Call) -> str | None:
    """What `call` is when it removes a file or folder of the disk (`DELETIONS`: `shutil.rmtree(d)`,
    `os.remove(p)`), or None; not `shutil.rmtree(d, ignore_errors=True)`, which no other process's
    removal fails, nor a path method (`p.unlink()`, a link's own question for `convert`)."""
    qualified = facts.qualify(call.func)
    ignore = mt.keyword(call, "ignore_errors")
    if qualified not in DELETIONS or ignore is not None and not mt.is_name(ignore.value, "False"):
        return None
    return qualified


def deletion_path(call: cst.Call) -> cst.BaseExpression | None:
    """The file or folder a call of `deletion` removes: its first argument (`path`, by keyword)."""
    arg = mt.positional(call, 0) or mt.keyword(call, "path")
    return arg.value if arg is not None else None


# links made: `os.symlink(src, dst)`, `os.link(src, dst)` (the link second), and pathlib's methods of
# these names, found on no other common object (`latest.symlink_to(ckpt.name)`: the link is the
# object); made on every process, all but the first fail on the link the first has made
LINKS = {"os.symlink": 1, "os.link": 1}
LINK_METHODS = frozenset({"symlink_to", "hardlink_to"})


def link(facts: Facts, call: cst.Call) -> str | None:
    """What `call` is when it makes a link on the disk (`os.symlink(src, dst)`, pathlib's
    `latest.symlink_to(ckpt.name)`), or None (`Path.is_symlink()`, `os.readlink(p)`: questions)."""
    qualified = facts.qualify(call.func)
    if qualified in LINKS:
        return qualified
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in LINK_METHODS and qualified is None:
        return f".{call.func.attr.value}()"
    return None


def link_path(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The link a call of `link` makes: `dst` of `os.symlink(src, dst)`, the object of `p.symlink_to(t)`."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in LINK_METHODS:
        return call.func.value
    arg = mt.positional(call, LINKS.get(facts.qualify(call.func) or "", 1)) or mt.keyword(call, "dst")
    return arg.value if arg is not None else None


def raced_folder(facts: Facts, call: cst.Call) -> str | None:
    """What `call` is when it makes a folder and fails where the folder exists (`os.makedirs(d)`,
    `os.mkdir(d)`, pathlib's `out_dir.mkdir(parents=True)`: no `exist_ok`, or a false one), or
    None (`os.makedirs(d, exist_ok=True)`; a `mkdir` method of the program's own; one in a `try`
    whose handler catches FileExistsError, `except OSError:`). Run on every
    process, all but the first fail on the folder the first has made (`FileExistsError`), also
    after a test that it is missing (`if not os.path.isdir(d): os.makedirs(d)`: every process may
    pass the test before any makes it). Both commands ask it: `convert` guards such a folder to the
    main process, or passes `exist_ok=True` to one made where it is missing; `check` reports it on
    every rank (DDP006; decision 0241)."""
    qualified = facts.qualify(call.func)
    if _failure_caught(facts, call):
        return None  # `try: os.makedirs(d)` / `except OSError:`: the slower process goes on
    if qualified == "os.mkdir":
        return qualified
    if qualified == "os.makedirs" and not tolerates_existing(facts, call):
        return qualified
    if qualified is None and mt.is_method_call(call, "mkdir") and not tolerates_existing(facts, call) \
            and not facts.user_functions(call):
        return "Path.mkdir"
    return None


# exceptions a handler that takes a failed folder creation catches (FileExistsError and its bases)
FOLDER_ERRORS = frozenset({"FileExistsError", "OSError", "IOError", "EnvironmentError", "Exception", "BaseException"})


def _failure_caught(facts: Facts, call: cst.Call) -> bool:
    """Is `call` in the body of a `try` whose first handler that catches FileExistsError (`except
    OSError:`, `except Exception:`, a bare `except:`, or a tuple holding one) lets the process go
    on: no `raise` in it, no `sys.exit(...)`, `exit()`, `quit()` or `os._exit(...)`? A handler that
    ends the process (pytorch_warmup's `except FileExistsError: sys.exit("out exists")`) is the
    race's failure, not its remedy."""
    child: cst.CSTNode = call
    for anc in facts.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.Try) and child is anc.body:
            handler = next((h for h in anc.handlers if h.type is None or any(
                (dotted(t) or "").rpartition(".")[2] in FOLDER_ERRORS
                for t in (h.type.elements if isinstance(h.type, cst.Tuple) else [h.type])
                for t in ([t.value] if isinstance(t, cst.Element) else [t]))), None)
            if handler is not None:
                return not _ends_the_process(facts, handler.body)
        child = anc
    return False


PROCESS_ENDS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def _ends_the_process(facts: Facts, block: cst.BaseSuite) -> bool:
    """Does `block`, a handler's body, raise or end the process whatever the error (`raise`,
    `sys.exit(...)`, `exit()`, `os._exit(1)` among its own statements)? Not one under a test there:
    `if e.errno != errno.EEXIST: raise` (the common `mkdir_p`) lets FileExistsError go on."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    small: list[cst.BaseSmallStatement] = [
        s for line in lines if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for s in line.body]
    return any(isinstance(s, cst.Raise) or isinstance(s, cst.Expr) and isinstance(s.value, cst.Call)
               and (facts.qualify(s.value.func) or dotted(s.value.func) or "") in PROCESS_ENDS for s in small)


def raced_folder_path(call: cst.Call) -> cst.BaseExpression | None:
    """The folder a call of `raced_folder` makes: `d` of `os.makedirs(d)`, the object of `d.mkdir()`."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "mkdir" and not mt.positional(call, 0):
        return call.func.value
    arg = mt.positional(call, 0) or mt.keyword(call, "name") or mt.keyword(call, "path")
    return arg.value if arg is not None else None


# the tests that a folder or file is there, as `made_where_missing` reads them
FOLDER_PROBES = frozenset({"os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.lexists"})


def made_where_missing(facts: Facts, call: cst.Call) -> bool:
    """Is `call` (`os.makedirs(d)`) the body of `if not os.path.exists(d):` (no `else`), the folder
    made where a test found it missing? Still a raced folder (`raced_folder`: every process may
    pass the test before any makes it), but one every process can make with `exist_ok=True` (the
    test already skips an existing one), with no guard and no barrier: `convert`'s remedy (a barrier
    in a helper that a logger calls at every print waits for processes that print less)."""
    stmt, target = facts.statement(call), mt.positional(call, 0)
    block = facts.parent(stmt) if stmt is not None else None
    owner = facts.parent(block) if block is not None else None
    if target is None or not isinstance(owner, cst.If) or owner.body is not block or owner.orelse is not None:
        return False  # (with an `else`, the branch taken must be the same everywhere)
    test = owner.test
    probe = test.expression if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) else None
    return isinstance(probe, cst.Call) and facts.qualify(probe.func) in FOLDER_PROBES and bool(probe.args) and \
        facts.code(probe.args[0].value) == facts.code(target.value)


def tolerates_existing(facts: Facts, call: cst.Call) -> bool:
    """Does `os.makedirs(...)` (or pathlib's `path.mkdir(...)`) accept a folder that exists:
    `exist_ok=` given (by keyword, or third positional: `os.makedirs(d, mode, exist_ok)`,
    `path.mkdir(mode, parents, exist_ok)`) and not the literal False, nor a name set to False or to
    a test (`exist_ok = run_id == ''`, pytorch-template's: False for a run named by the time)?"""
    arg = mt.positional(call, 2)
    given = [arg.value] if arg is not None else facts.keyword_given(call, "exist_ok").values
    return bool(given) and all(_not_false(facts, call, value) for value in given)


def _not_false(facts: Facts, call: cst.Call, value: cst.BaseExpression) -> bool:
    if mt.is_name(value, "False"):
        return False
    ref = facts.ref(value, facts.statement(call)) if isinstance(value, cst.Name) else None
    return not any(mt.is_name(value, "False") or isinstance(value, (cst.Comparison, cst.UnaryOperation))
                   for _, value, _ in (facts.writes(ref) if ref is not None else []))


def _serializer(facts: Facts, call: cst.Call) -> bool:
    """`save_json(obj, path)` imported from a library (not a function of the program, whose body
    says what it does): a helper named for writing an object to a file, given both."""
    return isinstance(call.func, cst.Name) and SERIALIZER.match(call.func.value) is not None \
        and facts.qualify(call.func) not in (None, call.func.value) and mt.positional(call, 1) is not None \
        and not facts.user_functions(call)


DATA_SETS = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
# calls that bring a data set's files from elsewhere (`prepared_by`), or unpack them
FETCHES = frozenset({"urllib.request.urlretrieve", "requests.get", "wget.download", "gdown.download",
                     "torch.hub.download_url_to_file", "torchvision.datasets.utils.download_url",
                     "torchvision.datasets.utils.download_and_extract_archive", "shutil.unpack_archive"})


def prepared_by(facts: Facts, call: cst.Call) -> cst.Call | None:
    """The first file write that building a data set runs, or None. `call` builds a class of the
    program that is a data set (`is_data_set`), and its
    `__init__`, or what it calls (its own methods, the program's functions; 3 calls down), writes a
    file: a data set that prepares its files the first time it is built and reads them back
    (Sentence-VAE's `PTB(...)` writes ptb.train.json and the vocabulary when they are missing).
    Every process building it at once would race: one reads what another is still writing.
    Or `call` runs a function of the program that fetches its data and writes it (3 calls down:
    a download, `FETCHES`, or an archive unpacked, `.extractall(dest)`), trains nothing (no backward,
    no optimizer built) and is called in no loop that trains (a report posted each epoch prepares no data):
    torchmf's `read_movielens_df()` downloads the zip where it is missing, extracts it, and reads
    the ratings back. Or, on the same terms, `call` builds a class of the program or runs a function
    of it that keeps a cache: writes a file where a test of that file's existence finds it missing,
    and reads it (hcnoh's `MNISTLoader()` parses the MNIST CSVs and pickles the arrays beside them where the
    pickles are missing, and loads the pickles where they are there)."""
    return _preparing(facts, call)[1]


def preparing(facts: Facts) -> frozenset[cst.FunctionDef]:
    """The functions that building such data sets runs (`prepared_by`): what they write is written
    by each node's first process before the others build theirs (rewrite download-first), so it is
    not guarded to the main process inside them. A helper among them that other code calls too
    (a `save(obj, path)` that also writes the checkpoints) is not one of them."""
    found: set[cst.FunctionDef] = set()
    roots: set[cst.FunctionDef] = set()
    for call in facts.calls:
        functions, write = _preparing(facts, call)
        if write is not None:
            found |= functions
            roots.update(facts.user_functions(call))
    # a helper the preparation shares with other code (RPipe's `save(obj, path)`, which writes the data
    # set's processed files and, called by `check()`, the checkpoints) is not the preparation's own, nor
    # what such a helper calls (a `Logger.__call__` that every part of the program calls, and the
    # `self.log(...)` it runs, which appends to the run's log: called from `__call__` alone, it was
    # taken for the preparation's, and every process appended every line; decision 0251)
    own = set(found)
    while shared := {f for f in own - roots if any(facts.scope(site) not in own for site in facts.call_sites(f))}:
        own -= shared
    return frozenset(own)


def _preparing(facts: Facts, call: cst.Call) -> tuple[frozenset[cst.FunctionDef], cst.Call | None]:
    """(the functions building the data set `call` builds, or the fetching function it calls, runs;
    the first file write among them), found once per call: `preparing` asks of every call, for
    main-process-only and again for download-first, and download-first's `prepared_by` again."""
    memo = facts.__dict__.setdefault("_prepares", {})
    if call not in memo:
        memo[call] = _prepares(facts, call)
    found: tuple[frozenset[cst.FunctionDef], cst.Call | None] = memo[call]
    return found


def _prepares(facts: Facts, call: cst.Call) -> tuple[frozenset[cst.FunctionDef], cst.Call | None]:
    """`_preparing`, not memoised."""
    functions = facts.user_functions(call)
    if not functions:
        return frozenset(), None
    seen, write, fetched, cached = _runs(facts, tuple(functions))
    if facts.builds(call) and all(is_data_set(facts, facts.enclosing_class(f)) for f in functions):
        return seen, write
    if (fetched or cached) and not any(facts.trains(f) for f in seen) and not _makes_optimizer(facts, seen) and \
            not any(facts.trains(loop) for loop in facts.enclosing_loops(call)):
        return seen, write  # (a fetch inside a training loop posts progress: no data set is prepared there)
    return frozenset(), None


def writes_files(facts: Facts, func: cst.FunctionDef) -> bool:
    """Does running `func` (its calls of the program's functions, 3 calls down) write a file?"""
    return _runs(facts, (func,))[1] is not None


def _makes_optimizer(facts: Facts, functions: frozenset[cst.FunctionDef]) -> bool:
    """Does one of `functions` build an optimizer? It trains, also where its steps run out of sight
    (`learner = Learner()`, whose forward steps the optimizer its `__init__` built, called as
    `learner(x)`): a `main()` that also fetches the data is no preparation to run on one process first."""
    return any(facts.scope(o) in functions for o in facts.optimizers)


def _runs(facts: Facts, functions: tuple[cst.FunctionDef, ...], depth: int = 3) \
        -> tuple[frozenset[cst.FunctionDef], cst.Call | None, bool, bool]:
    """(the functions that calling `functions` runs, `depth` calls down; the first file write among
    them; whether one of them fetches data; whether they keep a cache, writing a file whose
    existence they test and that they read): walked once per `functions`, however many calls run them (`preparing`
    asks of every call of the program)."""
    memo = facts.__dict__.setdefault("_runs", {})
    if functions in memo:
        return memo[functions]
    seen: set[cst.FunctionDef] = set()
    key, write, fetched = functions, None, False
    written: list[cst.BaseExpression] = []
    tested: list[cst.BaseExpression] = []
    read: list[cst.BaseExpression] = []
    while functions and depth >= 0:
        seen.update(functions)
        found: list[cst.FunctionDef] = []
        for func in functions:
            for inner in facts.calls_of(func):
                if file_write(facts, inner) is not None:
                    write = write or inner
                    if _names_its_file(facts, inner) and (path := written_path(facts, inner)) is not None:
                        written.append(_opened_path(facts, path, inner))
                if (path := existence_tested(facts, inner)) is not None:
                    tested.append(path)
                if (path := _read(facts, inner)) is not None:
                    read.append(path)
                fetched = fetched or fetches(facts, inner)
                found += [f for f in facts.user_functions(inner) if f not in seen and f not in found]
        functions, depth = tuple(found), depth - 1
    cached = any(same_file(facts, w, t) and any(same_file(facts, w, r) for r in read) for w in written for t in tested)
    memo[key] = frozenset(seen), write, fetched, cached
    return memo[key]


EXISTENCE_TESTS = frozenset({"os.path.exists", "os.path.isfile", "os.path.lexists"})
# readers given the path of the file they read (`pickle.load(f)` reads the `open(p, "rb")` it is handed)
PATH_READERS = frozenset({"torch.load", "numpy.load", "numpy.loadtxt", "joblib.load", "pandas.read_csv",
                          "pandas.read_pickle", "pandas.read_parquet"})


def _opened_path(facts: Facts, path: cst.BaseExpression, at: cst.CSTNode) -> cst.BaseExpression:
    """The path of the file a handle names, opened by the `with` around `at` (`f` of `with open(p,
    "wb") as f: pickle.dump(x, f)`, or of any opener given a write mode, `with gzip.open(p, "wb") as
    f:`: `p`), or `path` itself."""
    if not isinstance(path, cst.Name):
        return path
    for node in facts.ancestors(at):
        for item in node.items if isinstance(node, cst.With) else ():
            opener = item.item
            if item.asname is not None and mt.is_name(item.asname.name, path.value) \
                    and isinstance(opener, cst.Call) and (mt.is_call_of(opener, "open") or mt.opens_for_writing(opener)) \
                    and (opened := read_path(facts, opener)) is not None:
                return opened
    return path


def only_empties(facts: Facts, call: cst.Call) -> bool:
    """Is `call` the opener of a `with` that opens a file for writing and writes nothing into it
    (`with open(log_file, "w") as f: pass`: the file emptied, or made empty)?"""
    item = facts.parent(call)
    block = facts.parent(item) if isinstance(item, cst.WithItem) and item.item is call else None
    if not isinstance(block, cst.With) or not mt.opens_for_writing(call):
        return False
    body = block.body
    smalls = body.body if isinstance(body, cst.SimpleStatementSuite) else \
        [small for stmt in body.body for small in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt])]
    return all(isinstance(small, cst.Pass) for small in smalls)


def written_file(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The path of the file a file write writes (`written_path`; for a handle, the path its `with`
    opened: `p` of `with gzip.open(p, "wb") as f: pickle.dump(x, f)`), or None."""
    path = written_path(facts, call)
    return _opened_path(facts, path, call) if path is not None else None


def written_where_missing(facts: Facts, call: cst.Call) -> bool:
    """Does the file write `call` run only where a test of its own function found that very file
    missing: in the body of `if not os.path.exists(p):` (also `and`-ed with other tests), or in the
    `else` of `if p.exists():` (also `and`-ed with tests that read only the path's own names, `if p
    is not None and p.exists():`, false only where there is no path to write), `p` naming the file
    written (`same_file`; a handle's opened path, `with gzip.open(p, "wb") as f: pickle.dump(x,
    f)`)? A cache: a run that finds the file there does not write it again.

        if cache is not None and cache.exists():      # <- a run after the first finds it
            features = pickle.load(gzip.open(cache, "rb"))
        else:
            features = compute()
            if cache is not None:
                with gzip.open(cache, "wb") as f:
                    pickle.dump(features, f)           # <- written where missing

    Not a write after `if os.path.exists(p): return load(p)` (no `if` around it asks)."""
    path = written_file(facts, call)
    if path is None:
        return False
    func = facts.scope(call)
    own = {n.value for n in mt.findall(path, cst.Name)} | {n.value for o in facts.origins(path) for n in mt.findall(o, cst.Name)}
    child: cst.CSTNode = call
    for anc in facts.ancestors(call):
        if anc is func:
            return False
        if isinstance(anc, cst.If) and child is not anc.test:
            tests = mt.conjuncts(anc.test)
            in_body = facts.is_inside(call, anc.body)
            for i, test in enumerate(tests):
                negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                inner = test.expression if isinstance(test, cst.UnaryOperation) and negated else test
                tested = existence_tested(facts, inner) if isinstance(inner, cst.Call) else None
                if tested is None or not same_file(facts, tested, path):
                    continue
                others = tests[:i] + tests[i + 1:]
                if in_body and negated or not in_body and not negated and all(
                        {n.value for n in mt.findall(o, cst.Name)} <= own | {"None"} for o in others):
                    return True
        child = anc
    return False


def _read(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The path a call that reads a file reads (`open(p)` not for writing, `torch.load(p)`), or None."""
    if mt.is_call_of(call, "open") and not mt.is_open_for_writing(call) or facts.qualify(call.func) in PATH_READERS:
        return read_path(facts, call)
    return None


def existence_tested(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The path whose existence `call` tests (`os.path.exists(p)`, `os.path.isfile(p)`,
    pathlib's `p.exists()`, `p.is_file()`), or None."""
    if facts.qualify(call.func) in EXISTENCE_TESTS and (given := mt.positional(call, 0)) is not None:
        return given.value
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("exists", "is_file") and not call.args \
            and facts.qualify(call.func) is None:
        return call.func.value
    return None


def same_file(facts: Facts, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Do the paths `a` and `b` name the same file as far as their last parts are known: the
    same expression, or tails known for both that agree (`os.path.join(d, "x.pickle")` and
    `os.path.join(self.root, "x.pickle")`)?"""
    if facts.code(a) == facts.code(b):
        return True
    mine, theirs = path_tails(facts, a), path_tails(facts, b)
    return mine is not None and theirs is not None and any(not _differ(x, y) for x in mine for y in theirs)


def fetches(facts: Facts, call: cst.Call) -> bool:
    """Does `call` fetch data from elsewhere into files or memory (`FETCHES`: `urlretrieve`,
    `requests.get`, ...) or unpack an archive into files (`.extractall(dest)` of zipfile or tarfile)?"""
    return facts.qualify(call.func) in FETCHES or isinstance(call.func, cst.Attribute) and \
        call.func.attr.value == "extractall"


def is_data_set(facts: Facts, cls: cst.ClassDef | None, depth: int = 3) -> bool:
    """Does `cls` derive from torch's `Dataset`, directly or through the program's classes, or
    define `__getitem__` and `__len__` as a data set does (a DataLoader reads any such object)?"""
    if cls is None or depth < 0:
        return False
    if facts.method(cls, "__getitem__") and facts.method(cls, "__len__"):
        return True
    return any(facts.qualify(base.value) in DATA_SETS or
               is_data_set(facts, facts.classes.get((dotted(base.value) or "").rpartition(".")[2]), depth - 1)
               for base in cls.bases)


# --------------------------------------------------------------------------- which file a path names
#
# A barrier after a write waits for a later read that may read that file. Where neither the path
# written nor the path read can be evaluated, one thing is often known of each all the same: how its
# last part ends. AWD-LSTM's `logging(s)` appends to `os.path.join(CKPT_DIR, 'log.txt')`, and the
# corpus it then reads opens `os.path.join(path, 'train.txt')` (through `tokenize(path)`): files of
# other names, whatever the folders are. A path's tail is (text, whole): the text its last part ends
# with, and whether that text is the whole last part.

Tail = tuple[str, bool]
PATH_MAKERS = frozenset({"os.path.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "posixpath.join"})
SAME_FILE_CALLS = frozenset({"str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                             "os.path.expanduser"})
SAME_FILE_METHODS = frozenset({"resolve", "absolute", "expanduser"})  # pathlib's: the same last part
PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[a-zA-Z%]")
READ_PATH_KEYWORDS = ("file", "f", "fp", "fname", "filepath_or_buffer", "path", "filename")


def path_tails(facts: Facts, expr: cst.BaseExpression, depth: int = 4) -> frozenset[Tail] | None:
    """The tails of the paths `expr` may hold, or None where one of them cannot be told: a literal
    (`"log.txt"`, `"runs/log.txt"`), the last part given to `os.path.join(...)` or `Path(...)` or
    after pathlib's `/`, a string's literal end (`f"{d}/log.txt"`, `d + ".csv"`: a partial tail,
    `"{}/log.txt".format(d)`, `"%s.txt" % d`), `str(p)`, `Path(p).resolve()`; a name through every
    value it is given (a parameter by every call of its function, a default where a call gives
    none), `depth` names deep. Not an attribute (`args.save`: set where ddpify does not look)."""
    memo = facts.__dict__.setdefault("_path_tails", {})
    key = (expr, depth)
    if key not in memo:
        memo[key] = _tails(facts, expr, depth, True)
    return memo[key]


def _tails(facts: Facts, expr: cst.BaseExpression, depth: int, anchored: bool) -> frozenset[Tail] | None:
    """`anchored`: `expr` starts the last part (a separator, or nothing, comes before it)."""
    if isinstance(expr, cst.SimpleString):
        return _literal(mt.string_value(expr), anchored)
    if isinstance(expr, cst.FormattedString):
        last = expr.parts[-1] if expr.parts else None
        return _literal(last.value, anchored and len(expr.parts) == 1) if isinstance(last, cst.FormattedStringText) else None
    if isinstance(expr, cst.ConcatenatedString):
        return _tails(facts, expr.right, depth, False)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Add):
            return _tails(facts, expr.right, depth, False)
        if isinstance(expr.operator, cst.Divide):  # pathlib's `folder / "log.txt"`
            return _tails(facts, expr.right, depth, True)
        if isinstance(expr.operator, cst.Modulo) and (text := mt.string_value(expr.left)) is not None:
            fields = list(PERCENT_FIELD.finditer(text))
            return _literal(text[fields[-1].end():] if fields else text, anchored and not fields)
        return None
    if isinstance(expr, cst.Call):
        return _call_tails(facts, expr, depth, anchored)
    if isinstance(expr, cst.Name) and depth > 0:
        values = _values_of(facts, expr)
        if not values:
            return None
        found: set[Tail] = set()
        for value in values:
            tails = _tails(facts, value, depth - 1, anchored)
            if tails is None:
                return None
            found |= tails
        return frozenset(found)
    return None


def _call_tails(facts: Facts, call: cst.Call, depth: int, anchored: bool) -> frozenset[Tail] | None:
    func, qualified = call.func, facts.qualify(call.func) or dotted(call.func) or ""
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and (text := mt.string_value(func.value)) is not None:
        return _literal(text.rpartition("}")[2], anchored and "{" not in text)
    if isinstance(func, cst.Attribute) and func.attr.value in SAME_FILE_METHODS and not call.args:
        return _tails(facts, func.value, depth, anchored)
    given = [a for a in call.args if a.keyword is None]
    if any(a.star for a in given) or not given:
        return None
    if qualified in PATH_MAKERS:
        return _tails(facts, given[-1].value, depth, anchored or len(given) > 1)
    if qualified in SAME_FILE_CALLS and len(given) == 1:
        return _tails(facts, given[0].value, depth, anchored)
    return None


def _literal(text: str | None, anchored: bool) -> frozenset[Tail] | None:
    """The tail of a path whose string ends with `text`: after its last separator, the whole last
    part; none where it ends in a separator (a folder) or nothing is known."""
    if not text:
        return None
    head, sep, last = text.replace("\\", "/").rpartition("/")
    if sep and not last:
        return None
    return frozenset({(last.casefold(), anchored or bool(sep))})  # one file on a case-blind disk too


def _values_of(facts: Facts, name: cst.Name) -> list[cst.BaseExpression]:
    """Every value the name `name` may hold where it is read, or nothing where one of them is not
    known: bound by a loop, a `with`, an augmented assignment, or a parameter a call gives by `*`."""
    ref = facts.ref(name)
    if ref is None or facts.loops_binding(ref) or facts.entered(ref) or \
            any(isinstance(stmt, cst.AugAssign) for _, _, stmt in facts.writes(ref)):
        return []
    values = [value for _, value, _ in facts.writes(ref)]
    func = ref.scope
    params = {p.name.value: p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)} \
        if isinstance(func, cst.FunctionDef) else {}
    if not isinstance(func, cst.FunctionDef) or ref.name not in params:
        return values if values and not facts.unpacked_from(ref) and len(values) == len(facts.sources(ref)) else []
    sites = facts.call_sites(func)
    for call in sites:
        given = facts.argument_for(call, func, ref.name)
        if given is None and any(a.star for a in call.args):
            return []
        given = given if given is not None else params[ref.name].default
        if given is None:
            return []
        values.append(given)
    return values if sites else []


def written_paths(facts: Facts, stmt: cst.CSTNode, depth: int = 2) -> list[cst.BaseExpression] | None:
    """The paths the file writes of `stmt` write to, its own or those of the program's functions it
    calls (`depth` calls deep: `logging(s)` appending to its log); None where one of them is not
    known, or `stmt` writes nothing ddpify can name (a logger's method)."""
    return _written_paths(facts, stmt, depth) or None


def _written_paths(facts: Facts, node: cst.CSTNode, depth: int) -> list[cst.BaseExpression] | None:
    paths: list[cst.BaseExpression] = []
    for call in facts.calls_in(node):
        if file_write(facts, call) is not None:
            if not _names_its_file(facts, call) or (path := written_path(facts, call)) is None:
                return None
            paths.append(path)
            continue
        for func in facts.user_functions(call):
            if depth == 0 or (inner := _written_paths(facts, func, depth - 1)) is None:
                return None  # (a write further down is not known)
            paths += inner
    return paths


# writes whose path names the file they write: not a folder they fill (`shutil.copytree`, `save_pretrained(d)`, a
# SummaryWriter's, `shutil.copy(src, folder)`), nor a name they add a suffix to (`np.save("a")` writes a.npy,
# `savefig("plot")` plot.png)
EXACT_FILE_WRITES = frozenset({
    "torch.save", "torch.jit.save", "safetensors.torch.save_file", "joblib.dump", "pickle.dump", "json.dump",
    "numpy.savetxt", "torchvision.utils.save_image", "imageio.imwrite", "imageio.imsave", "imageio.mimwrite",
    "imageio.mimsave", "imageio.v2.imwrite", "imageio.v2.mimwrite", "imageio.v3.imwrite", "cv2.imwrite",
    "soundfile.write", "scipy.io.wavfile.write", "torchaudio.save"})
EXACT_FILE_METHODS = frozenset({"write_bytes", "write_text", "to_csv", "to_pickle", "to_feather", "to_excel", "to_hdf",
                                "to_json", "to_parquet", "save"})


def _names_its_file(facts: Facts, call: cst.Call) -> bool:
    """Does the path the write `call` is given name the very file it writes (`EXACT_FILE_WRITES`,
    a file opened for writing)?"""
    return _opened_to_write(facts, call) or (facts.qualify(call.func) or "") in EXACT_FILE_WRITES or \
        isinstance(call.func, cst.Attribute) and call.func.attr.value in EXACT_FILE_METHODS and \
        facts.qualify(call.func) is None


def read_path(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    """The path (or open file) a call that reads a file reads: `open(p)`, `torch.load(p)`,
    `Image.open(fp=p)`."""
    found = mt.positional(call, 0) or next((a for kw in READ_PATH_KEYWORDS if (a := mt.keyword(call, kw))), None)
    return found.value if found is not None else None


def other_files(facts: Facts, written: list[cst.BaseExpression], read: cst.BaseExpression | None) -> bool:
    """Do the paths `written` and the path `read` name other files, whatever their folders: every
    pair's tails differ (`log.txt` and `train.txt`; `log.txt` and a name ending `.pt`)?"""
    tails = [path_tails(facts, p) for p in written]
    theirs = path_tails(facts, read) if read is not None else None
    if theirs is None or not tails or any(t is None for t in tails):
        return False
    return all(_differ(a, b) for mine in tails if mine is not None for a in mine for b in theirs)


def _differ(a: Tail, b: Tail) -> bool:
    (text_a, whole_a), (text_b, whole_b) = a, b
    if whole_a and whole_b:
        return text_a != text_b
    if whole_a:
        return not text_a.endswith(text_b)
    if whole_b:
        return not text_b.endswith(text_a)
    return not (text_a.endswith(text_b) or text_b.endswith(text_a))
