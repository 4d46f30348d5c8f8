"""wrap-model: every model an optimizer trains is wrapped in DistributedDataParallel after its set-up."""

from __future__ import annotations

import textwrap

import pytest

from tests.support.snippets import (EPOCHS, IMPORTS, LOADER, MODEL, NET, STEP, TRAIN_LOOP, assert_rewrites,
                                    lines, rewrite_tests, run, run_with_loader, script, warnings)

NAME = "wrap-model"

DDP_IMPORTS = IMPORTS + "from ddpify_runtime import device_ids\nfrom torch.nn.parallel import DistributedDataParallel\n\n"
WRAPPED = "model = DistributedDataParallel(model, device_ids=device_ids(model))\n"
OPT = "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"

PAIRS = [
    (IMPORTS + LOADER + MODEL + EPOCHS,
     DDP_IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\n" + WRAPPED + OPT + EPOCHS),
    # a frozen teacher is not wrapped
    (IMPORTS + LOADER + "teacher = torch.nn.Linear(2, 1)\n" + MODEL + EPOCHS.replace("- y)", "- teacher(x))"),
     DDP_IMPORTS + LOADER + "teacher = torch.nn.Linear(2, 1)\nmodel = torch.nn.Linear(2, 1)\n" + WRAPPED + OPT
     + EPOCHS.replace("- y)", "- teacher(x))")),
    # DataParallel is replaced by the wrap
    # (a DataParallel built right before the optimizer once lost the model it wrapped: NameError)
    (IMPORTS + LOADER + "model = torch.nn.DataParallel(torch.nn.Linear(2, 1))\n" + OPT + EPOCHS,
     DDP_IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\n" + WRAPPED + OPT + EPOCHS),
    # the comments around a DataParallel line replaced in place stay, but one that names DataParallel
    (IMPORTS + LOADER + MODEL.replace(OPT, "") + "# one copy per GPU\nmodel = torch.nn.DataParallel(model)  # all GPUs\n"
     + OPT + EPOCHS,
     DDP_IMPORTS + LOADER + MODEL.replace(OPT, "") + "# one copy per GPU\n" + WRAPPED.replace("\n", "  # all GPUs\n")
     + OPT + EPOCHS),
    (IMPORTS + LOADER + MODEL.replace(OPT, "") + "model = torch.nn.DataParallel(model)  # DataParallel: all GPUs\n"
     + OPT + EPOCHS,
     DDP_IMPORTS + LOADER + MODEL.replace(OPT, "") + WRAPPED + OPT + EPOCHS),
]

# A script that trains a model its optimizer names gets the wrap; one whose optimizer names no
# model gets a TODO: no training script is left as it is.
UNCHANGED: list = []

test_pairs, _ = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_frozen_and_loss_only_modules_are_not_wrapped():
    code, _ = run(script(model="teacher = torch.nn.Linear(2, 1)\nteacher.requires_grad_(False)\n"
                               "model = torch.nn.Linear(2, 1)"))
    assert "teacher = DistributedDataParallel" not in code
    assert "model = DistributedDataParallel(model, device_ids=device_ids(model))" in code


def test_wrap_follows_set_up_and_precedes_compile():
    code, _ = run(script(model="""
model = torch.nn.Linear(2, 1)
model.load_state_dict(torch.load("init.pt"))
raw_model = model
model = torch.compile(model)"""))
    assert code.index("raw_model = model") < code.index("model = DistributedDataParallel") \
        < code.index("model = torch.compile(model)")


def test_model_moved_under_a_condition_is_wrapped_on_every_path():
    code, _ = run(script(model="model = torch.nn.Linear(2, 1)\nif torch.cuda.is_available():\n    model = model.cuda()"))
    assert "    model = model.cuda()\nmodel = DistributedDataParallel" in code


def test_dataparallel_is_replaced_and_module_access_before_the_wrap_is_unwrapped():
    code, changes = run(script(model="""
model = torch.nn.DataParallel(torch.nn.Linear(2, 1))
if torch.cuda.is_available():
    model.cuda()
model.module.weight.requires_grad_(False)"""))
    assert "DataParallel(" not in code.replace("DistributedDataParallel(", "")
    assert "model = torch.nn.Linear(2, 1)" in code
    assert "\nmodel.weight.requires_grad_(False)\nmodel = DistributedDataParallel" in code
    assert any("DataParallel split each batch" in w for w in warnings(changes))


def test_untraceable_optimizer_gets_a_todo():
    code, changes = run(script(optimizer="optimizer = torch.optim.SGD(get_params(), lr=0.1)"))
    assert "# TODO(ddpify): could not tell which model this optimizer trains" in code
    assert "model = DistributedDataParallel(model" not in code


@pytest.mark.parametrize("flag, text", [
    ({"find_unused_parameters": True}, "device_ids=device_ids(model), find_unused_parameters=True)"),
    ({"sync_batchnorm": True}, "model = convert_sync_batchnorm(model)\nmodel = DistributedDataParallel"),
])
def test_wrap_options(flag, text):
    code, _ = run(script(), **flag)
    assert text in code


@pytest.mark.parametrize("guard", ["if torch.cuda.device_count() > 1:\n", "if torch.cuda.device_count() > 1:\n    print('GPUs')\n"])
def test_dataparallel_under_a_gpu_count_check_becomes_an_unconditional_wrap(guard):
    code, _ = run(script(model="model = torch.nn.Linear(2, 1)\n" + guard + "    model = torch.nn.DataParallel(model)"))
    assert "model = model" not in code and "torch.nn.DataParallel" not in code
    assert code.count("DistributedDataParallel(model") == 1
    assert "\nmodel = DistributedDataParallel(model, device_ids=device_ids(model))\n" in code


def test_model_named_after_an_argument_attribute_is_still_wrapped():
    code, _ = run("import argparse\nargs = argparse.ArgumentParser().parse_args()\n"
                  + script(model="model = make(args.model, pretrained=True)"))
    assert "model = DistributedDataParallel(model, device_ids=device_ids(model))" in code


def test_configure_optimizers_and_hand_written_sgd_count_as_training_the_model():
    code, _ = run(script(optimizer="optimizer = model.configure_optimizers(0.1)"))
    assert "model = DistributedDataParallel(model" in code
    code, _ = run(script(optimizer="", loop="""
for epoch in range(3):
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-0.1)
"""))
    assert "model = DistributedDataParallel(model" in code


def test_an_optimizer_over_part_of_a_model_needs_find_unused_parameters():
    code, changes = run(script(optimizer="optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.1)"))
    assert "device_ids=device_ids(model), find_unused_parameters=True)" in code
    assert any("trains only parts of `model`" in w for w in warnings(changes))


def test_two_functions_each_training_their_own_model_wrap_both():
    body = textwrap.indent(script(), "    ")
    code, _ = run("def main_a():\n" + body + "\ndef main_b():\n" + body)
    assert code.count("model = DistributedDataParallel(model, device_ids=device_ids(model))") == 2


def test_a_module_that_runs_in_training_without_an_optimizer_is_reported_not_wrapped():
    _, changes = run(script(model="teacher = torch.nn.Linear(2, 1).to('cpu')\n"
                                  "criterion = torch.nn.MSELoss().to('cpu')\nmodel = torch.nn.Linear(2, 1)",
                            loop=TRAIN_LOOP.replace("loss_fn(model(x), y)", "criterion(model(x), teacher(x))")))
    assert [w for w in warnings(changes) if "no optimizer trains it" in w] == [
        "`teacher` runs in training but no optimizer trains it: left unwrapped (right for a frozen or "
        "loss-only module; wrap it if it should learn)"]


FIT = """
def fit(model, loader, epochs):
    \"\"\"Train `model` in place.\"\"\"
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
""" + textwrap.indent(STEP, "    ")


def test_a_model_received_by_the_training_function_is_wrapped_on_entry():
    code, changes = run_with_loader(NET + FIT + """
teacher = Net()
fit(teacher, loader, 2)
student = Net()
fit(student, loader, 2)
print(teacher.size, student.size)
""")
    body = lines(code)
    start = body.index('"""Train `model` in place."""')
    assert body[start + 1] == "model = DistributedDataParallel(model, device_ids=device_ids(model))"
    assert body.count("model = DistributedDataParallel(model, device_ids=device_ids(model))") == 1
    assert "print(teacher.size, student.size)" in body, "the callers keep their bare models"
    assert "loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True))" in body
    assert not any("could not tell" in w or "no optimizer trains" in w for w in warnings(changes))
    assert any("where fit() receives it (the caller keeps the bare model)" in c.message for c in changes)


def test_the_wrap_on_entry_follows_the_set_up_and_leaves_an_evaluated_model_alone():
    code, _ = run_with_loader(NET + """
def distill(teacher, student, loader, device):
    teacher.eval()
    student.to(device)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for x, y in loader:
        with torch.no_grad():
            target = teacher(x)
        optimizer.zero_grad()
        ((student(x) - target) ** 2).mean().backward()
        optimizer.step()
    return student.size

distill(Net(), Net(), loader, "cpu")
""")
    body = lines(code)
    assert body[body.index("student.to(device)") + 1] == \
        "student = DistributedDataParallel(student, device_ids=device_ids(student))"
    assert "teacher = DistributedDataParallel" not in code
    assert "return student.module.size" in body


def test_a_model_rebound_before_the_optimizer_is_not_the_argument():
    code, _ = run_with_loader(NET + """
def fit(model, loader):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
""" + STEP + "\nfit(None, loader)\n")
    body = lines(code)
    assert body[body.index("model = Net()") + 1] == \
        "model = DistributedDataParallel(model, device_ids=device_ids(model))"


HEADS = """
class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Linear(2, 4)
        self.adv = torch.nn.Linear(4, 1)
        self.cls = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = self.trunk(x)
        return self.adv(h), self.cls(h)

model = Heads()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        {step}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


WRAP = "model = DistributedDataParallel(model, device_ids=device_ids(model){})"


def test_a_head_left_unread_builds_ddp_that_finds_unused_parameters():
    for step in ("validity, _ = model(x)\n        loss = validity.mean()",
                 "validity, logits = model(x)\n        loss = validity.mean()",
                 "loss = model(x)[0].mean()"):
        code, changes = run_with_loader(HEADS.format(step=step))
        assert WRAP.format(", find_unused_parameters=True") in code, step
        assert any("leaves outputs of `model` unread" in w for w in warnings(changes)), step


def test_every_head_read_or_only_evaluated_keeps_the_default():
    for step in ("validity, logits = model(x)\n        loss = validity.mean() + logits.mean()",
                 "with torch.no_grad():\n            _, logits = model(x)\n        loss = logits.mean()"):
        code, changes = run_with_loader(HEADS.format(step=step))
        assert WRAP.format("") in code, step
        assert not any("unread" in w for w in warnings(changes)), step


def test_a_discarded_hidden_state_is_no_head():
    code, _ = run_with_loader("""
class RNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(2, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x, state=None):
        out, state = self.rnn(x, state)
        return self.head(out), state

model = RNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        out, _ = model(x)
        optimizer.zero_grad()
        out.mean().backward()
        optimizer.step()
""")
    assert WRAP.format("") in code


PARTS = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)
        self.act = torch.nn.ReLU()
        {part}

    def forward(self, x, aux=False):
        {forward}

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
"""


@pytest.mark.parametrize("part, forward, why", [
    # shapes of real scripts (sweep): a layer built but never used, a parameter read for its device
    ("self.bn = torch.nn.BatchNorm1d(1)", "return self.act(self.fc(x))", "`self.bn` is never used in forward()"),
    ("self.dummy = torch.nn.Parameter(torch.empty(0))", "return self.fc(x.to(self.dummy.device))",
     "`self.dummy` is read in forward() for its device only"),
    ("self.aux = torch.nn.Linear(2, 1)", "out = self.fc(x)\n        if aux:\n            out = out + self.aux(x)\n"
     "        return out", "`self.aux` is used in forward() on some paths only"),
])
def test_parameters_a_forward_may_leave_without_gradient_need_find_unused_parameters(part, forward, why):
    code, changes = run_with_loader(PARTS.format(part=part, forward=forward))
    assert WRAP.format(", find_unused_parameters=True") in code
    assert any(w.startswith(why) for w in warnings(changes)), warnings(changes)


@pytest.mark.parametrize("part, forward", [
    ("self.head = torch.nn.Linear(1, 1)", "return self.head(self.act(self.fc(x)))"),  # every part used
    ("self.drop = torch.nn.Dropout(0.1)", "return self.drop(self.fc(x)) if self.training else self.fc(x)"),
    # the same sub-module on both paths (DCGAN's `data_parallel(self.main, ...)` / `self.main(x)`)
    ("self.head = torch.nn.Linear(1, 1)", "if aux:\n            return self.head(self.fc(x)) * 2\n"
     "        return self.head(self.fc(x))"),
])
def test_a_forward_that_uses_every_parameter_keeps_the_default(part, forward):
    code, changes = run_with_loader(PARTS.format(part=part, forward=forward))
    assert WRAP.format("") in code, warnings(changes)


def test_a_discarded_first_output_of_a_model_from_another_module_keeps_the_default():
    """`_, loss = model(x, y)` (nanoGPT and its kin: the loss is computed from the logits)."""
    code, _ = run_with_loader("""
from gpt import GPT
model = GPT()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")
    assert WRAP.format("") in code


def test_heads_returned_through_names_are_still_heads():
    """InfoGAN's discriminator: `validity = self.adv(h)` ... `return validity, label`."""
    code, _ = run_with_loader(HEADS.replace("        return self.adv(h), self.cls(h)",
                                            "        validity = self.adv(h)\n        label = self.cls(h)\n"
                                            "        return validity, label")
                              .format(step="validity, _ = model(x)\n        loss = validity.mean()"))
    assert WRAP.format(", find_unused_parameters=True") in code


def test_a_plain_object_holding_the_trained_modules_is_not_wrapped():
    """A real script's shape (sweep, a seq2seq chatbot): optimizers over `holder.encoder` and
    `holder.decoder` of a plain class; DDP cannot wrap `holder`, so the optimizers get TODOs."""
    code, changes = run_with_loader("""
class Holder:
    def __init__(self, encoder, decoder):
        self.encoder = encoder
        self.decoder = decoder

def train(holder):
    enc_opt = torch.optim.SGD(holder.encoder.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            enc_opt.zero_grad()
            holder.decoder(holder.encoder(x)).sum().backward()
            enc_opt.step()

train(Holder(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)))
""")
    assert "DistributedDataParallel(holder" not in code
    assert any("could not tell which model this optimizer trains" in w for w in warnings(changes))


@pytest.mark.parametrize("penalty", [
    "g = torch.autograd.grad(model(xi).sum(), xi, create_graph=True)[0]",
    "out = model(xi).sum()\n        g = torch.autograd.grad(out, xi, create_graph=True)[0]",
])
def test_a_gradient_penalty_through_the_wrapped_model_gets_a_todo(penalty):
    """A real script's shape (sweep, WGAN-GP): DDP does not support it; say so where it is."""
    code, changes = run_with_loader(f"""
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        xi = x.clone().requires_grad_(True)
        {penalty}
        optimizer.zero_grad()
        (model(x).mean() + g.norm()).backward()
        optimizer.step()
""")
    todo = next(i for i, line in enumerate(lines(code)) if "torch.autograd.grad through a model" in line)
    assert "torch.autograd.grad(" in lines(code)[todo + 1] or "torch.autograd.grad(" in lines(code)[todo + 2]


def test_a_backward_with_a_gradient_tensor_trains():
    """A real script's shape (sweep, WGAN): `validity.backward(valid)`; `turtle.backward(90)` is no training."""
    code, _ = run_with_loader("""
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        model(x).backward(torch.ones(x.size(0), 1))
        optimizer.step()
""")
    assert WRAP.format("") in code and "set_epoch(loader, epoch)" in code


# --- --strategy fsdp ------------------------------------------------------------------------------

FSDP_IMPORTS = IMPORTS + "from ddpify_runtime import shard_model\n\n"
SHARDED = "model = shard_model(model)\n"


def test_fsdp_shards_where_ddp_would_wrap():
    assert_rewrites(NAME, IMPORTS + LOADER + MODEL + EPOCHS,
                    FSDP_IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\n" + SHARDED + OPT + EPOCHS,
                    strategy="fsdp")


def test_fsdp_moves_an_optimizer_built_before_the_move_after_the_sharding_with_its_scheduler():
    before = (IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\n" + OPT
              + "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\nmodel.to('cpu')\n" + EPOCHS)
    after = (FSDP_IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\nmodel.to('cpu')\n" + SHARDED + OPT
             + "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n" + EPOCHS)
    assert_rewrites(NAME, before, after, strategy="fsdp")


RESUME = """\
if resume:
    ckpt = torch.load("last.pt")
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
"""


def test_fsdp_shards_before_the_optimizer_when_the_set_up_after_it_only_loads():
    before = IMPORTS + LOADER + MODEL + RESUME + EPOCHS
    after = FSDP_IMPORTS + LOADER + "model = torch.nn.Linear(2, 1)\n" + SHARDED + OPT + RESUME + EPOCHS
    assert_rewrites(NAME, before, after, strategy="fsdp")


def test_fsdp_optimizer_that_cannot_move_gets_a_todo():
    code, changes = run(IMPORTS + LOADER + MODEL + RESUME + "model.apply(lambda m: None)\n" + EPOCHS,
                        strategy="fsdp")
    assert "# TODO(ddpify): this optimizer is built before `model` is sharded" in code
    assert code.index("model.apply(lambda m: None)") < code.index(SHARDED)
    assert any("cannot move it safely" in w for w in warnings(changes))


def test_fsdp_report_names_the_blocks_of_the_model_class():
    net = NET.replace("self.fc = torch.nn.Linear(2, 1)",
                      "self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])\n"
                      "        self.fc = torch.nn.Linear(2, 1)")
    code = net + "model = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(2):\n" + STEP
    _, changes = run_with_loader(code, strategy="fsdp")
    assert [c.message for c in changes if c.rewrite == NAME] == [
        "`model` sharded with fully_shard (FSDP2): each block of `model.layers` (nn.ModuleList), then the root"]
    _, changes = run_with_loader(code.replace("model = Net()", "model = make_model()"), strategy="fsdp")
    assert [c.message for c in changes if c.rewrite == NAME] == [
        "`model` sharded with fully_shard (FSDP2): the runtime shards the blocks of each nn.ModuleList/nn.Sequential "
        "it finds, then the root"]
