"""The rules of `ddpify check`, one module per topic; importing one registers its rules."""
