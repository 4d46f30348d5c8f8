"""A stand-in for yacs (not installed here): ``yacs.config.CfgNode``."""
