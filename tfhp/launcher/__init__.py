"""The processes around a job's tasks, on one machine: what `python -m tfhp.launch` and the
studies use. Imports no TensorFlow, and nothing of the task runtime (`tfhp.cluster`).

  plan.py          a job's tasks, free loopback ports, command lines and bounds
  supervisor.py    starts the tasks, relays their output, watches and ends them
  local_job.py     a whole job on this machine, on loopback or emulated links; its summary
  figures.py       the job's figures from its workers' results, and its link report
  hand_started.py  tasks started one by one, as on separate machines (fault studies)
  links.py         emulated links: a network namespace and a shaped NIC per task
  link_config.py   what links are set with: their options (one table), rates and sizes parsed
  private_net.py   a loopback job's own network namespace: only its tasks reach its servers
  link_probe.py    measures what an emulated link carries
  link_traffic.py  bytes each NIC moved in the timed steps, sampled while a job runs
  cpu_load.py      how busy the cores were in the timed steps; the warning when tasks outnumber
                   them
  recovery.py      a job restarted from the chief's checkpoint after a fault (--max_restarts)
  progress_log.py  the chief's 'step loss' lines: how far a job got, its loss curve
  faults.py        faults injected into a running job: kill, pause, link down, slow link
  chaos.py         random faults for a bounded time; the watch of what recovery must keep
  background.py    a loop in a thread beside a running job
  forked_task.py   a task started as a fork of the forkserver, behind Popen's interface
Importing this package imports nothing: each module is imported by name.
"""
