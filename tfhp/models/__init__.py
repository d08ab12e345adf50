"""CNN models built with `tfhp.models.layers.LayerBuilder`; `registry` maps names to them."""
