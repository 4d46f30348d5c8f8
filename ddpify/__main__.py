"""`python -m ddpify` runs the command line."""

from ddpify.cli import main

main()
