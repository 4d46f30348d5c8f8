"""A stand-in for fvcore (not installed here): ``fvcore.common.config.CfgNode``."""
