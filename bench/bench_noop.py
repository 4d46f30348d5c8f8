"""A LibCST codemod that changes nothing: the peer baseline of bench axis 3.

``python -m libcst.tool codemod -x bench_noop.NoOpCommand --no-format -j 1 FILE`` (with bench/ on
PYTHONPATH, from a folder holding a ``.libcst.codemod.yaml``) times LibCST's own codemod
runner: interpreter, ``libcst.tool`` and codemod imports, parse, an empty transform, codegen.
"""

import libcst as cst
from libcst.codemod import CodemodCommand


class NoOpCommand(CodemodCommand):
    DESCRIPTION = "Returns the module unchanged (benchmark baseline)."

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        return tree
