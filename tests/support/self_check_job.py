"""Run several self-check programs in one launched process (importing torch once per launch).

    torchrun ... self_check_job.py OUT NAME[:MODE] ...

Each NAME is a program file NAME.py in the working directory, run as ``__main__`` with a fresh
self-check (``DDPIFY_VERIFY=MODE`` when given, else the launch's setting) and
``DDPIFY_VERIFY_JSON=OUT/NAME.json``; after a program that raised nothing, the exit checks
that atexit would run. Each process writes ``OUT/NAME.rank<R>.json``: the program's captured
stdout and stderr, and the class name and findings of what it raised. The last program's exit
checks are the real ones: the job ends after it, and the runtime's exit hook runs them (their
block goes to the real stderr, and under strict a finding there is the job's exit status).
"""

import contextlib
import io
import json
import os
import runpy
import sys

import torch.distributed as dist

import ddpify_runtime as rt


def main() -> None:
    out, names = sys.argv[1], sys.argv[2:]
    launch_mode = os.environ.get("DDPIFY_VERIFY")
    for number, entry in enumerate(names, 1):
        name, _, mode = entry.partition(":")
        os.environ.pop("DDPIFY_VERIFY", None)
        if mode or launch_mode is not None:
            os.environ["DDPIFY_VERIFY"] = mode or launch_mode
        os.environ["DDPIFY_VERIFY_JSON"] = os.path.join(out, f"{name}.json")
        if dist.is_initialized():  # the first program's init_distributed_mode() installs it
            if rt._STATE.self_check is not None:
                rt._STATE.self_check.remove()
            rt._install_self_check(rt._verify_mode(os.environ, dist.get_world_size()), 60)
        stdout, stderr, error = io.StringIO(), io.StringIO(), None
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                runpy.run_path(f"{name}.py", run_name="__main__")
                if number < len(names):
                    rt._check_at_exit()  # what atexit runs at the end of a program
            except rt.SelfCheckError as raised:
                error = {"class": type(raised).__name__,
                         "findings": [f.as_json() for f in raised.findings]}
        rank = dist.get_rank()
        with open(os.path.join(out, f"{name}.rank{rank}.json"), "w") as f:
            json.dump({"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "error": error}, f)
        rt.barrier()


if __name__ == "__main__":
    main()
