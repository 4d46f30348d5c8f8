"""The questions `convert` and `check` both ask, answered once (`ddpify.analysis`): table tests
of positives and near misses, asked directly, and each answer as both commands see it."""

import libcst as cst
import pytest

from ddpify.analysis import forward, models, writes
from ddpify.analysis.accelerator import places_on_accelerator
from ddpify.analysis.distributed import is_distributed, joins_group
from ddpify.analysis.same_values import is_rank_test
from ddpify.analysis.same_values import same_everywhere, values
from ddpify.check import NOT_DISTRIBUTED, check
from ddpify.check.context import Context
from ddpify.convert import convert
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import parse_module

TRAIN = "\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(x).sum()\nloss.backward()\nopt.step()\n"

DISTRIBUTED = {
    "init": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
    "init_via_torch": "import torch\ntorch.distributed.init_process_group('nccl')\n",
    "collective": "import torch.distributed as dist\ndist.all_reduce(t)\n",
    "get_rank": "from torch.distributed import get_rank\nr = get_rank()\n",
    "ddp_wrap": "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
    "ddp_partial": "import functools\nfrom torch.nn.parallel import DistributedDataParallel\n"
                   "wrap = functools.partial(DistributedDataParallel, device_ids=[0])\n",
    "sampler": "from torch.utils.data import DistributedSampler\ns = DistributedSampler(ds)\n",
    "sampler_picked": "from torch.utils.data import DistributedSampler, RandomSampler\n"
                      "s = (DistributedSampler if ddp else RandomSampler)(ds)\n",
    "launcher_api": "from torch.distributed.launcher.api import elastic_launch, LaunchConfig\n"
                    "elastic_launch(LaunchConfig(1, 2, 2), main)()\n",
    "fsdp": "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n",
    "helper_barrier": "from project.distrib import DistribTorch\ndistr = DistribTorch.instance()\ndistr.barrier()\n",
}

NOT_DISTRIBUTED_SCRIPTS = {
    "import_only": "import torch.distributed as dist\n",
    "wrapper_imported_only": "from torch.nn.parallel import DistributedDataParallel as DDP\n",
    "is_available_only": "import torch.distributed as dist\nok = dist.is_available()\n",
    "spawn_only": "import torch.multiprocessing as mp\nmp.spawn(train, nprocs=2)\n",
    "own_name": "def distributed_sampler(ds):\n    return ds\ns = distributed_sampler(ds)\n",
    "data_parallel": "import torch.nn as nn\nmodel = nn.DataParallel(model)\n",
    "isinstance_only": "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                       "inner = model.module if isinstance(model, DDP) else model\n",
    "thread_barrier": "import threading\nb = threading.Barrier(2)\nb.wait()\n",
}


def _facts(code):
    return Facts(parse_module("import torch\n" + code))


@pytest.mark.parametrize("name", sorted(DISTRIBUTED))
def test_distributed(name):
    assert is_distributed(_facts(DISTRIBUTED[name]))


@pytest.mark.parametrize("name", sorted(NOT_DISTRIBUTED_SCRIPTS))
def test_not_distributed(name):
    assert not is_distributed(_facts(NOT_DISTRIBUTED_SCRIPTS[name]))


# the distributed scripts that join a process group (the others have DDP code but no group)
GROUPED = {"init", "init_via_torch", "launcher_api", "helper_barrier"}


@pytest.mark.parametrize("name", sorted(DISTRIBUTED) + sorted(NOT_DISTRIBUTED_SCRIPTS))
def test_joins_a_process_group(name):
    """(`mp.spawn(train, ...)` alone is not distributed, but its workers may join a group.)"""
    assert joins_group(_facts({**DISTRIBUTED, **NOT_DISTRIBUTED_SCRIPTS}[name])) is (name in GROUPED | {"spawn_only"})


@pytest.mark.parametrize("name", sorted(DISTRIBUTED) + sorted(NOT_DISTRIBUTED_SCRIPTS))
def test_convert_and_check_agree(name):
    """convert leaves a distributed script that joins a process group unchanged and check checks it;
    one with DDP code that never joins a group is converted (the runtime joins it: under torchrun as
    it was, every process would train alone) and check checks it; a script that is not distributed
    is converted and check says convert makes it a DDP script."""
    code = "import torch\nmodel = torch.nn.Linear(2, 2)\n" + {**DISTRIBUTED, **NOT_DISTRIBUTED_SCRIPTS}[name] + TRAIN
    distributed = name in DISTRIBUTED
    converted = convert(code)
    assert converted.changed is (name not in GROUPED)
    assert any("already distributed" in c.message for c in converted.changes) is (name in GROUPED)
    report = check(code)
    assert report.distributed is distributed
    assert (report.note == NOT_DISTRIBUTED) is not distributed


WRITES = {
    "torch_save": ("import torch\ntorch.save(model.state_dict(), 'm.pt')\n", "torch.save", "'m.pt'"),
    "jit_save": ("import torch\ntorch.jit.save(scripted, 'm.pt')\n", "torch.jit.save", "'m.pt'"),
    "scripted_save": ("import torch\ns = torch.jit.script(model)\ns.save('m.pt')\n", ".save()", "'m.pt'"),
    "traced_save": ("import torch\ntorch.jit.trace(model, x).save('m.pt')\n", ".save()", "'m.pt'"),
    "np_save": ("import numpy as np\nnp.save('a.npy', a)\n", "np.save", "'a.npy'"),
    "np_savez": ("from numpy import savez\nsavez('a.npz', a=a)\n", "np.savez", "'a.npz'"),
    "json_dump": ("import json\njson.dump(d, f)\n", "json.dump", "f"),
    "pickle_dump": ("import pickle\npickle.dump(d, f)\n", "pickle.dump", "f"),
    "joblib_dump": ("import joblib\njoblib.dump(args, 'models/args.pkl')\n", "joblib.dump", "'models/args.pkl'"),
    "shutil_copy": ("import shutil\nshutil.copyfile('a', 'b')\n", "shutil.copyfile", "'b'"),
    "shutil_copytree": ("import shutil\nshutil.copytree('out', '/output', dirs_exist_ok=True)\n", "shutil.copytree", "'/output'"),
    "save_image": ("from torchvision.utils import save_image\nsave_image(x, 'x.png')\n",
                   "torchvision.utils.save_image", "'x.png'"),
    "savefig": ("import matplotlib.pyplot as plt\nplt.savefig('p.png')\n", "matplotlib.pyplot.savefig", "'p.png'"),
    "mimsave": ("import imageio\nimageio.mimsave('a.gif', frames, fps=5)\n", "imageio.mimsave", "'a.gif'"),
    "scipy_imsave": ("import scipy.misc\nscipy.misc.imsave(path, image)\n", "scipy.misc.imsave", "path"),
    "plt_imsave": ("from matplotlib.pyplot import imsave\nimsave('s.jpg', img, cmap='gray')\n",
                   "matplotlib.pyplot.imsave", "'s.jpg'"),
    "save_pretrained": ("model.save_pretrained('out')\n", ".save_pretrained()", "'out'"),
    "to_csv": ("df.to_csv('t.csv')\n", ".to_csv()", "'t.csv'"),
    # pandas' other writers (a k-fold script's out-of-fold predictions, a submission): no write before
    "to_pickle": ("df.to_pickle('oof.pkl')\n", ".to_pickle()", "'oof.pkl'"),
    "to_feather": ("df.to_feather(path)\n", ".to_feather()", "path"),
    "to_excel": ("df.to_excel('results.xlsx', index=False)\n", ".to_excel()", "'results.xlsx'"),
    "to_hdf": ("df.to_hdf('store.h5', key='oof')\n", ".to_hdf()", "'store.h5'"),
    "to_parquet": ("df.to_parquet(out_dir + 'hist.parquet')\n", ".to_parquet()", "out_dir + 'hist.parquet'"),
    "to_markdown_path": ("df.to_markdown('scores.md')\n", ".to_markdown()", "'scores.md'"),
    "animation_save": ("import matplotlib.animation as animation\nanim = animation.ArtistAnimation(fig, ims)\n"
                       "anim.save('a.gif', dpi=80, writer='imagemagick')\n", ".save()", "'a.gif'"),
    "pil_save": ("from PIL import Image\nImage.fromarray(a).save(f'sample_{i}.png')\n", ".save()", "f'sample_{i}.png'"),
    "pil_name_save": ("from PIL import Image\nimg = Image.open(p)\nimg.save('b.png')\n", ".save()", "'b.png'"),
    "pil_each_of_a_list_save": ("from PIL import Image\nframes = []\nfor a in arrays:\n    frames.append(Image.fromarray(a))\n"
                                "for frame in frames:\n    frame.save(out)\n", ".save()", "out"),
    "pil_each_of_an_enumerated_list_save": ("from PIL import Image\nframes = []\nfor a in arrays:\n"
                                            "    frames.append(Image.fromarray(a))\nfor i, frame in enumerate(frames):\n"
                                            "    frame.save(f'{i}.png')\n", ".save()", "f'{i}.png'"),
    "pil_each_of_zipped_lists_save": ("from PIL import Image\nframes = []\nfor a in arrays:\n"
                                      "    frames.append(Image.fromarray(a))\nfor frame, path in zip(frames, paths):\n"
                                      "    frame.save(path)\n", ".save()", "path"),
    "to_pil_image_instance_save": ("import torchvision.transforms as transforms\ngrid_img = transforms.ToPILImage()(grid)\n"
                                   "grid_img.save(save_path)\n", ".save()", "save_path"),
    "to_pil_name_save": ("from torchvision import transforms as T\nto_pil = T.ToPILImage()\nto_pil(x).save('a.png')\n",
                         ".save()", "'a.png'"),
    "to_pil_image_save": ("import torchvision.transforms.functional as TF\nTF.to_pil_image(t).save(p)\n", ".save()", "p"),
    "soundfile_write": ("import soundfile as sf\nsf.write('a.wav', y, 16000)\n", "soundfile.write", "'a.wav'"),
    "wavfile_write": ("from scipy.io import wavfile\nwavfile.write(path, 16000, y)\n", "scipy.io.wavfile.write", "path"),
    "savemat": ("from scipy.io import savemat\nsavemat(fn + '.mat', {'reward': results})\n", "scipy.io.savemat", "fn + '.mat'"),
    "scipy_io_mmwrite": ("import scipy.io\nscipy.io.mmwrite('a.mtx', m)\n", "scipy.io.mmwrite", "'a.mtx'"),
    "torchaudio_save": ("import torchaudio\ntorchaudio.save('a.wav', wave, 16000)\n", "torchaudio.save", "'a.wav'"),
    "write_png": ("from torchvision.io import write_png\nwrite_png(img, 'a.png')\n", "torchvision.io.write_png", "'a.png'"),
    "path_write_bytes": ("from pathlib import Path\nPath('m.pt').write_bytes(data)\n", ".write_bytes()", "Path('m.pt')"),
    "path_write_text": ("import pathlib\nout = pathlib.Path('log.txt')\nout.write_text(s)\n", ".write_text()", "out"),
    "datasets_to_json": ("ds.to_json(out_dir + 'mixed.json')\n", ".to_json()", "out_dir + 'mixed.json'"),
    "save_to_disk": ("ds.save_to_disk('data/mixed')\n", ".save_to_disk()", "'data/mixed'"),
    "extractall_path": ("import tarfile\ntar = tarfile.open('a.tar')\ntar.extractall(path='out')\n", ".extractall()", "'out'"),
}

