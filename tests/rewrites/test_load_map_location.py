"""load-map-location: `torch.load` without `map_location` maps to this process's device."""

from __future__ import annotations

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, rewrite_tests

NAME = "load-map-location"

LOADS = 'model.load_state_dict(torch.load("init.pt"))\n'

PAIRS = [
    (IMPORTS + LOADER + MODEL + LOADS + EPOCHS,
     IMPORTS + "from ddpify_runtime import local_device\n\n" + LOADER + MODEL
     + 'model.load_state_dict(torch.load("init.pt", map_location=local_device()))\n' + EPOCHS),
    # weights_only is never touched
    (IMPORTS + LOADER + MODEL + 'state = torch.load("s.pt", weights_only=True)\n' + EPOCHS,
     IMPORTS + "from ddpify_runtime import local_device\n\n" + LOADER + MODEL
     + 'state = torch.load("s.pt", weights_only=True, map_location=local_device())\n' + EPOCHS),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + 'state = torch.load("s.pt", map_location="cpu")\n' + EPOCHS,  # kept as written
    IMPORTS + LOADER + MODEL + 'state = torch.load("s.pt", map_location="cuda")\n' + EPOCHS,
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)



