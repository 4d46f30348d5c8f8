"""What ddpify writes: edits against the original tree, built nodes and the report."""
