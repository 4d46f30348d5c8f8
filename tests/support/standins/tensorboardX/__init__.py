"""A stand-in for tensorboardX's SummaryWriter, on the probe's PYTHONPATH (tensorboard is not
installed here): like the real one it makes its folder at construction, one per process by
default (`runs/<time>_<host>_<pid>`), and appends what it logs to an events file there, so a
test can count which processes made a writer and wrote through it."""

import os
import socket
import time


class SummaryWriter:
    def __init__(self, log_dir=None, **kwargs):
        self.log_dir = log_dir or os.path.join("runs", f"{time.strftime('%b%d_%H-%M-%S')}_{socket.gethostname()}"
                                                       f"_{os.getpid()}")
        os.makedirs(self.log_dir, exist_ok=True)
        self._events = open(os.path.join(self.log_dir, f"events.out.{os.getpid()}"), "a")

    def add_scalar(self, tag, value, global_step=None):
        self._events.write(f"{tag} {value} {global_step}\n")
        self._events.flush()

    def flush(self):
        self._events.flush()

    def close(self):
        self._events.close()