NOT_WRITES = {
    "own_save": "class Saver:\n    def save(self, p):\n        pass\nSaver().save('m.pt')\n",
    "own_save_enumerated": "class Saver:\n    def save(self, p):\n        pass\nfor i, s in enumerate([Saver()]):\n"
                           "    s.save(str(i))\n",
    "pil_list_index_saved": "from PIL import Image\nframes = [Image.fromarray(a)]\nfor frame, i in enumerate(frames):\n"
                            "    frame.save(p)\n",  # the index, not the item
    "json_dumps": "import json\ns = json.dumps(d)\n",
    "joblib_load": "import joblib\nargs = joblib.load('models/args.pkl')\n",
    "np_load": "import numpy as np\na = np.load('a.npy')\n",
    "loadmat": "from scipy.io import loadmat\nd = loadmat('points.mat')\n",
    "torch_load": "import torch\nm = torch.load('m.pt')\n",
    "step": "opt.step()\n",
    "print": "print('saved')\n",
    "to_json_text": "text = df.to_json()\n",
    "to_markdown_text": "print(df.to_markdown())\n",
    "to_parquet_bytes": "data = df.to_parquet()\n",
    "imread": "import imageio\nimg = imageio.imread('a.png')\n",
    "animation_pause": "import matplotlib.animation as animation\nanim = animation.FuncAnimation(fig, f)\nanim.pause()\n",
    "pil_show": "from PIL import Image\nImage.fromarray(a).show()\n",
    "to_pil_show": "import torchvision.transforms as transforms\ntransforms.ToPILImage()(grid).show()\n",
    "own_converter_save": "class Conv:\n    def __call__(self, x):\n        return Saver()\nConv()(x).save(p)\n",
    "own_save_in_a_loop": "class Saver:\n    def save(self, p):\n        pass\nfor s in [Saver()]:\n    s.save(p)\n",
    "soundfile_read": "import soundfile as sf\ny, sr = sf.read('a.wav')\n",
    "buffer_save": "import io\nimport torch\nbuffer = io.BytesIO()\ntorch.save(model, buffer)\n",
    "buffer_inline": "import io\nimport torch\ntorch.save(model, io.BytesIO())\n",
    "string_buffer_dump": "import io\nimport json\nout = io.StringIO()\njson.dump(d, out)\n",
}


def _last_call(code):
    facts = Facts(parse_module(code))
    return facts, facts.statement(facts.calls[-1]).body[0].value


@pytest.mark.parametrize("name", sorted(WRITES))
def test_file_write(name):
    code, what, path = WRITES[name]
    facts, call = _last_call(code)
    assert writes.file_write(facts, call) == what
    assert facts.code(writes.written_path(facts, call)) == path


@pytest.mark.parametrize("name", sorted(NOT_WRITES))
def test_not_a_file_write(name):
    facts = Facts(parse_module(NOT_WRITES[name]))
    assert not any(writes.file_write(facts, c) for c in facts.calls)


IN_MEMORY = ("buffer_save", "buffer_inline", "string_buffer_dump")


@pytest.mark.parametrize("name", IN_MEMORY)
def test_neither_command_takes_a_write_into_memory_for_a_file_write(name):
    """check does not report it (DDP006), convert leaves it on every process."""
    assert check(DDP_HEAD + NOT_WRITES[name]).findings == []
    assert "is_main_process" not in convert(SINGLE_HEAD + NOT_WRITES[name]).code


DDP_HEAD = "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
SINGLE_HEAD = "import torch\nmodel = torch.nn.Linear(2, 2)\n" + TRAIN


@pytest.mark.parametrize("name", sorted(WRITES))
def test_check_finds_and_convert_guards_the_same_writes(name):
    """Every file write is DDP006 on every rank for check, and under is_main_process() after convert."""
    code = WRITES[name][0]
    assert [f.code for f in check(DDP_HEAD + code).findings] == ["DDP006"]
    converted = convert(SINGLE_HEAD + code).code
    assert "if is_main_process():" in converted
    assert ("atomic_write" in converted) is (name == "torch_save")


# "same on every process": one function (`analysis.same_values`), asked by convert with
# `wide=False` (its core: a value wrongly proven shared is a hang there) and by check with
# `wide=True`; both refuse the same values first (decision 0017)
SAME_HEAD = ("import argparse\nimport os\nimport torch\nimport torch.distributed as dist\n"
             "args = argparse.ArgumentParser().parse_args()\nloader = torch.utils.data.DataLoader(ds)\n"
             "rank = os.environ['RANK']\nloaders = {'test': torch.utils.data.DataLoader(ds)}\n"
             "saver = torch.utils.data.DataLoader(ds) if rank == '0' else None\n")
SHARED = {
    "argument": "args.epochs > 3",
    "ranking_option": "args.ranking_loss > 0",  # names are not meaning: not a rank
    "ranked_option": "args.ranked > 0",
    "loader_length": "len(loader) > 10",
    "literal": "True",
    "counter": "step % 10 == 0",
    "epoch_counter": "i == 4",
    "loader_tested_for_none": "loader is not None",  # an object on every process, whatever it holds
    "displayed_loader_tested_for_none": "None != loaders['test']",
}
DIFFERS = {
    "loss": "loss.item() > 1.0",
    "rank_call": "dist.get_rank() == 0",
    "local_rank": "args.local_rank == 0",
    "rank_environment": "int(os.environ['RANK']) == 0",
    "local_rank_environment": "os.environ.get('LOCAL_RANK') == '0'",
    "rank_attribute": "self.rank == 0",  # assigned in __init__ from the caller's LOCAL_RANK
    "rank_converted": "int(rank) == 0",
    "main_process_call": "is_main_process()",
    "made_on_one_rank_tested_for_none": "saver is not None",
    "return_tested_for_none": "loss.item() is None",  # a method's return may be None
    "loader_compared_to_a_loader": "loader == saver",
}
ONLY_CHECK_PROVES = {  # the documented difference (`wide=True`): convert stays conservative here
    "checkpoint_entry": "ckpt['stop']",
    "after_a_collective": "flag.item() > 0",
    "launcher_environment": "os.environ.get('MAX_STEPS') == '5'",
    "ranking_environment": "os.environ.get('RANKING_MODE') == 'x'",  # not a rank variable
}


def _test_of(expression):
    code = SAME_HEAD + ("class Trainer:\n    def __init__(self, rank):\n        self.rank = rank\n\n"
                        "    def fit(self):\n        step = 0\n        for i in range(5):\n            step += 1\n"
                        "            loss = model(x)\n            ckpt = torch.load('c.pt')\n"
                        "            flag = torch.tensor(float(loss))\n            dist.all_reduce(flag)\n"
                        "            if " + expression + ":\n                pass\n\n\n"
                        "Trainer(int(os.environ['LOCAL_RANK'])).fit()\n")
    facts = Facts(parse_module(code))
    test = next(n for n in facts.loops[-1].body.body if isinstance(n, cst.If)).test
    return facts, test


