import sys

from kubesched.kube.api_worker.worker import main

sys.exit(main(sys.argv[1:]))
