"""fvcore.common: its config node (``config.CfgNode``)."""
