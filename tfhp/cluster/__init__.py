"""Multi-process jobs on TensorFlow's gRPC runtime: cluster description, servers, sessions.

Owns: reading a cluster from TF_CONFIG (`tf_config`, pure Python so the command line can check it
before importing TensorFlow), starting a task's `tf.train.Server` and waiting for peers with a
bound (`servers`), the ps-exit protocol (`servers.serve_until_done`), and creating sessions whose
every wait is bounded and names what it waits for (`sessions`). It does not own what a worker
trains (`tfhp.distributed`, `tfhp.controller`) nor how gradients meet (`tfhp.replication`).

Importing this package imports nothing: each module is imported by name.
"""
