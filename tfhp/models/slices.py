"""Layer slices: a dense layer's output units split into column slices, each a variable of its
own with a matmul of its own (P3's parameter slicing, Jayarajan et al., SysML'19).

A layer's gradient exists only once the layer's whole backward matmul has run, and the next
forward pass needs its whole weight. Sliced, slice k's gradient exists once slice k's matmul
has run, so it can leave while the other slices compute, and the next forward pass can start on
the slices already pulled. The function is the same: the slices' outputs are concatenated.

Pure Python: the layer builder (`tfhp.models.layers`) and the compute profile of an emulated
model (`tfhp.emulation.profile`) cut a layer the same way, so both name the same variables.
"""


def widths(units, unit_bytes, slice_bytes):
    """The widths of the column slices of a layer of `units` outputs whose weights take
    `unit_bytes` per output: the fewest slices of at most slice_bytes each (one unit at least),
    as equal as can be, wider ones first; [units] when slice_bytes is 0 or the layer fits."""
    if not slice_bytes or units * unit_bytes <= slice_bytes:
        return [units]
    count = -(-units // max(1, slice_bytes // unit_bytes))
    base, extra = divmod(units, count)
    return [base + 1] * extra + [base] * (count - extra)


def name(index):
    """The variable scope of slice `index` within its layer's: 'slice3'."""
    return 'slice%d' % index


def scope(layer, index):
    """The variable scope of a layer's slice: 'dense0/slice3'."""
    return '%s/%s' % (layer, name(index))
