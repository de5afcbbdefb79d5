"""The applications on top of the scheduler: the simulator (simulator.py) and what
asks it questions (capacity.py: how many more replicas fit; optimize.py: batch
placement against greedy), over the in-memory cluster (memory.py) that stands in
for the API server, with the writers and the resourceclaim controller that play
the API's and the controllers' parts (claim_writer, claim_controller,
volume_writer, workload_pod_group_writer)."""
