"""SCALE-Sim 3's memory model (placeholder while it is written)."""


def evaluate(layer, device, order, scheme, parts, tiling, dy_once):
    raise NotImplementedError
