"""Low-level graph primitives: staging, record input, batching, all-reduce, packing, barriers.

  staging.py           StagingArea put/get pairs, checked
  record_input.py      RecordInput: shuffled record batches
  batching.py          split, parallel_stack
  allreduce.py, ring.py, collective.py, nccl.py   the all-reduce algorithms
  allgather.py         ring, star and hierarchical all-gathers of payloads that cannot be summed
  allreduce_spec.py, allreduce_builder.py   the --all_reduce_spec syntax, its table, builders
  packing.py           small gradients packed into few tensors
  barriers.py          cross-task token queues
  in_place.py          updates in place: each gradient waits for its variable's readers
  session_hooks.py     ops run as each session starts; loops beside the step
  scopes.py            the stage name scopes the analyser reads

Modules here import only TensorFlow (and each other), never the rest of tfhp.
"""
