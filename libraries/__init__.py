"""Component libraries of mbmodel (``mbmodel.libraries.<domain>``): the physics lives here,
the language and compiler in :mod:`mbmodel` know none."""
