"""Multi-process jobs on TensorFlow's gRPC runtime: every task of a job, and what keeps it bounded.

  roles.py       runs this process's task: dispatches to its role
  task.py        what every role shares: the roles of a cluster, starting a task (server,
                 published state, peer watch, watchdog), server config, bounds
  worker.py      a between-graph worker: graph, session, steps, result
  serve.py       a task that only serves (ps tasks, in-graph workers other than the client)
  client.py      the in-graph client
  launch (tfhp.launch)  a whole job on one machine; tasks.py: tasks started one by one (faults)
  figures.py     the job's figures from its workers' results, and its link report
  servers.py     a task's server, waiting for peers, the ps-exit protocol
  sessions.py    a task's session: hooks, a fast bounded start, no recovery
  liveness.py    progress counters and descriptions every task publishes; the peer watch
  watchdog.py    the last bound behind every wait; ends the task naming the cause
  control.py     the job's end step and stop value
  signals.py     SIGTERM/SIGINT taken by a thread of their own
  agreement.py   the settings every task must share
  links.py       emulated links: a namespace and a shaped NIC per task; link_probe.py measures
  tf_config.py   TF_CONFIG read into cluster fields (pure Python)
  errors.py      ClusterError, PeerLost (pure Python)
It does not own how gradients meet (`tfhp.replication`). docs/faults.md describes the failure
behaviour. Importing this package imports nothing: each module is imported by name.
"""
