"""The cluster state the cache owns, as the plugins read it: the node table
(`node_table`: every node's allocatable, requested and pods as columns), the pod
index and its affinity terms (`pod_index`), the storage listers (`storage`), the
DRA manager (`dra`), the nominated pods a pod's filters count (`nominated`), the
Workload API's pod-group states (`podgroup_states`), and how the stores announce
their changes (`event_source`)."""
