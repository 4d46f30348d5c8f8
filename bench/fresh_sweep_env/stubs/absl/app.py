"""absl.app.run: parses the command line into FLAGS, then calls main(argv) and exits with its result."""

import sys

from absl import flags


def run(main, argv=None):
    rest = flags.FLAGS(sys.argv if argv is None else argv)
    sys.exit(main(rest))
