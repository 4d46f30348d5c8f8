"""What ddpify reads: files and folders, notebooks, programs of several modules."""
