"""The API worker: a process of its own that writes what `kubesched run` decided.

The scheduling process keeps its core for the scheduling cycle; its binds, events
and PodScheduled conditions cross a socket to this worker as small msgpack frames
(frames.py), and the worker makes the HTTP requests (worker.py). The scheduling
process supervises it (supervisor.py): a worker that dies is restarted at once and
its binds in flight fail back to the scheduler, which retries their pods.
"""
