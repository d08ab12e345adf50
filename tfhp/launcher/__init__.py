"""The processes around a job's tasks, on one machine: what `python -m tfhp.launch` and the
studies use. Imports no TensorFlow, and nothing of the task runtime (`tfhp.cluster`).

  plan.py          a job's tasks, free loopback ports, command lines and bounds
  supervisor.py    starts the tasks, relays their output, watches and ends them
  local_job.py     a whole job on this machine, on loopback or emulated links; its summary
  figures.py       the job's figures from its workers' results, and its link report
  hand_started.py  tasks started one by one, as on separate machines (fault studies)
  links.py         emulated links: a network namespace and a shaped NIC per task
  private_net.py   a loopback job's own network namespace: only its tasks reach its servers
  link_probe.py    measures what an emulated link carries
  link_traffic.py  bytes each NIC moved in the timed steps, sampled while a job runs
Importing this package imports nothing: each module is imported by name.
"""
