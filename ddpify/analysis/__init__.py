"""What trains, what feeds it and what evaluates: the questions rewrites and rules ask."""
