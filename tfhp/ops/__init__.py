"""Low-level graph primitives: staging, record input, batching, all-reduce, packing, barriers.

Modules here import only TensorFlow (and each other), never the rest of tfhp.
"""