def _answers(expression):
    """(convert's answer, check's answer): the one function, with and without `wide`."""
    facts, test = _test_of(expression)
    context = Context(facts)
    assert context.values is values(facts)  # check asks the one answer, not a copy
    return same_everywhere(facts, test), context.values.same_everywhere(test)


@pytest.mark.parametrize("name", sorted(SHARED))
def test_same_on_every_process(name):
    assert _answers(SHARED[name]) == (True, True)


@pytest.mark.parametrize("name", sorted(DIFFERS))
def test_differs_between_processes(name):
    assert _answers(DIFFERS[name]) == (False, False)


@pytest.mark.parametrize("name", sorted(ONLY_CHECK_PROVES))
def test_only_check_proves(name):
    assert _answers(ONLY_CHECK_PROVES[name]) == (False, True)


# a parameter tested against None (a model zoo's `train(net, config, device, trainloader,
# testloader=None)` evaluates `if ... and testloader != None or ...`): the same on every process
# where every call hands it an object, else as shared as what the calls pass (decision 0174)
NONE_PARAMETER = ("import torch\n\n\ndef train(net, testloader=None):\n    for epoch in range(2):\n"
                  "        if testloader != None:\n            pass\n\n\n{}\n")


@pytest.mark.parametrize("calls, shared", [
    ("train(net, torch.utils.data.DataLoader(ds))\ntrain(net, testloader=Net())", True),
    ("loaders = {'test': torch.utils.data.DataLoader(ds)}\ntrain(net, loaders['test'])", True),
    # the default None on one call, which every process makes: None alike (decision 0191)
    ("train(net, torch.utils.data.DataLoader(ds))\ntrain(net)", True),
    ("train(net, torch.utils.data.DataLoader(ds))\nif torch.distributed.get_rank() == 0:\n    train(net)", False),
    ("train(net, torch.utils.data.DataLoader(ds) if torch.distributed.get_rank() == 0 else None)", False),
    ("train(net, make_loader())", False),  # a function's return may be None
])
def test_a_parameter_tested_against_none_is_shared_where_every_call_hands_it_an_object(calls, shared):
    facts = Facts(parse_module(NONE_PARAMETER.format(calls)))
    test = next(n for n in facts.loops[0].body.body if isinstance(n, cst.If)).test
    assert same_everywhere(facts, test) is shared


NONE_ATTRIBUTE = ("import torch\n\n\nclass Trainer:\n    def __init__(self, model, val_loader=None):\n"
                  "        self.model = model\n        self.val_loader = val_loader\n{method}\n"
                  "    def fit(self):\n        for epoch in range(2):\n            if self.val_loader is not None:\n"
                  "                pass\n\n\n{calls}\n")


@pytest.mark.parametrize("method, calls, shared", [
    ("", "Trainer(net, torch.utils.data.DataLoader(ds)).fit()", True),
    # a default None on one construction, which every process makes: None alike (decision 0191)
    ("", "Trainer(net, torch.utils.data.DataLoader(ds)).fit()\nTrainer(net).fit()", True),
    ("", "Trainer(net).fit()\nif torch.distributed.get_rank() == 0:\n    Trainer(net, torch.utils.data.DataLoader(ds)).fit()",
     False),
    ("\n    def drop(self):\n        self.val_loader = None\n", "Trainer(net, torch.utils.data.DataLoader(ds)).fit()", False),
    # None from a construction, an object from a method some processes may call (decision 0191)
    ("\n    def setup(self):\n        self.val_loader = torch.utils.data.DataLoader(ds)\n",
     "t = Trainer(net)\nif torch.distributed.get_rank() == 0:\n    t.setup()\nt.fit()", False),
])
def test_an_attribute_tested_against_none_is_shared_where_its_class_only_ever_stores_an_object(method, calls, shared):
    """A trainer's `if self.val_loader is not None:` around its validation, `self.val_loader` set in
    `__init__` from what every construction passes (decision 0174), or None alike: a construction
    that passes none, where every process makes it (decision 0191)."""
    facts = Facts(parse_module(NONE_ATTRIBUTE.format(method=method, calls=calls)))
    test = next(n for n in facts.loops[0].body.body if isinstance(n, cst.If)).test
    assert same_everywhere(facts, test) is shared


# a configuration deep-copied and updated per run of a grid (`cfg = copy.deepcopy(CONFIG)`,
# `cfg.update(override)`): a holder of what it is given, as shared as that and what fills it
# (decision 0191); the test around an evaluation every few epochs
DEEP_COPIED = ("import copy\nimport os\nimport random\n\nCONFIG = {{'epochs': 4, 'eval_every': 2}}\n\n\n"
               "def run(override):\n    cfg = copy.deepcopy({copied})\n    cfg.update({update})\n"
               "    for epoch in range(cfg['epochs']):\n        if epoch % cfg['eval_every'] == 0:\n            pass\n\n\n"
               "for override in [{{'eval_every': 1}}, {{'lr': 0.1}}]:\n    run(override)\n")


@pytest.mark.parametrize("copied, update, shared", [
    ("CONFIG", "override", True),
    ("CONFIG", "eval_every=random.randint(1, 3)", False),  # a draw of each process's own
    ("dict(CONFIG, rank=int(os.environ['RANK']))", "override", False),  # a copy of a rank
])
def test_a_configuration_deep_copied_and_updated_is_as_shared_as_what_it_holds(copied, update, shared):
    facts = Facts(parse_module(DEEP_COPIED.format(copied=copied, update=update)))
    test = next(n for n in facts.loops[0].body.body if isinstance(n, cst.If)).test
    assert same_everywhere(facts, test) is shared


# the command line handed back by a helper that names it first (`args = parser.parse_args()` ...
# `return args`: the seventeenth sweep's DDPM package), and attributes the program sets on it: one
# set to a draw differs however shared the object (`args.seed = random.randint(...)`), the others not
ARGS_HELPER = ("import argparse\nimport random\nimport torch\n\n\ndef get_args():\n"
               "    parser = argparse.ArgumentParser()\n    args = parser.parse_args()\n"
               "    if args.seed is None:\n        args.seed = random.randint(1, 100)\n    return args\n\n\n"
               "def main(args):\n    for step in range(5):\n        if {}:\n            pass\n\n\n"
               "args = get_args()\nargs.every = random.randint(1, 3)\nargs.tag = 'run'\nmain(args)\n")
ARGS_HELPER_TESTS = {  # the test: shared
    "an_argument_of_the_helpers_name": ("step % args.eval_freq == 0", True),
    "an_attribute_set_to_a_literal": ("args.tag == 'run'", True),
    "an_attribute_set_to_a_draw_in_the_helper": ("step % args.seed == 0", False),
    "an_attribute_set_to_a_draw_by_the_caller": ("step % args.every == 0", False),
}


@pytest.mark.parametrize("name", sorted(ARGS_HELPER_TESTS))
def test_a_helpers_parsed_arguments_are_shared_but_what_the_program_sets_to_a_draw(name):
    expression, shared = ARGS_HELPER_TESTS[name]
    facts = Facts(parse_module(ARGS_HELPER.format(expression)))
    test = next(n for n in facts.loops[-1].body.body if isinstance(n, cst.If)).test
    assert (same_everywhere(facts, test), Context(facts).values.same_everywhere(test)) == (shared, shared)


# the same answers where they act: convert agrees a stop (`agree_on`) exactly where check reports
# one that can differ between ranks (DDP005), but for the documented difference
STOP_HEAD = ("import argparse\nimport os\nimport torch\n"
             "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
             "parser.add_argument('--ranking_loss', type=float, default=0.0)\n"
             "parser.add_argument('--epochs', type=int, default=3)\nargs = parser.parse_args()\n"
             "loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=2)\n"
             "model = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n")
