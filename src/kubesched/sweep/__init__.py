"""`kubesched sweep`: many simulations of one cluster, one per variation of its node
pools, scheduler configuration, workload scale and feature gates, on local worker
processes or a Ray cluster."""
