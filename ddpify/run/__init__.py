"""`ddpify run`: the launcher and the job's log as the user sees it."""