STOP_DDP = ("import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "dist.init_process_group('gloo')\nmodel = DDP(model)\n")
STOP_LOOP = ("step = 0\nfor epoch in range(args.epochs):\n    for (x,) in loader:\n        step += 1\n"
             "        loss = model(x).sum()\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
             "        if {}:\n            break\n")
STOPS = {  # the test: (convert agrees it, check reports it)
    "argument": ("args.epochs > 3", False, False),
    "ranking_option": ("args.ranking_loss > 0", False, False),
    "loader_length": ("len(loader) > 10", False, False),
    "counter": ("step % 10 == 0", False, False),
    "loss": ("loss.item() > 1.0", True, True),
    "rank_environment": ("int(os.environ['RANK']) == 0", True, True),
    "local_rank": ("args.local_rank == 0", True, True),
    "launcher_environment": ("os.environ.get('MAX_STEPS') == '5'", True, False),  # wide=True proves it
}


@pytest.mark.parametrize("name", sorted(STOPS))
def test_convert_agrees_a_stop_where_check_reports_it(name):
    test, agreed, reported = STOPS[name]
    assert ("agree_on(" in convert(STOP_HEAD + STOP_LOOP.format(test)).code) is agreed
    assert ("DDP005" in [f.code for f in check(STOP_HEAD + STOP_DDP + STOP_LOOP.format(test)).findings]) is reported


# the length of a list every process grows and shrinks alike (a sliding window of validation
# losses) is a count: `len(window) >= n` is the same on every process, whatever the items hold
WINDOW = ("window = []\nfor epoch in range(args.epochs):\n    for (x,) in loader:\n        loss = model(x).sum()\n"
          "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n{}"
          "    if len(window) >= 3:\n        if window[-1] > window[0]:\n            break\n        del window[0]\n")
READER = "def rising(values, n):\n    return values[-1] > values[0] and len(values) >= n\n\n\n"
CHANGER = "def rising(values, n):\n    values.pop()\n    return len(values) >= n\n\n\n"
WINDOWS = {  # what the loop does to the window before the test: (code, the length is shared)
    "appended_each_epoch": ("    window.append(loss.item())\n", True),
    "appended_under_a_shared_test": ("    if epoch % 2 == 0:\n        window.insert(0, loss.item())\n", True),
    "read_by_a_function_of_the_program": ("    window.append(loss.item())\n    rising(window, 3)\n", True),
    "appended_under_a_loss_test": ("    if loss.item() < 1.0:\n        window.append(loss.item())\n", False),
    "appended_after_a_skip_on_the_loss": ("    if loss.item() > 9.0:\n        continue\n    window.append(loss.item())\n", False),
    "extended": ("    window.extend([loss.item()])\n", False),
    "bound_to_another_name": ("    window.append(loss.item())\n    kept = window\n", False),
    "changed_by_a_function_of_the_program": ("    window.append(loss.item())\n    rising(window, 3)\n", False),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_the_length_of_a_list_every_process_changes_alike_is_shared(name):
    body, shared = WINDOWS[name]
    helper = CHANGER if name.startswith("changed") else READER
    converted = convert(STOP_HEAD + helper + WINDOW.format(body)).code
    assert ("agree_on(len(window) >= 3)" not in converted) is shared
    assert "agree_on(window[-1] > window[0])" in converted  # the values themselves differ


# "is this a rank test": one function (`analysis.same_values.is_rank_test`); convert leaves a write
# under one as the user's guard, check does not report it (DDP006)
RANK_HEAD = ("import argparse\nimport os\nimport torch\n"
             "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
             "parser.add_argument('--ranking_loss', type=float, default=0.0)\nargs = parser.parse_args()\n"
             "rank = os.environ.get('RANK', '0')\nme = int(os.environ.get('LOCAL_RANK', 0))\n"
             "model = torch.nn.Linear(2, 2)\n")
RANK_TESTS = {
    "rank_converted": "int(rank) == 0",
    "rank_environment": "int(os.environ['RANK']) == 0",
    "local_rank_environment": "os.environ.get('LOCAL_RANK', '0') == '0'",
    "from_the_environment": "me == 0",
    "local_rank_option": "args.local_rank in (-1, 0)",
}
NOT_RANK_TESTS = {
    "ranking_option": "args.ranking_loss > 0",  # `ranking` is another word
    "asks_distributed": "args.local_rank != -1",  # the same on every process: is the run distributed
    "ranking_environment": "os.environ.get('RANKING_MODE') == 'x'",
}


def _save_under(test):
    return RANK_HEAD + TRAIN + "if " + test + ":\n    torch.save(model.state_dict(), 'm.pt')\n"


@pytest.mark.parametrize("name", sorted(RANK_TESTS) + sorted(NOT_RANK_TESTS))
def test_convert_and_check_agree_on_rank_tests(name):
    test = {**RANK_TESTS, **NOT_RANK_TESTS}[name]
    rank_test = name in RANK_TESTS
    code = _save_under(test)
    facts = Facts(parse_module(code))
    branch = mt.findall(facts.module, cst.If)[-1]
    assert is_rank_test(facts, branch.test) is rank_test
    assert Context(facts).ranks.rank_guard(branch.body.body[0]) is (branch if rank_test else None)
    assert ("is_main_process()" in convert(code).code) is not rank_test
    distributed = code.replace("import torch\n", "import torch\nimport torch.distributed as dist\n"
                               "dist.init_process_group('gloo')\n", 1)
    assert ("DDP006" in [f.code for f in check(distributed).findings]) is not rank_test


RANK_VALUES = {  # what a rank test is made of, asked directly (is_rank_test) and in check's view
    "get_rank": ("import torch.distributed as dist\n", "dist.get_rank() == 0", True),
    "self_rank": ("class T:\n    def __init__(self, rank):\n        self.rank = rank\n", "self.rank == 0", True),
    "ranked_attribute": ("", "args.ranked", False),
}


@pytest.mark.parametrize("name", sorted(RANK_VALUES))
def test_rank_values(name):
    head, test, expected = RANK_VALUES[name]
    facts = Facts(parse_module("import argparse\nargs = argparse.ArgumentParser().parse_args()\n" + head
                               + "if " + test + ":\n    pass\n"))
    branch = mt.findall(facts.module, cst.If)[-1]
    assert is_rank_test(facts, branch.test) is expected
    assert Context(facts).ranks.rank_dependent(branch.test) is expected


# what runs first (Facts.runs_before): source order in one function, call order across methods
ORDER = '''
class Trainer:
    def __init__(self):
        self.second()
        self.first()

    def first(self):
        a = 1

    def second(self):
        b = 2

    def twice(self):
        c = 3


t = Trainer()
t.twice()
t.twice()
'''


def test_methods_run_in_the_order_they_are_called_not_written():
    facts = Facts(parse_module(ORDER))
    a, b, c = (next(s for _, _, s in facts.assigns if facts.code(s).startswith(name)) for name in "abc")
    assert facts.runs_before(b, a) and not facts.runs_before(a, b)
    assert facts.runs_before(a, c)  # `twice` has two calls: no one call to follow, source order


# a top-level function the program sets onto its class is a method of it (`self` its instance);
# near misses: a class not of the program, a definition made after the patch, a function nested in another
PATCHED = {
    "setattr": ("class T:\n    pass\ndef f(self):\n    return self.model\nsetattr(T, 'f', f)\n", "T"),
    "assigned": ("class T:\n    pass\ndef f(self):\n    return self.model\nT.f = f\n", "T"),
    "the_later_of_two_definitions": ("class T:\n    pass\ndef f(self):\n    return 1\ndef f(self):\n"
                                     "    return self.model\nsetattr(T, 'f', f)\n", "T"),
    "a_class_not_of_the_program": ("from lib import T\ndef f(self):\n    return self.model\nsetattr(T, 'f', f)\n", None),
    "defined_after_the_patch": ("class T:\n    pass\nsetattr(T, 'f', f)\ndef f(self):\n    return self.model\n", None),
    "a_value_not_a_function": ("class T:\n    pass\ndef f(self):\n    return self.model\nsetattr(T, 'f', 3)\n", None),
}


@pytest.mark.parametrize("name", sorted(PATCHED))
def test_a_function_set_onto_a_class_is_its_method(name):
    code, cls = PATCHED[name]
    facts = _facts(code)
    use = next(a for a in facts.attributes if facts.code(a) == "self.model")
    found = facts.enclosing_class(use)
    assert (found.name.value if found is not None else None) == cls
    assert (facts.ref(use) is not None) == (cls is not None)


# what a call of a local runs: the inner function a method returned and the object keeps
# (`step_fn = self.train_step_fn`, set to `self._make_train_step_fn()`); near misses: a parameter,
# a lookup in a dict, a call of the program's that returns no function of it
HELD = {
    "inner_function_kept_on_self": ("""\
class R:
    def __init__(self):
        self.train_step_fn = self._make()
    def _make(self):
        def perform(x):
            return x
        return perform
    def run(self, validation):
        step_fn = self.train_step_fn
        return step_fn(1)
""", ["perform"]),
    "one_of_two_inner_functions": ("""\
class R:
    def __init__(self):
        self.train_fn, self.val_fn = self._train(), self._val()
    def _train(self):
        def train_step(x):
            return x
        return train_step
    def _val(self):
        def val_step(x):
            return x
        return val_step
    def run(self, validation):
        if validation:
            step_fn = self.val_fn
        else:
            step_fn = self.train_fn
        return step_fn(1)
""", ["train_step", "val_step"]),
    "a_parameter": ("def run(step_fn):\n    f = step_fn\n    return f(1)\n", []),
    "a_lookup": ("STEPS = {}\ndef run():\n    step_fn = STEPS['train']\n    return step_fn(1)\n", []),
    "a_call_returning_no_function_of_the_program": ("def make():\n    return len\ndef run():\n    step_fn = make()\n"
                                                    "    return step_fn(1)\n", []),
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_a_local_runs_the_inner_functions_it_holds(name):
    code, expected = HELD[name]
    facts = _facts(code)
    call = next(c for c in facts.calls if mt.is_name(c.func, "step_fn", "f"))
    assert sorted(f.name.value for f in facts.user_functions(call)) == expected


OPENS = {  # the builtin open's mode: one answer for convert's guards and check's writes
    "open(p, 'w')": True,
    "open(p, mode='ab')": True,
    "open(p, 'x')": True,
    "open(p)": False,
    "open(p, 'rb')": False,
    "open(p, encoding='ascii')": False,  # 'a' of "ascii" is no append mode
    "open('data.txt')": False,
}


@pytest.mark.parametrize("expr", sorted(OPENS))
def test_open_for_writing(expr):
    call = cst.parse_expression(expr)
    assert mt.is_open_for_writing(call) is OPENS[expr]
    assert mt.is_open_for_writing(call) == mt.opens_for_writing(call)


def test_a_file_read_with_an_encoding_is_read_on_every_process():
    """`with open(p, encoding="ascii")` reads: convert leaves it where every process runs it."""
    code = SINGLE_HEAD + "with open('cfg.txt', encoding='ascii') as f:\n    cfg = f.read()\n"
    assert "is_main_process" not in convert(code).code


PLACES_ON_ACCELERATOR = {
    "cuda_method": "model = Net().cuda()\n",
    "cuda_if_asked": "def train(net, cuda=False):\n    if cuda:\n        net.cuda()\n",
    "device_string": "device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n",
    "device_fstring": "model.to(f'cuda:{args.gpu}')\n",
    "argparse_default": "parser.add_argument('--device', default='cuda')\n",
    "mps": "device = 'mps' if torch.backends.mps.is_available() else 'cpu'\n",
    "cuda_tensor_type": "Tensor = torch.cuda.FloatTensor\n",
    "index": "x = x.to(0)\n",
    "framework": "from accelerate import Accelerator\naccelerator = Accelerator()\n",
    "amp": "scaler = torch.cuda.amp.GradScaler()\n",
    "configured_where_available": "device = torch.device(config['device'] if torch.cuda.is_available() else 'cpu')\n",
    "argument_where_available": "device = args.device if torch.backends.mps.is_available() else torch.device('cpu')\n",
}

PLACES_NOTHING = {
    "cpu_device": "device = torch.device('cpu')\nmodel = Net().to(device)\n",
    "nothing": "model = Net()\nx = torch.randn(4, 2)\n",
    "seeding": "torch.manual_seed(0)\ntorch.cuda.manual_seed_all(0)\n",
    "availability_read": "print(torch.cuda.is_available(), torch.cuda.device_count())\n",
    "backend_flags": "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.benchmark = True\n",
    "dtype_move": "x = x.to(torch.float32)\n",
    "text_about_it": "print('cuda is not used here')\n",
    "cpu_either_way": "device = torch.device('cpu' if torch.cuda.is_available() else 'cpu')\n",
    "other_test": "device = torch.device(config['device'] if use_gpu else 'cpu')\n",
}


@pytest.mark.parametrize("name", sorted(PLACES_ON_ACCELERATOR))
def test_places_on_accelerator(name):
    assert places_on_accelerator(_facts(PLACES_ON_ACCELERATOR[name]))


@pytest.mark.parametrize("name", sorted(PLACES_NOTHING))
def test_places_nothing_on_an_accelerator(name):
    assert not places_on_accelerator(_facts(PLACES_NOTHING[name]))


def test_a_program_places_on_an_accelerator_from_any_of_its_files(tmp_path):
    from ddpify.inputs.program import load
    (tmp_path / "helpers.py").write_text("def place(model):\n    return model.cuda()\n")
    (tmp_path / "train.py").write_text("import torch\nfrom helpers import place\nmodel = place(torch.nn.Linear(2, 2))\n")
    entry = tmp_path / "train.py"
    program = load(entry, entry.read_bytes())
    assert len(program.parts) == 2 and places_on_accelerator(Facts(program.merged, program))


# a name read off a module of the program (`Facts.qualify`): what the module's import names where it
# imports it from outside the program, through other modules of the program too; else as read
REEXPORTS = {  # (the program's other files, the call in train.py, its qualified name)
    "imported_from_torch": ({"ddp.py": "from torch.distributed import all_reduce\n"},
                            "import ddp\nddp.all_reduce(x)\n", "torch.distributed.all_reduce"),
    "a_module_of_a_package": ({"dist/__init__.py": "", "dist/comm.py": "import torch.distributed as tdist\n"},
                              "import dist.comm\ndist.comm.tdist.all_reduce(x)\n", "torch.distributed.all_reduce"),
    "through_another_module_of_the_program": (
        {"ddp.py": "from torch.distributed import all_reduce\n", "comm.py": "from ddp import all_reduce\n"},
        "import comm\ncomm.all_reduce(x)\n", "torch.distributed.all_reduce"),
    "near_miss_defined_by_the_module": ({"ddp.py": "def all_reduce(t):\n    pass\n"},
                                        "import ddp\nddp.all_reduce(x)\n", "ddp.all_reduce"),
    "near_miss_defined_by_the_module_it_imports_from": (
        {"ddp.py": "def all_reduce(t):\n    pass\n", "comm.py": "from ddp import all_reduce\n"},
        "import comm\ncomm.all_reduce(x)\n", "comm.all_reduce"),
}


@pytest.mark.parametrize("name", sorted(REEXPORTS))
def test_a_name_read_off_a_module_of_the_program(name, tmp_path):
    from ddpify.inputs.program import load
    files, code, qualified = REEXPORTS[name]
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    entry = tmp_path / "train.py"
    entry.write_text(code)
    program = load(entry, entry.read_bytes())
    facts = Facts(program.merged, program)
    call = next(c for c in facts.calls if facts.code(c).endswith("all_reduce(x)"))
    assert len(program.parts) > 1 and facts.qualify(call.func) == qualified


HEAD = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"


@pytest.mark.parametrize("source, stepped", [
    ("opt = torch.optim.Adam(model.parameters())\nopt.step()\n", True),
    ("def make(m):\n    return torch.optim.SGD(m.parameters(), lr=0.1)\nopt_g = make(model)\nopt_g.step()\n", True),
    ("class T:\n    def __init__(self, m):\n        self.o = torch.optim.Adam(m.parameters())\n"
     "    def fit(self):\n        self.o.step()\n", True),
    ("opt = torch.optim.Adam(model.parameters())\nscaler = torch.cuda.amp.GradScaler()\nscaler.step(opt)\n", True),
    ("optimizer = accelerator.prepare(optimizer)\noptimizer.step()\n", True),  # no object seen: the name
    # near misses: a scheduler, a module whose name says "optim", an environment
    ("opt = torch.optim.Adam(model.parameters())\nsched = torch.optim.lr_scheduler.StepLR(opt, 1)\nsched.step()\n", False),
    ("optim_net = torch.nn.Linear(2, 2)\noptim_net.step()\n", False),
    ("env.step(action)\n", False),
])
def test_an_optimizer_step_is_asked_of_the_object_core(source, stepped):
    """`Context.optimizer_steps` (check's DDP018, DDP019): a `.step()` of an object the core finds an
    optimizer in, whatever its name, or a GradScaler's step of one; by the name only where the
    core finds no object of a kind it knows."""
    facts = Facts(parse_module(HEAD + source))
    last = [c for c in facts.calls if mt.is_method_call(c, "step")][-1]
    assert (last in Context(facts).optimizer_steps) is stepped


# "is this a wrap": one function (`models.wrap_kind`), asked by convert's `holds_wrapper` (a later
# wrap keeps the wrapper, a wrap on some paths) and check's `written_wraps` and `bare_model`
WRAP_HEAD = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nimport apex\n"


@pytest.mark.parametrize("source, kind", [
    ("DDP(model, device_ids=[0])", "ddp"),
    ("apex.parallel.DistributedDataParallel(model)", "ddp"),
    ("import accelerate\naccelerator.prepare(model, opt)", "accelerate"),
    ("from accelerate import Accelerator\nacc.prepare_model(model)", "accelerate"),
    ("def wrap(m, distributed):\n    if not distributed:\n        return m\n    return DDP(m)\nwrap(model, True)", "ddp"),
    ("import accelerate\ndef wrap(m):\n    return accelerator.prepare(m)\nwrap(model)", "accelerate"),
    # near misses: a `prepare` of a program that does not import accelerate, DataParallel, a helper
    # that hands back its argument moved, a helper that hands back DataParallel, a placement
    ("dataset.prepare(model)", None),
    ("torch.nn.DataParallel(model)", None),
    ("def keep(m):\n    return m.cuda()\nkeep(model)", None),
    ("def wrap(m):\n    return torch.nn.DataParallel(m)\nwrap(model)", None),
    ("model.to('cuda')", None),
])
def test_a_wrap_is_one_answer_with_its_kind(source, kind):
    """`wrap_kind` of the last statement's call: torch's or apex's DDP, accelerate's `prepare` in a
    program that imports it, or a program function that returns one (two calls deep)."""
    from ddpify.analysis.models import ACCELERATE, DDP, is_wrap, wrap_kind
    facts = Facts(parse_module(WRAP_HEAD + source + "\n"))
    value = [c for c in facts.calls if facts.scope(c) is facts.module][-1]
    assert wrap_kind(facts, value) == {"ddp": DDP, "accelerate": ACCELERATE, None: None}[kind]
    assert is_wrap(facts, value) is (kind is not None)


PARAMETER_GRADIENTS = {  # code: the object whose parameters `torch.autograd.grad` differentiates, or None
    "g = torch.autograd.grad(loss, model.parameters())": "model",
    "g = torch.autograd.grad(loss, list(self.net.parameters()))": "self.net",
    "params = list(model.parameters())\ng = torch.autograd.grad(loss, params)": "model",
    "g = torch.autograd.grad(outputs=loss, inputs=model.parameters(), create_graph=False)": "model",
    # near misses: a penalty through the inputs, second order (backpropagated), parameters picked by hand
    "g = torch.autograd.grad(out.sum(), x, create_graph=True)": None,
    "g = torch.autograd.grad(loss, model.parameters(), create_graph=True)": None,
    "g = torch.autograd.grad(loss, [model.weight])": None,
    "g = grad(loss, model.parameters())": None,  # not torch's (no import)
}


@pytest.mark.parametrize("code", PARAMETER_GRADIENTS)
def test_parameter_gradients(code):
    """Decision 0125: first-order `torch.autograd.grad` of a model's parameters trains (a meta-learning
    outer step sets them by hand), and no backward runs for DDP to average."""
    facts = _facts(code + "\n")
    (call,) = [c for c in facts.calls if (dotted(c.func) or "").endswith("grad")]
    owner = facts.parameter_gradients(call)
    assert (None if owner is None else facts.code(owner)) == PARAMETER_GRADIENTS[code]
    assert facts.trains(facts.module) is (owner is not None)


# the length of a data set of the program's own class (the seventeenth sweep's phoneme notebook, decision
# 0121: `if len(val_set) > 0:` around the validation pass was taken to differ between processes): shared where
# the class never mentions ranks, world sizes or shards and nothing it is built from reads the rank
OWN_DATA = ("import os\nimport torch\nfrom torch.utils.data import Dataset\n\n\nclass Frames(Dataset):\n"
            "    def __init__(self, X{extra}):\n        self.X = X{part}\n\n    def __len__(self):\n"
            "        return len(self.X)\n\n    def __getitem__(self, i):\n        return self.X[i]\n\n\n"
            "data = Frames({args})\nfor step in range(5):\n    if len(data) > 0:\n        pass\n")
OWN_DATA_TESTS = {  # (extra parameter, what the class keeps of X, the arguments): shared
    "a_data_set_of_the_programs_class": ("", "", "torch.zeros(4, 2)", True),
    "one_that_shards_itself": (", rank", "[rank::2]", "torch.zeros(4, 2), int(os.environ['RANK'])", False),
    "one_built_from_what_reads_the_rank": ("", "", "torch.zeros(4 + int(os.environ['RANK']), 2)", False),
}


@pytest.mark.parametrize("name", sorted(OWN_DATA_TESTS))
def test_the_length_of_a_data_set_of_the_programs_class_is_shared_where_nothing_shards_it(name):
    extra, part, args, shared = OWN_DATA_TESTS[name]
    facts = Facts(parse_module(OWN_DATA.format(extra=extra, part=part, args=args)))
    test = next(n for n in facts.loops[-1].body.body if isinstance(n, cst.If)).test
    assert (same_everywhere(facts, test), Context(facts).values.same_everywhere(test)) == (shared, shared)


# (code: `WRITTEN(path)` and `READ(path)` mark the two paths, whether they name other files)
PATHS = {
    "joined_names": ("import os\nWRITTEN(os.path.join(ckpt, 'log.txt'))\nREAD(os.path.join(base, 'train.txt'))\n", True),
    "literal_and_fstring": ("WRITTEN('runs/log.txt')\nREAD(f'{out}/model.pt')\n", True),
    "pathlib_and_format": ("from pathlib import Path\nWRITTEN(Path(out) / 'log.txt')\nREAD('{}/ckpt.pth'.format(out))\n",
                           True),
    "a_parameter_by_every_call": ("import os\n\n\ndef tokenize(path):\n    READ(path)\n\n\n"
                                  "tokenize(os.path.join(d, 'train.txt'))\ntokenize(os.path.join(d, 'valid.txt'))\n"
                                  "log = os.path.join(ckpt, 'log.txt')\nWRITTEN(log)\n", True),
    "a_suffix_and_a_name": ("WRITTEN(run + '.csv')\nREAD('log.txt')\n", True),
    "percent_format": ("WRITTEN('%s.json' % name)\nREAD('runs/log.txt')\n", True),
    "str_of_a_resolved_path": ("from pathlib import Path\nWRITTEN(str(Path('a/log.txt').resolve()))\nREAD('b/data.txt')\n",
                               True),
    # near misses: the same name, or a path not known
    "the_same_name_on_a_case_blind_disk": ("import os\nWRITTEN('log.txt')\nREAD(os.path.join(d, 'LOG.TXT'))\n", False),
    "an_attribute": ("import os\nWRITTEN(os.path.join(d, 'log.txt'))\nREAD(args.log)\n", False),
    "a_name_made_of_names": ("WRITTEN('log.txt')\nREAD(f'{d}/{name}')\n", False),
    "a_suffix_the_name_ends_with": ("WRITTEN(name + '.txt')\nREAD('log.txt')\n", False),
    "a_folder": ("WRITTEN('runs/')\nREAD('runs/log.txt')\n", False),
    "a_parameter_given_by_star": ("def read(path):\n    READ(path)\n\n\nread('train.txt')\nread(*paths)\nWRITTEN('log.txt')\n",
                                  False),
    "a_parameter_left_to_its_default": ("def read(path='log.txt'):\n    READ(path)\n\n\nread('train.txt')\nread()\n"
                                        "WRITTEN('log.txt')\n", False),
    "a_loop_name": ("p = 'a.txt'\nfor p in files:\n    READ(p)\nWRITTEN('log.txt')\n", False),
    "an_augmented_name": ("p = 'a'\np += '.txt'\nREAD(p)\nWRITTEN('log.txt')\n", False),
    "unpacked_names": ("p, q = pair\nREAD(p)\nWRITTEN('log.txt')\n", False),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_paths_whose_last_parts_differ_name_other_files(name):
    """`writes.other_files`: a write and a later read whose paths end in other names (AWD-LSTM's
    `log.txt` and its corpus's `train.txt`, whatever the folders) are of other files; where either
    path cannot be told (an attribute, a name bound by a loop, a call given by `*`), or a tail is
    a suffix of the other's, they may be one."""
    code, other = PATHS[name]
    facts = Facts(parse_module(code))
    marked = {c.func.value: c.args[0].value for c in facts.calls if mt.is_call_of(c, "WRITTEN", "READ")}
    assert writes.other_files(facts, [marked["WRITTEN"]], marked["READ"]) is other


APART = {  # code (the calls a() and b() in it): are they in two branches of one `if`, one run taking one at most?
    "if c:\n    a()\nelse:\n    b()\n": True,
    "if c:\n    a()\nelif d:\n    b()\n": True,
    "if c:\n    x = 1\nelif d:\n    a()\nelse:\n    b()\n": True,
    "def f():\n    if c:\n        a()\n    else:\n        b()\n": True,
    # near misses: one branch holds both, a loop around the `if`, after the `if`, the test reads one
    "if c:\n    a()\n    b()\n": False,
    "for i in range(2):\n    if c:\n        a()\n    else:\n        b()\n": False,
    "if c:\n    a()\nb()\n": False,
    "if a():\n    pass\nelse:\n    b()\n": False,
    "if c:\n    a()\nelse:\n    def g():\n        b()\n": False,
}


@pytest.mark.parametrize("code", APART)
def test_calls_in_two_branches_of_one_if_are_apart(code):
    """`Facts.apart` (main-process-only's barriers: a read in the other branch of the `if` around a
    save waits for nothing), both ways round."""
    facts = _facts(code)
    a, b = ([c for c in facts.calls if dotted(c.func) == n][0] for n in ("a", "b"))
    assert facts.apart(a, b) is APART[code] and facts.apart(b, a) is APART[code]


@pytest.mark.parametrize("code, known", [
    ("torch.save(m, os.path.join(d, 'a.pt'))", True),
    ("with open('log.txt', 'a') as f:\n    f.write(s)", True),
    ("df.to_csv(os.path.join(d, 'scores.csv'))", True),
    ("np.save(os.path.join(d, 'a'), x)", False),  # writes a.npy: a suffix np.save adds
    ("plt.savefig('plot')", False),  # plot.png
    ("shutil.copytree(src, 'out')", False),  # fills a folder
    ("shutil.copy(src, 'out')", False),  # a folder, or a file
    ("model.save_pretrained('out')", False),
])
def test_a_writes_path_is_known_where_it_names_the_file_written(code, known):
    """`writes.written_paths`: a barrier may be left out only where the path a write is given names
    the file it writes: `np.save("a")` writes a.npy, `savefig("plot")` plot.png, `copytree` fills
    a folder, and a read of `a.npy` or of `out/config.json` would be taken for another file."""
    facts = Facts(parse_module("import os\nimport shutil\nimport numpy as np\nimport torch\n"
                               "import matplotlib.pyplot as plt\n" + code + "\n"))
    stmt = facts.module.body[-1]
    assert (writes.written_paths(facts, stmt) is not None) is known


@pytest.mark.parametrize("init, maybe_empty", [
    # a model a library's registry builds by name (MoCo v2's `models.__dict__[arch](num_classes=dim)`)
    ("self.q = models.__dict__[arch](num_classes=8)\nif mlp:\n    self.head = nn.Linear(8, 8)", False),
    ("self.q = getattr(models, arch)(num_classes=8)\nif mlp:\n    self.head = nn.Linear(8, 8)", False),
    ("self.q = models.resnet18(num_classes=8)\nif mlp:\n    self.head = nn.Linear(8, 8)", False),
    # near misses: every parameter under the `if`; a lookup in a table of the program's own
    ("if mlp:\n    self.head = nn.Linear(8, 8)", True),
    ("self.act = ACTIVATIONS[name]()\nif mlp:\n    self.head = nn.Linear(8, 8)", True),
    ("self.act = getattr(nn.functional, name)\nif mlp:\n    self.head = nn.Linear(8, 8)", True),
])
def test_a_module_may_have_no_parameter_only_where_each_is_made_under_an_if(init, maybe_empty):
    """`forward.parameters_on_some_paths`: DDP refuses a module with no parameter, so one whose
    `__init__` makes them all under an `if` is wrapped only where it has one. A model a library's
    registry builds by name (`models.__dict__[arch](...)`, `getattr(models, arch)(...)`) has its
    parameters on every path: no such guard, and the report says nothing of an `if`."""
    body = "".join(f"        {line}\n" for line in init.splitlines())
    facts = Facts(parse_module("import torch.nn as nn\nimport torchvision.models as models\n\n"
                               "class Net(nn.Module):\n    def __init__(self, arch, mlp, name):\n"
                               "        super().__init__()\n" + body))
    (cls,) = facts.findall(facts.module, cst.ClassDef)
    assert (forward.parameters_on_some_paths(facts, cls) is not None) is maybe_empty


# what a call of a parameter runs where the callers hand it a function their own body defines (the
# eighteenth sweep's pytorch_trainer: `def train(self, loader): def end_update(loss): loss.backward()
# ...; return self._do(loader, begin_update, end_update)`), though other functions of the program share
# its name; near misses: a caller that hands it something else, a parameter the function rebinds
PASSED_CLOSURES = {
    "closures_of_two_callers": ("""\
class T:
    def _do(self, loader, after):
        for x in loader:
            after(x)
    def train(self, loader):
        def after(x):
            return x
        return self._do(loader, after)
    def test(self, loader):
        def after(x):
            return None
        return self._do(loader, after)
""", ["after", "after"]),
    "a_caller_hands_something_else": ("""\
class T:
    def _do(self, loader, after):
        for x in loader:
            after(x)
    def train(self, loader, hook):
        def after(x):
            return x
        self._do(loader, after)
        return self._do(loader, hook)
""", []),
    "rebound_in_the_function": ("""\
class T:
    def _do(self, loader, after):
        after = print
        for x in loader:
            after(x)
    def train(self, loader):
        def after(x):
            return x
        return self._do(loader, after)
""", []),
}


@pytest.mark.parametrize("name", sorted(PASSED_CLOSURES))
def test_a_parameter_called_runs_the_inner_functions_its_callers_hand_it(name):
    code, expected = PASSED_CLOSURES[name]
    facts = _facts(code)
    call = next(c for c in facts.calls if mt.is_name(c.func, "after") and facts.scope(c).name.value == "_do")
    assert sorted(f.name.value for f in facts.user_functions(call)) == expected


# a trainer's copy of its arguments (sweep 19c's few-shot GNN: `trainer_dict = {"args": args, "logger": ...}`,
# `self.args = trainer_dict["args"]`, then `if i % self.args.eval_interval == 0:` got an agree_on, a collective
# every step): an attribute of `self` every write of which in its class is shared, an item of a dict display
KEPT = ("import argparse\nimport random\nimport torch\n\n\ndef parser():\n    return argparse.ArgumentParser().parse_args()\n\n\n"
        "class Trainer:\n    def __init__(self, trainer_dict, lr):\n        self.args = trainer_dict['args']\n"
        "        self.draw = trainer_dict['draw']\n        self.lr = lr\n        self.tag = 'run'\n        self.best = 0.0\n\n"
        "    def train(self, loss):\n        self.best = loss.item()\n        for i in range(5):\n            if {}:\n"
        "                pass\n\n\n"
        "def main(args):\n    trainer_dict = {{'args': args, 'draw': random.random(), 'logger': open('log.txt', 'w')}}\n"
        "    trainer = Trainer(trainer_dict, args.lr)\n    trainer.tag = random.random()\n    trainer.train(torch.ones(1))\n\n\n"
        "main(parser())\n")
KEPT_TESTS = {  # the test: shared
    "an_item_of_a_dict_display_kept_on_self": ("i % self.args.eval_interval == 0", True),
    "a_parameter_kept_on_self": ("i > self.lr", True),
    "an_item_set_to_a_draw": ("i > self.draw", False),
    "an_attribute_set_to_a_loss": ("i > self.best", False),
    "an_attribute_set_again_outside_the_class": ("self.tag == 'run'", False),
}


@pytest.mark.parametrize("name", sorted(KEPT_TESTS))
def test_what_a_class_keeps_on_self_from_shared_values_is_shared(name):
    expression, shared = KEPT_TESTS[name]
    facts = Facts(parse_module(KEPT.format(expression)))
    test = next(n for n in facts.loops[-1].body.body if isinstance(n, cst.If)).test
    assert same_everywhere(facts, test) is shared


# which modules follow a model that trains (sweep 20b's DQN: `targetQNetwork.load_state_dict(
# onlineQNetwork.state_dict())`, warned "no optimizer trains it ... wrap it if it should learn"): a module
# whose weights the program copies from a trained model, by its state dict or through a zip of parameters
COPIES = ("import torch\nfrom torch import nn\n\n\nclass Agent:\n    def __init__(self):\n"
          "        self.q = nn.Linear(4, 2)\n        self.q_target = nn.Linear(4, 2)\n        self.other = nn.Linear(4, 2)\n"
          "        self.opt = torch.optim.Adam(self.q.parameters())\n\n    def train(self, x):\n"
          "        loss = self.q(x).sum() + self.q_target(x).sum().detach() + self.other(x).sum().detach()\n"
          "        self.opt.zero_grad()\n        loss.backward()\n        self.opt.step()\n        {}\n")
COPIES_TESTS = {  # the statement: the attributes it makes a copy of the trained `self.q`
    "a_state_dict_loaded_from_the_trained_model": ("self.q_target.load_state_dict(self.q.state_dict())", {"self.q_target"}),
    "a_soft_update_through_a_zip_of_parameters": (
        "for t, p in zip(self.q_target.parameters(), self.q.parameters()): t.data.copy_(p.data)", {"self.q_target"}),
    "the_zip_in_either_order": ("for p, t in zip(self.q.parameters(), self.q_target.parameters()): t.data.copy_(p.data)",
                                {"self.q_target"}),
    "near_miss_a_state_dict_from_a_file": ("self.q_target.load_state_dict(torch.load('q.pt'))", set()),
    "near_miss_between_two_untrained_modules": ("self.other.load_state_dict(self.q_target.state_dict())", set()),
    "near_miss_the_trained_model_loaded_from_a_copy": ("self.q.load_state_dict(self.q_target.state_dict())", set()),
    "near_miss_a_zip_with_something_else": ("for t, g in zip(self.q_target.parameters(), grads): t.data.copy_(g)", set()),
}


@pytest.mark.parametrize("name", sorted(COPIES_TESTS))
def test_a_module_whose_weights_are_copied_from_a_trained_model_follows_it(name):
    statement, expected = COPIES_TESTS[name]
    facts = Facts(parse_module(COPIES.format(statement)))
    found = models.find(facts)
    assert {r.name for r in found.refs} >= {"self.q"}
    assert {r.name for r in models.weight_copies(facts, found.refs)} == expected


# where a model kept on a plain object is wrapped (sweep 21b's LunarLander DDPG: `self.actor_policy = Actor(...)` in a
# plain `Network` class, the optimizer over `network.actor_policy.parameters()` in another class it is handed to): the
# `self.` attribute that holds it where it is built, as a name would (it was synced inline, "built where no name holds it")
KEPT_ON_OBJECT = ("import torch\nfrom torch import nn\n\n\nclass Policy(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "class Holder({}):\n    def __init__(self{}):\n        {}\n        self.target = Policy()\n"
        "        self.target.load_state_dict(self.policy.state_dict())\n\n\n"
        "class Learner:\n    def __init__(self, holder):\n        self.holder = holder\n"
        "        self.opt = torch.optim.Adam({}, lr=0.01)\n\n    def step(self, x):\n"
        "        loss = self.holder.policy(x).sum()\n        self.opt.zero_grad()\n        loss.backward()\n        self.opt.step()\n\n\n"
        "learner = Learner(Holder({}))\nfor step in range(3):\n    learner.step(torch.randn(8, 4))\n")
KEPT_ON_OBJECT_TESTS = {  # (base, __init__'s parameters, its first statement, the optimizer's parameters, Holder's arguments):
    # (the model's name, synced)
    "an_attribute_of_a_plain_class": (("", "", "self.policy = Policy()", "holder.policy.parameters()", ""),
                                      ("self.policy", False)),
    "an_attribute_moved_where_built": (("object", "", "self.policy = Policy().to('cpu')", "holder.policy.parameters()", ""),
                                       ("self.policy", False)),
    "an_attribute_through_a_filter": (("", "", "self.policy = Policy()",
                                       "filter(lambda p: p.requires_grad, holder.policy.parameters())", ""),
                                      ("self.policy", False)),
    "near_miss_a_part_of_a_module": (("nn.Module", "", "super().__init__(); self.policy = Policy()",
                                      "holder.policy.parameters()", ""), ("holder", True)),
    "near_miss_built_in_the_holders_construction": (("", ", policy", "self.policy = policy", "holder.policy.parameters()",
                                                     "Policy()"), ("holder.policy", True)),
}


@pytest.mark.parametrize("name", sorted(KEPT_ON_OBJECT_TESTS))
def test_a_model_a_plain_object_keeps_is_wrapped_where_its_attribute_is_built(name):
    parts, expected = KEPT_ON_OBJECT_TESTS[name]
    found = models.find(Facts(parse_module(KEPT_ON_OBJECT.format(*parts))))
    assert [(m.name, bool(m.synced)) for m in found.wrapped] == [expected] and not found.untraced


# which calls prepare data files the other processes then read (`writes.prepared_by`; built or run on each
# node's first process first): a cache, written where a test of its existence finds it missing, and read
PREPARES = ("import os\nimport pickle\nimport torch\n\n\nclass Cache:\n    def __init__(self, p):\n"
            "        if not os.path.exists(p):\n            self.x = [1.0]\n            with open(p, 'wb') as f:\n"
            "                pickle.dump(self.x, f)\n        else:\n            with open(p, 'rb') as f:\n"
            "                self.x = pickle.load(f)\n{}\n\n\n"
            "def cached(p):\n    if not os.path.isfile(p):\n        torch.save(torch.ones(2), p)\n    return torch.load(p)\n\n\n"
            "def save_once(p, x):\n    if not os.path.exists(p):\n        torch.save(x, p)\n\n\n"
            "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n{}\n")
PREPARES_TESTS = {  # (what the class's __init__ also does, the statement asked of, prepares)
    "an_object_caching_its_data": ("", "c = Cache('x.pkl')", True),
    "a_function_caching_its_data": ("", "x = cached('x.pt')", True),
    "near_miss_a_save_where_missing_never_read": ("", "save_once('m.pt', model.state_dict())", False),
    "near_miss_a_cache_in_a_loop_that_trains": ("", "for i in range(2):\n    x = cached('x.pt')\n    opt.zero_grad()\n"
                                                "    model(x).sum().backward()\n    opt.step()", False),
    "near_miss_a_cache_beside_an_optimizer": ("        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)",
                                              "c = Cache('x.pkl')", False),
}


@pytest.mark.parametrize("name", sorted(PREPARES_TESTS))
def test_a_cache_of_the_program_prepares_its_files(name):
    extra, statement, prepares = PREPARES_TESTS[name]
    facts = Facts(parse_module(PREPARES.format(extra, statement)))
    call = next(c for c in facts.calls if facts.code(c).startswith(("Cache(", "cached(", "save_once(")) and
                facts.scope(c) is facts.module)
    assert (writes.prepared_by(facts, call) is not None) is prepares


# which tensors an optimizer is given that no module holds (sweep 21c's mtnet_sinusoid_meta, decision 0171): the values of
# a dict of Parameters a meta-learner fills under computed keys and keeps as a plain attribute, as a list of them was
TENSOR_DICT_HEAD = "import torch\nimport torch.nn as nn\nfrom collections import OrderedDict\nfrom torch.nn.parameter import Parameter\n"
TENSOR_DICTS = {  # name: (code, what bare_tensors gives: the optimizer's argument, or None)
    "computed_keys": ("weights = OrderedDict()\nfor i in range(3):\n    weights[f'w{i}'] = nn.Parameter(torch.randn(4, 4))\n"
                      "    weights[f'b{i}'] = Parameter(torch.zeros(4))\nopt = torch.optim.Adam(weights.values(), lr=1e-3)\n",
                      "weights.values()"),
    "an_attribute_built_by_a_method_and_rebound_later": (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.weights = self.build()\n"
        "        self.opt = torch.optim.Adam(list(self.weights.values()))\n    def build(self):\n        w = OrderedDict()\n"
        "        w['a'] = Parameter(torch.zeros(2))\n        return w\n    def test(self):\n"
        "        self.weights = torch.load('w.pt')['weights']\n", "list(self.weights.values())"),
    "a_display_of_factories": ("params = {'a': torch.zeros(3, requires_grad=True), 'b': torch.ones(2, requires_grad=True)}\n"
                               "opt = torch.optim.SGD(params.values(), lr=0.1)\n", "params.values()"),
    "near_miss_a_modules_weight_beside": ("net = nn.Linear(2, 2)\nweights = {'w': net.weight, 'extra': nn.Parameter(torch.zeros(2))}\n"
                                          "opt = torch.optim.SGD(weights.values(), lr=0.1)\n", None),
    "near_miss_named_parameters": ("net = nn.Linear(2, 2)\nweights = dict(net.named_parameters())\n"
                                   "opt = torch.optim.SGD(weights.values(), lr=0.1)\n", None),
    "near_miss_items": ("weights = {'a': nn.Parameter(torch.zeros(2))}\nopt = torch.optim.SGD(weights.items(), lr=0.1)\n", None),
}


@pytest.mark.parametrize("name", sorted(TENSOR_DICTS))
def test_the_values_of_a_dict_of_tensors_no_module_holds_are_bare_tensors(name):
    code, expected = TENSOR_DICTS[name]
    facts = Facts(parse_module(TENSOR_DICT_HEAD + code))
    optimizer = next(c for c in facts.calls if facts.code(c.func).startswith("torch.optim."))
    found = models.bare_tensors(facts, optimizer)
    assert (None if found is None else facts.code(found)) == expected


# which classes' constructions keep their arguments as fields (`Facts.generated_fields`): those whose
# `__init__` Python or a library writes from the annotated names, so that `Trainer(model=net)` keeps `net`
FIELDS = {  # (the class's header and body, the fields its constructions store on `self`)
    "dataclass": ("from dataclasses import dataclass\n@dataclass\nclass T:\n    model: object\n    lr: float = 0.1\n",
                  ["model", "lr"]),
    "pydantic_model": ("from pydantic import BaseModel, ConfigDict\nclass T(BaseModel):\n"
                       "    model_config = ConfigDict(arbitrary_types_allowed=True)\n    model: object\n"
                       "    patience: int | None = None\n", ["model", "patience"]),
    "pydantic_model_by_module": ("import pydantic\nclass T(pydantic.BaseModel):\n    model: object\n", ["model"]),
    "attrs_define": ("from attrs import define\n@define\nclass T:\n    model: object\n", ["model"]),
    "a_pydantic_models_subclass": ("from pydantic import BaseModel\nclass Base(BaseModel):\n    model: object\n"
                                   "class T(Base):\n    head: object\n", ["model", "head"]),
    "a_dataclass_undecorated_subclass": ("from dataclasses import dataclass\n@dataclass\nclass Base:\n    model: object\n"
                                         "class T(Base):\n    note: str = ''\n", ["model"]),
    "near_miss_the_programs_own_base_model": ("class BaseModel:\n    def __init__(self, **kw):\n        pass\n"
                                              "class T(BaseModel):\n    model: object\n", []),
    "near_miss_its_own_init": ("from pydantic import BaseModel\nclass T(BaseModel):\n    model: object\n"
                               "    def __init__(self, model):\n        super().__init__(model=None)\n", []),
    "near_miss_a_plain_class": ("class T:\n    model: object = None\n", []),
}


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_the_fields_a_construction_keeps(name):
    code, fields = FIELDS[name]
    facts = Facts(parse_module(code + "net = object()\nt = T(model=net)\n"))
    assert facts.generated_fields(facts.classes["T"]) == fields
    call = next(c for c in facts.calls if facts.code(c).startswith("T("))
    assert (facts.constructed_class(call) is facts.classes["T"])
    net = facts.ref(next(a.value for a in call.args))
    assert [r.name for r in facts.kept_by_generated_init(net)] == (["self.model"] if fields else [])
