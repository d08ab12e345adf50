"""The runtime of one task of a multi-process job on TensorFlow's gRPC runtime: its life from
start to exit, and what keeps every wait bounded. The processes around the tasks (starting,
watching, emulated links) are the launcher's (`tfhp.launcher`); neither imports the other.

  roles.py         runs this process's task: dispatches to its role
  task.py          what every role shares: the roles of a cluster, starting a task (server,
                   published state, peer watch, watchdog), server config, bounds
  worker.py        a between-graph worker: graph, session, steps, result
  bounded_steps.py a worker's steps and its handshake with the ps tasks, each bounded and
                   named on failure
  tracing.py       a worker's traced step (--trace_file): who writes what, the runs beside it
  progress.py      a worker's step counting: warm-up, timed steps, the common end (pure Python)
  serving_task.py  a task that only serves (ps tasks, in-graph workers other than the client)
  client.py        the in-graph client
  container_client.py  a worker that is a client of its own, in a resource container
  inference.py     a between-graph worker timing --forward_only on the ps tasks' variables
  events.py        the cluster events a task sees, a line each and in its result
  servers.py       a task's server, waiting for peers, the ps-exit protocol
  task_session.py  a task's session: hooks, a fast bounded start, no recovery
  liveness.py      progress counters and descriptions every task publishes; the peer watch
  watchdog.py      the last bound behind every wait; ends the task naming the cause
  control.py       the job's end step and stop value
  signals.py       SIGTERM/SIGINT taken by a thread of their own
  agreement.py     the settings every task must share
  errors.py        ClusterError, PeerLost (pure Python)
It does not own how gradients meet (`tfhp.replication`). docs/faults.md describes the failure
behaviour. Importing this package imports nothing: each module is imported by name.
"""
