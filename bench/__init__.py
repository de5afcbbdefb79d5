"""kubesched vs kube-scheduler benchmarks (`make bench`, `python -m bench`).

Workloads modelled on kube-scheduler's scheduler_perf (``workloads``), run in
two modes: in-process through the simulator (``inprocess``) and end to end on a
real kube-apiserver, kubesched and kube-scheduler one after the other
(``e2e``). ``run.run_bench`` is the Python API; docs/develop/benchmarks.md the figures.
"""
