"""launcher-arg: `--local-rank`/`--local_rank` on the script's argparse parser."""

from __future__ import annotations

import textwrap

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, rewrite_tests, run, script

NAME = "launcher-arg"

PARSER = "import argparse\n" + IMPORTS + "parser = argparse.ArgumentParser()\n"
REST = "args = parser.parse_args()\n" + LOADER + MODEL + EPOCHS

PAIRS = [
    (PARSER + "parser.add_argument('--lr', type=float, default=0.1)\n" + REST,
     PARSER + "parser.add_argument('--lr', type=float, default=0.1)\n"
     'parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")\n'
     + REST),
    # one spelling known: the other joins it under the same dest
    (PARSER + "parser.add_argument('--local_rank', type=int, default=-1)\n" + REST,
     PARSER + "parser.add_argument('--local_rank', type=int, default=-1)\n"
     'parser.add_argument("--local-rank", dest="local_rank", type=int, help="set by torch.distributed.launch")\n'
     + REST),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + EPOCHS,  # no argparse: torchrun needs no argument
    PARSER + "parser.add_argument('--local-rank', '--local_rank', type=int)\n" + REST,  # both spellings known
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_argparse_gets_both_launcher_spellings_and_init_follows_parsing():
    body = "parser = argparse.ArgumentParser()\nargs = parser.parse_args()\n" + script()
    code, _ = run("import argparse\ndef main():\n" + textwrap.indent(body, "    ")
                  + "\nif __name__ == '__main__':\n    main()\n")
    assert '"--local-rank", "--local_rank"' in code
    assert "args = parser.parse_args()\n    init_distributed_mode()\n" in code


def test_a_parser_with_one_spelling_gets_the_other_under_the_same_dest():
    code, _ = run("import argparse\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"
                  "args = p.parse_args()\n" + script())
    assert 'p.add_argument("--local-rank", dest="local_rank"' in code


def test_a_parser_built_by_a_helper_gets_the_launcher_argument_and_init_follows_parsing():
    code, _ = run("import argparse\ndef get_parser():\n    parser = argparse.ArgumentParser()\n    return parser\n"
                  "opts = get_parser().parse_args()\n" + script())
    assert '    parser.add_argument("--local-rank", "--local_rank"' in code
    assert "opts = get_parser().parse_args()\ninit_distributed_mode()\n" in code
