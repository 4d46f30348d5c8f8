"""unwrap-model: custom attributes and state dicts of wrapped models go through `.module`."""

from __future__ import annotations

import pytest

from ddpify.convert import Options, convert

from tests.support.snippets import (EPOCHS, IMPORTS, LOADER, MODEL, NET, STEP, lines, only, rewrite_tests,
                                    run, run_with_loader, script)

NAME = "unwrap-model"

SAVE = "torch.save(model.state_dict(), 'm.pt')\nprint(model.weight, model.training)\n"
DDP_IMPORTS = IMPORTS + "from ddpify_runtime import device_ids\nfrom torch.nn.parallel import DistributedDataParallel\n\n"
WRAPPED = "model = torch.nn.Linear(2, 1)\nmodel = DistributedDataParallel(model, device_ids=device_ids(model))\n" \
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
ALSO = frozenset({"wrap-model"})  # `.module` only where wrap-model wrapped the model

PAIRS = [
    (IMPORTS + LOADER + MODEL + EPOCHS + SAVE,
     DDP_IMPORTS + LOADER + WRAPPED + EPOCHS
     + "torch.save(model.module.state_dict(), 'm.pt')\nprint(model.module.weight, model.training)\n"),
]

UNCHANGED = [
    # nn.Module's own API is answered by DDP itself: only the wrap itself is added
    IMPORTS + LOADER + MODEL + EPOCHS + "model.eval()\nprint(model.training, list(model.parameters()))\n",
]


def test_without_wrap_model_nothing_goes_through_module():
    """With wrap-model not selected (--only unwrap-model, --skip wrap-model) no model is wrapped."""
    code = IMPORTS + LOADER + MODEL + EPOCHS + SAVE
    assert only(NAME, code) == code
    assert ".module" not in convert(code, Options(skip=frozenset({"wrap-model"}))).code


test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED, also=ALSO)


def test_custom_attributes_and_state_dicts_go_through_module_but_module_api_does_not():
    code, _ = run(script(tail="""
        model.train()
        print(model.custom_scale, model.parameters())
        torch.save(model.state_dict(), "m.pt")
        model = torch.nn.Linear(2, 1)
        model.load_state_dict(torch.load("m.pt"))
        """))
    assert "model.module.custom_scale" in code and "model.train()" in code and "model.parameters()" in code
    assert "model.module.state_dict()" in code
    assert "model.load_state_dict(torch.load" in code, "a model rebound after training is a plain module"


TRAIN = NET + """
def generate(net):
    return net.size

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
""" + STEP


def test_a_proven_wrapper_goes_through_module():
    code, _ = run_with_loader(TRAIN + "    print(generate(model), model.size)\ntorch.save(model, 'm.pt')\n")
    assert "return net.module.size" in code
    assert "print(generate(model), model.module.size)" in code
    assert "torch.save(model.module, tmp_path)" in code
    assert "unwrap" not in code


def test_a_name_that_may_hold_the_bare_model_goes_through_unwrap():
    code, _ = run_with_loader(TRAIN + """
    print(generate(model))
    if epoch == 1:
        model = torch.load("best.pt")
    print(model.size)
model = model.module
print(model.size)
print(generate(Net()))
""")
    body = lines(code)
    assert body.count("print(unwrap(model).size)") == 2, "rebound on some paths, and to .module"
    assert "return unwrap(net).size" in body, "some callers pass a bare model"
    assert "from ddpify_runtime import" in code and "unwrap" in code.split("\n", 4)[3]


def test_a_name_rebound_to_a_fresh_model_is_left_as_it_is():
    code, _ = run_with_loader(TRAIN + "model = torch.load('best.pt')\nprint(model.size)\n")
    assert "print(model.size)" in lines(code)


def test_a_function_that_returns_the_model_it_trains_keeps_the_wrapper():
    code, _ = run_with_loader(NET + """
def train(model):
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = train(model)
print(model.size)
""")
    assert "print(model.module.size)" in code


def test_a_dataparallel_script_loads_old_checkpoints_without_module_prefix():
    code, _ = run_with_loader(NET + """
model = torch.nn.DataParallel(Net())
model.load_state_dict(torch.load("old.pt"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
""" + STEP)
    assert 'model.load_state_dict(without_module_prefix(torch.load("old.pt", map_location=local_device())))' in code


# --- --strategy fsdp: no .module; state dicts through the full-state-dict helpers -----------------

FSDP_TAIL = """\
hidden = model.init_hidden(2)
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "last.pt")
ckpt = torch.load("last.pt")
model.load_state_dict(ckpt["model"], strict=False)
opt.load_state_dict(ckpt["opt"])
"""


def test_fsdp_keeps_custom_attributes_and_gathers_and_loads_full_state_dicts():
    code = only(NAME, IMPORTS + LOADER + MODEL + EPOCHS + FSDP_TAIL, ALSO, strategy="fsdp")
    assert code.endswith("""\
hidden = model.init_hidden(2)
torch.save({"model": full_state_dict(model), "opt": full_optimizer_state_dict(model, opt)}, "last.pt")
ckpt = torch.load("last.pt")
load_full_state_dict(model, ckpt["model"], strict=False)
load_full_optimizer_state_dict(model, opt, ckpt["opt"])
""")
    assert "from ddpify_runtime import full_optimizer_state_dict, full_state_dict, load_full_optimizer_state_dict, " \
        "load_full_state_dict, shard_model\n" in code


def test_fsdp_drops_the_module_of_a_dataparallel_script_and_todos_a_pickled_model():
    before = IMPORTS + LOADER + "model = torch.nn.DataParallel(torch.nn.Linear(2, 1))\n" \
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + EPOCHS \
        + "print(model.module.weight)\ntorch.save(model, 'whole.pt')\n"
    code = only(NAME, before, ALSO, strategy="fsdp")
    assert "print(model.weight)\n" in code
    assert "# TODO(ddpify): this pickles the sharded `model`" in code


def test_fsdp_a_model_sharded_by_the_function_it_was_passed_to_is_gathered_by_the_caller():
    before = IMPORTS + LOADER + """\
def fit(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


student = torch.nn.Linear(2, 1)
init = student.state_dict()
fit(student, loader)
final = student.state_dict()
"""
    code = only(NAME, before, ALSO, strategy="fsdp")
    assert "init = student.state_dict()\n" in code  # before the call: not sharded yet
    assert "final = full_state_dict(student)\n" in code


def test_fsdp_an_alias_taken_before_the_sharding_is_the_sharded_model_too():
    code = only(NAME, IMPORTS + LOADER + MODEL.replace("opt =", "raw_model = model\nopt =") + EPOCHS
                + "torch.save(raw_model.state_dict(), 'm.pt')\n", ALSO, strategy="fsdp")
    assert code.endswith("torch.save(full_state_dict(raw_model), 'm.pt')\n")
